/**
 * A model-free token estimate. It is deliberately simple and slightly generous (about four characters a
 * token, never fewer tokens than words); the story engine scales it by a factor calibrated from Ollama's
 * prompt_eval_count, so budgets converge on the real tokenizer without shipping one.
 */
export function estimateTokens(text: string): number {
  return tokensFor(countWords(text), text.length);
}

/** Words as the estimate counts them: runs of non-whitespace. Texts joined by whitespace add their words up. */
export function countWords(text: string): number {
  // Counted in place (every passage priced every turn, every file at import): splitting made a string per word.
  let words = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // JavaScript's \s: ASCII space, tab to carriage return, and a few Unicode spaces past ASCII.
    if (c === 32 || (c >= 9 && c <= 13) || (c >= 128 && WHITESPACE.test(text[i]!))) inWord = false;
    else if (!inWord) {
      inWord = true;
      words++;
    }
  }
  return words;
}

const WHITESPACE = /\s/;

/** The estimate for a text of `words` words and `chars` characters, for callers that keep both as text grows. */
export function tokensFor(words: number, chars: number): number {
  return chars <= 0 ? 0 : Math.max(words, Math.ceil(chars / 4));
}
