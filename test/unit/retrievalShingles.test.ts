import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { jaccardAtLeast, overlap, shingles } from '../../src/knowledge/retrieval/shingles';
import { stemText } from '../../src/knowledge/retrieval/retrievalTerms';
import { corpusPath } from '../support/corpora';

/** The definition: runs of three word ids as text, compared as plain sets. */
function plainShingles(words: Int32Array): Set<string> {
  if (words.length < 3) return new Set(words.length === 0 ? [] : [words.join(',')]);
  const runs = new Set<string>();
  for (let i = 0; i + 3 <= words.length; i++) runs.add(`${words[i]},${words[i + 1]},${words[i + 2]}`);
  return runs;
}
function plainShared(a: Set<string>, b: Set<string>): number {
  return [...a].filter((s) => b.has(s)).length;
}

describe('near-duplicate shingles', () => {
  // SRD pages cut into paragraphs, each beside a copy with a few words changed: pairs near and far from the threshold.
  const srd = corpusPath('dnd-srd-5.1', 'Gameplay');
  const paragraphs = (fs.readdirSync(srd, { recursive: true, encoding: 'utf8' }) as string[])
    .filter((f) => f.endsWith('.md'))
    .slice(0, 40)
    .flatMap((f) => fs.readFileSync(path.join(srd, f), 'utf8').split(/\n\s*\n/))
    .filter((p) => p.trim() !== '')
    .slice(0, 120);
  const texts = paragraphs.flatMap((p, i) => [p, p.replace(/\b(the|a|of)\b/g, (w, _g, at: number) => (at % (2 + (i % 5)) === 0 ? 'some' : w))]);
  const words = [
    ...texts.map((t) => stemText(t).words),
    // Word ids past the range a shingle packs into one number, alone and among small ones; and very short texts.
    Int32Array.from([1, 2, 3, 200_000, 4, 5, 6]),
    Int32Array.from([1, 2, 3, 200_000, 4, 5, 7]),
    Int32Array.from([200_000, 1, 2]),
    Int32Array.from([200_000, 1, 3]),
    Int32Array.from([9]),
    Int32Array.from([9]),
    Int32Array.from([9, 10]),
    new Int32Array(0),
  ];

  it('answers every pair as the plain set definition does, at thresholds around the near-duplicate one', () => {
    const built = words.map((w) => ({ fast: shingles(w), plain: plainShingles(w) }));
    let near = 0;
    for (let i = 0; i < built.length; i++) {
      for (let j = Math.max(0, i - 6); j < built.length && j <= i + 6; j++) {
        const [a, b] = [built[i]!, built[j]!];
        const shared = plainShared(a.plain, b.plain);
        assert.equal(overlap(a.fast, b.fast), shared);
        assert.equal(a.fast.size, a.plain.size);
        const jaccard = a.plain.size + b.plain.size === 0 ? 0 : shared / (a.plain.size + b.plain.size - shared);
        if (jaccard >= 0.5 && i !== j) near++;
        for (const threshold of [0.5, 0.7, 0.8, 0.9, 1]) {
          assert.equal(jaccardAtLeast(a.fast, b.fast, threshold), a.plain.size > 0 && b.plain.size > 0 && jaccard >= threshold, `pair ${i}, ${j} at ${threshold}: Jaccard ${jaccard}`);
        }
      }
    }
    assert.ok(near > 20, `only ${near} near pairs: the test must meet the threshold from both sides`);
  });
});
