import type { Embedder } from '../../models';
import { blobToVector, dot, embedPassages, normalized, type EmbedReport } from './embeddings';
import type { KnowledgeStore } from '../indexing';

/**
 * A similarity floor means something only for the model it was measured on, and no model can be measured
 * in advance here. So it is measured on the writer's own library: passages from different sources are,
 * overwhelmingly, about different things, and the floor sits above nearly all of their similarities. A
 * query must then resemble a passage more than unrelated passages resemble each other.
 */
export interface CalibrationOptions {
  /** Random cross-source pairs to measure. */
  pairs?: number;
  /** The floor sits at this quantile of unrelated-pair similarity, plus `margin`. */
  quantile?: number;
  margin?: number;
  /** Makes the sample reproducible. */
  seed?: number;
}

export interface CalibrationReport {
  model: string;
  dimensions: number;
  floor: number;
  samplePairs: number;
  distribution: { mean: number; p50: number; p95: number; p99: number; max: number };
}

export class CalibrationError extends Error {}

export const DEFAULT_CALIBRATION = { pairs: 4000, quantile: 0.99, margin: 0.02, seed: 1 } as const;
/** Fewer unrelated pairs than this cannot place a 99th percentile honestly. */
const MIN_PAIRS = 200;

/** A small deterministic generator (mulberry32): the same library gives the same floor. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function quantile(sorted: readonly number[], q: number): number {
  const position = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[position]!;
}

/** Measures and stores the floor for a model whose vectors are already in the index. */
export function calibrateSemanticFloor(store: KnowledgeStore, model: string, options: CalibrationOptions = {}): CalibrationReport {
  const { pairs, quantile: q, margin, seed } = { ...DEFAULT_CALIBRATION, ...options };
  const rows = store.db
    .prepare(
      `SELECT p.source_id AS source, p.content_hash AS hash, e.vector AS vector, e.dimensions AS dims
       FROM passages p JOIN embeddings e ON e.model = ? AND e.content_hash = p.content_hash
       WHERE p.campaign_id = ?`,
    )
    .all(model, store.campaignId) as { source: string; hash: string; vector: Buffer; dims: number }[];
  const dimensions = new Set(rows.map((r) => r.dims));
  if (dimensions.size > 1) throw new CalibrationError(`vectors for '${model}' have mixed sizes (${[...dimensions].join(', ')}): re-embed the library first`);
  const sources = new Set(rows.map((r) => r.source));
  if (sources.size < 2) {
    throw new CalibrationError(`calibrating '${model}' needs embedded passages from at least two sources; this library has ${sources.size}`);
  }
  const perSource = new Map<string, number>();
  for (const r of rows) perSource.set(r.source, (perSource.get(r.source) ?? 0) + 1);
  const distinctPairs = (rows.length ** 2 - [...perSource.values()].reduce((n, k) => n + k * k, 0)) / 2;
  if (distinctPairs < MIN_PAIRS) {
    throw new CalibrationError(
      `only ${distinctPairs} unrelated passage pairs exist for '${model}' (need ${MIN_PAIRS}): import more material before calibrating`,
    );
  }
  const vectors = rows.map((r) => normalized(blobToVector(r.vector)));
  const next = random(seed);
  const similarities: number[] = [];
  // Bounded attempts: a library dominated by one source yields few cross-source pairs.
  for (let attempt = 0; attempt < pairs * 4 && similarities.length < pairs; attempt++) {
    const i = Math.floor(next() * rows.length);
    const j = Math.floor(next() * rows.length);
    if (rows[i]!.source === rows[j]!.source || rows[i]!.hash === rows[j]!.hash) continue;
    similarities.push(dot(vectors[i]!, vectors[j]!));
  }
  if (similarities.length < MIN_PAIRS) {
    throw new CalibrationError(`only ${similarities.length} unrelated passage pairs could be drawn for '${model}' (need ${MIN_PAIRS}): import more material first`);
  }
  similarities.sort((a, b) => a - b);
  const distribution = {
    mean: similarities.reduce((a, b) => a + b, 0) / similarities.length,
    p50: quantile(similarities, 0.5),
    p95: quantile(similarities, 0.95),
    p99: quantile(similarities, 0.99),
    max: similarities.at(-1)!,
  };
  const floor = Math.min(1, quantile(similarities, q) + margin);
  const dims = [...dimensions][0]!;
  store.db
    .prepare(
      `INSERT INTO embedding_models (model, dimensions, floor, calibrated_at, sample_pairs, details) VALUES (@model, @dims, @floor, @at, @pairs, @details)
       ON CONFLICT (model) DO UPDATE SET dimensions = excluded.dimensions, floor = excluded.floor, calibrated_at = excluded.calibrated_at,
         sample_pairs = excluded.sample_pairs, details = excluded.details`,
    )
    .run({
      model,
      dims,
      floor,
      at: new Date().toISOString(),
      pairs: similarities.length,
      details: JSON.stringify({ method: 'cross-source random pairs', quantile: q, margin, seed, ...distribution }),
    });
  return { model, dimensions: dims, floor, samplePairs: similarities.length, distribution };
}

export interface SemanticIndexReport {
  model: string;
  embed: EmbedReport | null;
  calibration: CalibrationReport | null;
  /** Why the semantic half did not finish; the lexical index is complete either way. */
  problem: string | null;
}

/**
 * The semantic half of indexing: embed what has no vector yet, then measure the floor again, since the
 * library it is measured on just changed. A failure is reported, never thrown: lexical search never waits on it.
 */
export async function indexSemantic(store: KnowledgeStore, embedder: Embedder): Promise<SemanticIndexReport> {
  const report: SemanticIndexReport = { model: embedder.model, embed: null, calibration: null, problem: null };
  try {
    report.embed = await embedPassages(store, embedder);
    report.calibration = calibrateSemanticFloor(store, embedder.model);
  } catch (error) {
    if (!(error instanceof Error)) throw error;
    report.problem = error.message;
  }
  return report;
}

/** One line for a writer: what was embedded and the floor, or why semantic search is not available. */
export function describeSemanticIndex(report: SemanticIndexReport): string {
  const parts = [`semantic (${report.model}):`];
  if (report.embed?.modelChanged) parts.push(`${report.embed.modelChanged};`);
  if (report.embed) parts.push(`${report.embed.embedded} embedded, ${report.embed.reused} reused;`);
  if (report.calibration) parts.push(`floor ${report.calibration.floor.toFixed(3)} from ${report.calibration.samplePairs} unrelated pairs`);
  if (report.problem) parts.push(`not available — ${report.problem}; lexical search works`);
  return parts.join(' ');
}
