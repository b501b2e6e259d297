/**
 * A model-free token estimate. It is deliberately simple and slightly generous (about four characters a
 * token, never fewer tokens than words); the story engine scales it by a factor calibrated from Ollama's
 * prompt_eval_count, so budgets converge on the real tokenizer without shipping one.
 */
export function estimateTokens(text: string): number {
  if (text.length === 0) return 0;
  const words = text.split(/\s+/).filter(Boolean).length;
  return Math.max(words, Math.ceil(text.length / 4));
}
