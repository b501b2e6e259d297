/**
 * Porter's (1980) suffix-stripping stemmer, the algorithm of FTS5's `porter` tokenizer, so that the
 * words retrieval matches in a passage are the words the index found it by ("oldest" and "old" differ,
 * "hunting" and "hunted" do not). Words that are not plain lower-case ASCII letters, or longer than
 * FTS5_PORTER_MAX_TOKEN, are left as they are, as FTS5's porter leaves them.
 */

/**
 * FTS5's porter passes longer tokens through unstemmed: stemming them here made a long word's stem one the
 * index never holds (read as a word the campaign lacks), and the work grew with the square of its length
 * (a y after a y asks the letter before it again: a 10,000-letter run of y took seconds).
 */
const FTS5_PORTER_MAX_TOKEN = 64;

const VOWELS = new Set(['a', 'e', 'i', 'o', 'u']);

function isConsonant(word: string, i: number): boolean {
  const c = word[i]!;
  if (VOWELS.has(c)) return false;
  if (c === 'y') return i === 0 ? true : !isConsonant(word, i - 1);
  return true;
}

/** m in Porter's [C](VC)^m[V]: how many vowel-consonant sequences the stem has. */
function measure(stem: string): number {
  let m = 0;
  let i = 0;
  const n = stem.length;
  while (i < n && isConsonant(stem, i)) i++;
  while (i < n) {
    while (i < n && !isConsonant(stem, i)) i++;
    if (i >= n) break;
    while (i < n && isConsonant(stem, i)) i++;
    m++;
  }
  return m;
}

function hasVowel(stem: string): boolean {
  for (let i = 0; i < stem.length; i++) if (!isConsonant(stem, i)) return true;
  return false;
}

function endsDoubleConsonant(word: string): boolean {
  const n = word.length;
  return n >= 2 && word[n - 1] === word[n - 2] && isConsonant(word, n - 1);
}

/** *o: the stem ends consonant-vowel-consonant, the last not w, x or y (hop, not hoop). */
function endsCvc(word: string): boolean {
  const n = word.length;
  if (n < 3) return false;
  if (!isConsonant(word, n - 1) || isConsonant(word, n - 2) || !isConsonant(word, n - 3)) return false;
  return !'wxy'.includes(word[n - 1]!);
}

/** Replaces the first listed suffix the word ends with, when the remaining stem passes the test. */
function replaceSuffix(word: string, rules: readonly [string, string][], test: (stem: string) => boolean): string {
  for (const [suffix, replacement] of rules) {
    if (word.endsWith(suffix)) {
      const stem = word.slice(0, -suffix.length);
      return test(stem) ? stem + replacement : word;
    }
  }
  return word;
}

const STEP2: [string, string][] = [
  ['ational', 'ate'], ['tional', 'tion'], ['enci', 'ence'], ['anci', 'ance'], ['izer', 'ize'], ['bli', 'ble'],
  ['alli', 'al'], ['entli', 'ent'], ['eli', 'e'], ['ousli', 'ous'], ['ization', 'ize'], ['ation', 'ate'],
  ['ator', 'ate'], ['alism', 'al'], ['iveness', 'ive'], ['fulness', 'ful'], ['ousness', 'ous'], ['aliti', 'al'],
  ['iviti', 'ive'], ['biliti', 'ble'], ['logi', 'log'],
];
const STEP3: [string, string][] = [
  ['icate', 'ic'], ['ative', ''], ['alize', 'al'], ['iciti', 'ic'], ['ical', 'ic'], ['ful', ''], ['ness', ''],
];
const STEP4 = ['al', 'ance', 'ence', 'er', 'ic', 'able', 'ible', 'ant', 'ement', 'ment', 'ent', 'ion', 'ou', 'ism', 'ate', 'iti', 'ous', 'ive', 'ize'];

/** Longest suffix first within each step, as the algorithm requires. */
const byLength = (rules: [string, string][]) => [...rules].sort((a, b) => b[0].length - a[0].length);
const STEP2_SORTED = byLength(STEP2);
const STEP3_SORTED = byLength(STEP3);
const STEP4_SORTED = [...STEP4].sort((a, b) => b.length - a.length);

/**
 * Stems already worked out, by word: a campaign uses some tens of thousands of words, and judging a turn's
 * candidates stems every word of each. Emptied when full, so a long session's memory stays bounded.
 */
const stems = new Map<string, string>();
const STEMS_HELD = 100_000;

export function stem(word: string): string {
  let stemmed = stems.get(word);
  if (stemmed === undefined) {
    if (stems.size >= STEMS_HELD) stems.clear();
    stems.set(word, (stemmed = porterStem(word)));
  }
  return stemmed;
}

function porterStem(word: string): string {
  if (word.length <= 2 || word.length > FTS5_PORTER_MAX_TOKEN || !/^[a-z]+$/.test(word)) return word;
  let w = word;

  // Step 1a: plurals.
  if (w.endsWith('sses')) w = w.slice(0, -2);
  else if (w.endsWith('ies')) w = w.slice(0, -2);
  else if (!w.endsWith('ss') && w.endsWith('s')) w = w.slice(0, -1);

  // Step 1b: -eed, -ed, -ing.
  if (w.endsWith('eed')) {
    if (measure(w.slice(0, -3)) > 0) w = w.slice(0, -1);
  } else {
    const suffix = w.endsWith('ed') ? 'ed' : w.endsWith('ing') ? 'ing' : null;
    if (suffix && hasVowel(w.slice(0, -suffix.length))) {
      w = w.slice(0, -suffix.length);
      if (w.endsWith('at') || w.endsWith('bl') || w.endsWith('iz')) w += 'e';
      else if (endsDoubleConsonant(w) && !/[lsz]$/.test(w)) w = w.slice(0, -1);
      else if (measure(w) === 1 && endsCvc(w)) w += 'e';
    }
  }

  // Step 1c: y → i after a vowel-bearing stem.
  if (w.endsWith('y') && hasVowel(w.slice(0, -1))) w = `${w.slice(0, -1)}i`;

  w = replaceSuffix(w, STEP2_SORTED, (s) => measure(s) > 0);
  w = replaceSuffix(w, STEP3_SORTED, (s) => measure(s) > 0);

  // Step 4: drop a suffix from a long enough stem (-ion only after s or t).
  for (const suffix of STEP4_SORTED) {
    if (!w.endsWith(suffix)) continue;
    const s = w.slice(0, -suffix.length);
    if (measure(s) > 1 && (suffix !== 'ion' || /[st]$/.test(s))) w = s;
    break;
  }

  // Step 5: a final e, and a double l.
  if (w.endsWith('e')) {
    const s = w.slice(0, -1);
    const m = measure(s);
    if (m > 1 || (m === 1 && !endsCvc(s))) w = s;
  }
  if (measure(w) > 1 && endsDoubleConsonant(w) && w.endsWith('l')) w = w.slice(0, -1);
  return w;
}
