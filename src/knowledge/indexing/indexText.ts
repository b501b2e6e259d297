// How passage text is normalized for hashing and for the full-text index.

/** Passage text as it is matched: NFC so that composed and decomposed spellings meet. */
export function normalizeForIndex(text: string): string {
  return text.normalize('NFC');
}

/**
 * Chinese, Japanese and Korean characters, written without spaces between words (a regular-expression
 * class body). The katakana long-vowel mark (ー, half-width ｰ) has no script of its own, yet is part of the
 * word it lengthens: パーティー is one word, not パ, ティ and two marks.
 */
export const CJK_CHARS = '\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}ーｰ';

/** Two or more CJK characters in a row. */
export const CJK_RUN = new RegExp(`[${CJK_CHARS}]{2,}`, 'gu');

/**
 * Text as the full-text index holds it: NFC, and each CJK run as its overlapping character pairs
 * ("宗门弟子" → "宗门 门弟 弟子"). Without spaces the tokenizer would take a whole CJK sentence for one
 * word; pairs let any word of two or more characters be found as a phrase of its pairs, with no
 * dictionary to disagree between index and query.
 */
export function ftsText(text: string): string {
  return normalizeForIndex(text).replace(CJK_RUN, (run) => {
    const chars = [...run];
    return ` ${chars.slice(0, -1).map((c, i) => c + chars[i + 1]!).join(' ')} `;
  });
}

/** A heading trail as the index's heading column holds it. */
export function ftsHeading(headingPath: readonly string[]): string {
  return ftsText(headingPath.join(' › '));
}
