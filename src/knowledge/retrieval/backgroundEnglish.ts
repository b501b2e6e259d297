import { everydayStems } from './everydayStems';
import { stem } from './stemmer';

/**
 * Ordinary English as a background language model: how often a word is used in everyday speech
 * (SUBTLEX-US, word counts from 51 million words of film and television subtitles, ISC). Retrieval
 * compares it with how often the campaign uses a word: a question whose words the campaign uses no more
 * than anyone does ("attack", "roll", "damage" in a book of fairy tales) is not a question about it.
 * Only words used at least `everydayWords.json`'s `minCount` times count: a rarer word is rare either way,
 * and the build ships them already stemmed (everydayStems.ts), so tests, bench and the shipped CLI judge with one list.
 */

interface BackgroundModel {
  /** Uses per stem (every spelling and inflection of a word summed under the index's Porter stem). */
  counts: Map<string, number>;
  total: number;
}

let model: BackgroundModel | undefined;

/** Read on the first question that needs it: extension start-up never pays for it. */
function background(): BackgroundModel {
  if (!model) {
    const counts = new Map(everydayStems());
    let total = 0;
    for (const count of counts.values()) total += count;
    model = { counts, total };
  }
  return model;
}

/**
 * Probability of a stem in everyday English, add-half smoothed so a word English never uses (a name,
 * a coinage, CJK) is rarer than any word it does use.
 */
export function englishProbability(stemmed: string): number {
  const { counts, total } = background();
  return ((counts.get(stemmed) ?? 0) + 0.5) / total;
}

/** Whether everyday English uses the word at all (a misspelling, a name or a coinage it does not). */
export function isEverydayWord(stemmed: string): boolean {
  return background().counts.has(stemmed);
}

/** The same for a word as written, any case: whether a name like "Ice" or "Elf" is also a word everyone uses. */
export function isEverydayWordAsWritten(word: string): boolean {
  return isEverydayWord(stem(word.toLowerCase()));
}
