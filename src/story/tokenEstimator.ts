import { countWords, estimateTokens, tokensFor } from '../knowledge/campaign';

export interface CalibrationStore {
  getCalibration(model: string): { factor: number; samples: number } | undefined;
  saveCalibration(model: string, factor: number, samples: number): void;
}

/** Keeps one wild observation (a cached prompt, a template quirk) from wrecking every budget. */
const MIN_FACTOR = 0.5;
const MAX_FACTOR = 3;
const CACHE_HIT_RATIO = 0.6;
/** Weight of a new observation; early ones count more, until the average settles. */
const MAX_SAMPLES_WEIGHTED = 10;

/**
 * Token counts for budgets: the shared model-free estimate scaled by a per-model factor learned from
 * Ollama's prompt_eval_count, so budgets converge on the real tokenizer without shipping one.
 */
export class TokenEstimator {
  private factor: number;
  private samples: number;

  constructor(
    readonly model: string,
    private readonly store?: CalibrationStore,
  ) {
    const saved = store?.getCalibration(model);
    this.factor = saved?.factor ?? 1;
    this.samples = saved?.samples ?? 0;
  }

  get calibration(): { factor: number; samples: number } {
    return { factor: this.factor, samples: this.samples };
  }

  count(text: string): number {
    return this.countShape(countWords(text), text.length);
  }

  /** What `count` gives a text of this many words and characters (see tokensFor). */
  countShape(words: number, chars: number): number {
    return Math.ceil(tokensFor(words, chars) * this.factor);
  }

  /** Learns from one real prompt: what the base estimate said it cost against what Ollama counted. */
  observe(promptText: string, promptEvalCount: number): void {
    const base = estimateTokens(promptText);
    if (base === 0 || !Number.isFinite(promptEvalCount) || promptEvalCount <= 0) return;
    const ratio = Math.min(MAX_FACTOR, Math.max(MIN_FACTOR, promptEvalCount / base));
    // Some Ollama versions count only the tokens evaluated after a cached prefix: a sudden drop is a cache
    // hit, not a smaller tokenizer.
    if (this.samples > 0 && ratio < this.factor * CACHE_HIT_RATIO) return;
    this.samples += 1;
    const weight = 1 / Math.min(this.samples, MAX_SAMPLES_WEIGHTED);
    this.factor = this.factor * (1 - weight) + ratio * weight;
    this.store?.saveCalibration(this.model, this.factor, this.samples);
  }
}
