/**
 * Near-duplicate detection by word shingles: a text's runs of three words, compared as sets (Jaccard), with a
 * bit sketch that rules most pairs out before their shingles are compared.
 */

import { keptFloat64, keptUint32 } from './keptArrays';
import { tokenize } from './retrievalTerms';

/** Three word ids below this make one number exactly (3 × 17 bits): a shingle is then compared as a number. */
const SHINGLE_BASE = 1 << 17;

/** 32-bit words of a shingle set's sketch: 1,024 bits. */
const SKETCH_WORDS = 32;

/** A text's runs of three words (its words, when fewer), by word id (see wordId), each once. */
export interface ShingleSet {
  /**
   * Runs of three ids below SHINGLE_BASE as one number each, ascending: a typed array holds them without
   * an object apiece, and two sets meet in one walk.
   */
  numbers: Float64Array;
  /** The rest as text: a run with an id past SHINGLE_BASE, or a text of fewer than three words (both rare). */
  texts: ReadonlySet<string>;
  size: number;
  /**
   * A bit per shingle, by its words' hash: a bit one sketch holds and the other lacks stands for a shingle
   * only the first set holds, so two sketches bound what two sets can share before they are compared.
   */
  sketch: Uint32Array;
}

const NO_TEXTS: ReadonlySet<string> = new Set();

/** `kept` for a set kept across turns (see keptArrays.ts). */
export function shingles(words: Int32Array, kept = false): ShingleSet {
  const sketch = kept ? keptUint32(SKETCH_WORDS) : new Uint32Array(SKETCH_WORDS);
  const mark = (a: number, b: number, c: number) => {
    let h = Math.imul(a, 0x9e3779b1) ^ Math.imul(b + 1, 0x85ebca6b) ^ Math.imul(c + 2, 0xc2b2ae35);
    h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d);
    h ^= h >>> 13;
    sketch[(h >>> 5) & (SKETCH_WORDS - 1)]! |= 1 << (h & 31);
  };
  if (words.length < 3) {
    if (words.length === 0) return { numbers: new Float64Array(0), texts: NO_TEXTS, size: 0, sketch };
    mark(words[0]!, words[1] ?? -1, -1);
    return { numbers: new Float64Array(0), texts: new Set([words.join(',')]), size: 1, sketch };
  }
  const runs = new Float64Array(words.length - 2);
  let count = 0;
  let texts: Set<string> | undefined;
  for (let i = 0; i + 3 <= words.length; i++) {
    const a = words[i]!;
    const b = words[i + 1]!;
    const c = words[i + 2]!;
    if (a < SHINGLE_BASE && b < SHINGLE_BASE && c < SHINGLE_BASE) runs[count++] = (a * SHINGLE_BASE + b) * SHINGLE_BASE + c;
    else (texts ??= new Set()).add(`${a},${b},${c}`);
    mark(a, b, c);
  }
  const sorted = runs.subarray(0, count).sort();
  let distinct = 0;
  for (let i = 0; i < count; i++) if (distinct === 0 || sorted[i] !== sorted[distinct - 1]) sorted[distinct++] = sorted[i]!;
  const numbers = kept ? keptFloat64(distinct) : new Float64Array(distinct);
  numbers.set(sorted.subarray(0, distinct));
  return { numbers, texts: texts ?? NO_TEXTS, size: distinct + (texts?.size ?? 0), sketch };
}

/** How many shingles two sets share. */
export function overlap(x: ShingleSet, y: ShingleSet): number {
  let shared = 0;
  walkShared(x, y, (found) => {
    if (found) shared++;
    return true;
  });
  return shared;
}

function bitCount(v: number): number {
  v -= (v >>> 1) & 0x55555555;
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return Math.imul((v + (v >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}

/**
 * Whether two shingle sets' Jaccard similarity reaches `threshold`. It is at most the smaller size over the
 * larger, and at most what their sketches leave them to share, so sets that far apart are answered without
 * being compared; and the comparison stops as soon as the shingles left could no longer reach it.
 */
export function jaccardAtLeast(x: ShingleSet, y: ShingleSet, threshold: number): boolean {
  const small = Math.min(x.size, y.size);
  const large = Math.max(x.size, y.size);
  if (large === 0 || small / large < threshold) return false;
  // The sketches are read a quarter at a time: bits counted so far already bound what the sets can share,
  // and most pairs are ruled out by the first quarter.
  let onlyX = 0;
  let onlyY = 0;
  for (let i = 0; i < SKETCH_WORDS; ) {
    for (const end = i + SKETCH_WORDS / 4; i < end; i++) {
      onlyX += bitCount(x.sketch[i]! & ~y.sketch[i]!);
      onlyY += bitCount(y.sketch[i]! & ~x.sketch[i]!);
    }
    const sharedAtMost = Math.min(x.size - onlyX, y.size - onlyY);
    if (sharedAtMost / (x.size + y.size - sharedAtMost) < threshold) return false;
  }
  let shared = 0;
  const reached = walkShared(x, y, (found, left) => {
    if (found) shared++;
    // Even if every shingle left were shared, the similarity would stay below the threshold.
    return found || (shared + left) / (x.size + y.size - shared - left) >= threshold;
  });
  return reached && shared / (x.size + y.size - shared) >= threshold;
}

/**
 * Asks `step` of every shingle of the smaller set whether the other holds it, with how many of the smaller
 * set's shingles are still to come; stops, false, the first time `step` says so.
 */
function walkShared(x: ShingleSet, y: ShingleSet, step: (found: boolean, left: number) => boolean): boolean {
  const [small, large] = x.size <= y.size ? [x, y] : [y, x];
  let left = small.size;
  const mine = small.numbers;
  const theirs = large.numbers;
  let j = 0;
  for (let i = 0; i < mine.length; i++) {
    const shingle = mine[i]!;
    while (j < theirs.length && theirs[j]! < shingle) j++;
    if (!step(j < theirs.length && theirs[j] === shingle, --left)) return false;
  }
  for (const shingle of small.texts) if (!step(large.texts.has(shingle), --left)) return false;
  return true;
}

/**
 * A text's runs of `length` consecutive words as tokenize reads them, each joined into one string: text
 * copied word for word matches whatever case, punctuation or line breaks it was given.
 */
export function wordRuns(text: string, length: number): string[] {
  const words = tokenize(text);
  const runs: string[] = [];
  for (let i = 0; i + length <= words.length; i++) runs.push(words.slice(i, i + length).join(' '));
  return runs;
}
