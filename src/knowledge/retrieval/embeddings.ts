import { CANDIDATE_COLUMNS, ELIGIBLE, type CandidateRow } from './retrievalRows';
import type { RetrievalStage, SemanticStatus } from './retrievalTypes';
import type { KnowledgeStore } from '../indexing';
import { CHUNKING_VERSION } from '../campaign';
import type { Embedder } from '../../models';

export function vectorToBlob(vector: readonly number[]): Buffer {
  const floats = Float32Array.from(vector);
  return Buffer.from(floats.buffer, floats.byteOffset, floats.byteLength);
}

export function blobToVector(blob: Buffer): Float32Array {
  const copy = new Uint8Array(blob.byteLength);
  copy.set(blob);
  return new Float32Array(copy.buffer);
}

/** Unit length, so cosine similarity is a dot product. */
export function normalized(vector: ArrayLike<number>): Float32Array {
  const out = Float32Array.from(vector as ArrayLike<number>);
  let norm = 0;
  for (const v of out) norm += v * v;
  norm = Math.sqrt(norm) || 1;
  for (let i = 0; i < out.length; i++) out[i]! /= norm;
  return out;
}

export function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}

export interface EmbeddingModelInfo {
  model: string;
  /** The server whose model made the vectors (an Embedder's `host`); null when not recorded (an older index). */
  server: string | null;
  dimensions: number;
  floor: number | null;
  calibratedAt: string | null;
  samplePairs: number;
  details: Record<string, unknown>;
}

export function getEmbeddingModel(store: KnowledgeStore, model: string): EmbeddingModelInfo | undefined {
  const row = store.db.prepare('SELECT * FROM embedding_models WHERE model = ?').get(model) as
    | { model: string; server: string | null; dimensions: number; floor: number | null; calibrated_at: string | null; sample_pairs: number; details: string }
    | undefined;
  return (
    row && {
      model: row.model,
      server: row.server,
      dimensions: row.dimensions,
      floor: row.floor,
      calibratedAt: row.calibrated_at,
      samplePairs: row.sample_pairs,
      details: JSON.parse(row.details) as Record<string, unknown>,
    }
  );
}

/** The model most recently calibrated in this index, which is what a surface with no setting should use. */
export function calibratedModels(store: KnowledgeStore): EmbeddingModelInfo[] {
  const rows = store.db.prepare('SELECT model FROM embedding_models WHERE floor IS NOT NULL ORDER BY calibrated_at DESC').all() as { model: string }[];
  return rows.map((r) => getEmbeddingModel(store, r.model)!);
}

export interface EmbedReport {
  model: string;
  dimensions: number | null;
  /** New vectors written. */
  embedded: number;
  /** Passages whose content already had a vector for this model. */
  reused: number;
  /** Set when the model's vectors changed size, so its old vectors and floor were discarded. */
  modelChanged: string | null;
}

/**
 * Embeds every passage of the campaign whose content has no vector for this model yet (vectors are keyed
 * by content, so unchanged passages keep theirs across reindexing). A model that now returns vectors of
 * another size has changed: its old vectors and its floor no longer mean anything and are discarded.
 */
export async function embedPassages(store: KnowledgeStore, embedder: Embedder, options: { batchSize?: number } = {}): Promise<EmbedReport> {
  const db = store.db;
  const batchSize = options.batchSize ?? 32;
  const pending = db
    .prepare(
      `SELECT content_hash, min(text) AS text FROM passages p
       WHERE p.campaign_id = ? AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.model = ? AND e.content_hash = p.content_hash)
       GROUP BY content_hash ORDER BY min(rowid)`,
    )
    .all(store.campaignId, embedder.model) as { content_hash: string; text: string }[];
  const known = getEmbeddingModel(store, embedder.model);
  if (known && known.server !== embedder.host) {
    const changed = await checkServerChange(store, embedder, known);
    if (changed) {
      const again = await embedPassages(store, embedder, options);
      return { ...again, modelChanged: changed };
    }
  } else if (pending.length === 0 && known) {
    // Nothing new to embed, but the model behind the name may have changed (a re-pull): one probe tells.
    const probe = db.prepare('SELECT text FROM passages WHERE campaign_id = ? LIMIT 1').get(store.campaignId) as { text: string } | undefined;
    const [vector] = probe ? await embedder.embed([probe.text]) : [];
    if (vector && vector.length !== known.dimensions) {
      const dropped = discardModel(store, embedder.model);
      const again = await embedPassages(store, embedder, options);
      return { ...again, modelChanged: modelChangedMessage(embedder.model, vector.length, known.dimensions, dropped) };
    }
  }
  const total = (db.prepare('SELECT count(DISTINCT content_hash) n FROM passages WHERE campaign_id = ?').get(store.campaignId) as { n: number }).n;
  const report: EmbedReport = { model: embedder.model, dimensions: known?.dimensions ?? null, embedded: 0, reused: total - pending.length, modelChanged: null };
  const insert = db.prepare(
    `INSERT OR REPLACE INTO embeddings (model, content_hash, dimensions, chunking_version, vector, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
  );
  for (let start = 0; start < pending.length; start += batchSize) {
    const batch = pending.slice(start, start + batchSize);
    const vectors = await embedder.embed(batch.map((p) => p.text));
    const dims = vectors[0]?.length ?? 0;
    if (dims === 0 || vectors.some((v) => v.length !== dims)) {
      throw new Error(`embedding model '${embedder.model}' returned vectors of inconsistent size (${[...new Set(vectors.map((v) => v.length))].join(', ')})`);
    }
    db.transaction(() => {
      const current = getEmbeddingModel(store, embedder.model);
      if (current && current.dimensions !== dims) {
        report.modelChanged = modelChangedMessage(embedder.model, dims, current.dimensions, discardModel(store, embedder.model));
      }
      db.prepare('INSERT INTO embedding_models (model, dimensions, server) VALUES (?, ?, ?) ON CONFLICT (model) DO NOTHING').run(embedder.model, dims, embedder.host);
      const now = new Date().toISOString();
      batch.forEach((p, i) => insert.run(embedder.model, p.content_hash, dims, CHUNKING_VERSION, vectorToBlob(vectors[i]!), now));
    })();
    report.embedded += batch.length;
    report.dimensions = dims;
  }
  if (report.modelChanged) {
    // Everything embedded before the change was discarded with the old vectors; embed it again.
    const again = await embedPassages(store, embedder, options);
    return { ...again, modelChanged: report.modelChanged };
  }
  return report;
}

/** Two vectors of one text closer than this come from the same model (numeric noise of other hardware aside). */
const SAME_MODEL_SIMILARITY = 0.99;

/** A passage with a stored vector for the model: embedded again, it tells whether a server's model is the one that made them. */
function storedSample(store: KnowledgeStore, model: string): { text: string; vector: Buffer } | undefined {
  return store.db
    .prepare(
      `SELECT p.text AS text, e.vector AS vector FROM embeddings e JOIN passages p ON p.content_hash = e.content_hash
       WHERE e.model = ? AND p.campaign_id = ? LIMIT 1`,
    )
    .get(model, store.campaignId) as { text: string; vector: Buffer } | undefined;
}

function sameModel(again: readonly number[] | undefined, stored: Buffer): boolean {
  const before = blobToVector(stored);
  return again?.length === before.length && dot(normalized(again), normalized(before)) >= SAME_MODEL_SIMILARITY;
}

function notTheSameModel(model: string, server: string, madeOn: string | null): string {
  return `'${model}' on ${server} is not the model that made this library's vectors${madeOn ? ` on ${madeOn}` : ''}`;
}

/**
 * Whether the model behind the name on the embedder's server is the one that made the stored vectors. Same:
 * the server is recorded and the vectors stay. Not: they and the floor are discarded, and the message says so.
 */
async function checkServerChange(store: KnowledgeStore, embedder: Embedder, known: EmbeddingModelInfo): Promise<string | null> {
  const sample = storedSample(store, embedder.model);
  const [again] = sample ? await embedder.embed([sample.text]) : [];
  if (sample && again && again.length !== known.dimensions) return modelChangedMessage(embedder.model, again.length, known.dimensions, discardModel(store, embedder.model));
  if (sample && !sameModel(again, sample.vector)) {
    return `${notTheSameModel(embedder.model, embedder.host, known.server)}: its ${discardModel(store, embedder.model)} old vectors and its floor were discarded and the library embedded again`;
  }
  store.db.prepare('UPDATE embedding_models SET server = ? WHERE model = ?').run(embedder.host, embedder.model);
  return null;
}

/** Vectors and floor of a model that changed: derived data that no longer means anything. */
function discardModel(store: KnowledgeStore, model: string): number {
  return store.db.transaction(() => {
    const dropped = store.db.prepare('DELETE FROM embeddings WHERE model = ?').run(model).changes;
    store.db.prepare('DELETE FROM embedding_models WHERE model = ?').run(model);
    return dropped;
  })();
}

function modelChangedMessage(model: string, dims: number, was: number, dropped: number): string {
  return `'${model}' now returns ${dims}-dimensional vectors (was ${was}): its ${dropped} old vectors and its floor were discarded; recalibrate`;
}

interface VectorEntry {
  rowid: number;
  contentHash: string;
  vector: Float32Array;
}

interface VectorCache {
  key: string;
  entries: VectorEntry[];
  byRowid: Map<number, VectorEntry>;
  dimensions: Set<number>;
  /** Indexed passages with no vector for this model: new since the last embedding run, or stale. */
  missing: number;
}

const vectorCaches = new WeakMap<KnowledgeStore, Map<string, VectorCache>>();
/** Whether a server's model is the one that made a library's vectors, keyed by model, the server that made them and the server asked. */
const serverVerdicts = new WeakMap<KnowledgeStore, Map<string, boolean>>();

/** Vectors of the campaign's passages for one model, kept in memory until the index changes. */
function loadVectors(store: KnowledgeStore, model: string): VectorCache {
  const db = store.db;
  const stamp = db
    .prepare(
      `SELECT (SELECT count(*) FROM passages WHERE campaign_id = @campaign) AS passages,
              (SELECT coalesce(max(rowid), 0) FROM passages) AS maxRow,
              (SELECT count(*) FROM embeddings WHERE model = @model) AS vectors,
              (SELECT coalesce(max(updated_at), '') FROM sources WHERE campaign_id = @campaign) AS updated`,
    )
    .get({ campaign: store.campaignId, model }) as Record<string, unknown>;
  const key = JSON.stringify(stamp);
  const perStore = vectorCaches.get(store) ?? new Map<string, VectorCache>();
  vectorCaches.set(store, perStore);
  const cached = perStore.get(model);
  if (cached?.key === key) return cached;
  const rows = db
    .prepare(
      `SELECT p.rowid AS rowid, p.content_hash AS hash, e.vector AS vector, e.dimensions AS dims
       FROM passages p LEFT JOIN embeddings e ON e.model = ? AND e.content_hash = p.content_hash
       WHERE p.campaign_id = ?`,
    )
    .all(model, store.campaignId) as { rowid: number; hash: string; vector: Buffer | null; dims: number | null }[];
  const cache: VectorCache = { key, entries: [], byRowid: new Map(), dimensions: new Set(), missing: 0 };
  for (const row of rows) {
    if (!row.vector || row.dims === null) {
      cache.missing++;
      continue;
    }
    cache.dimensions.add(row.dims);
    const entry = { rowid: row.rowid, contentHash: row.hash, vector: normalized(blobToVector(row.vector)) };
    cache.entries.push(entry);
    cache.byRowid.set(row.rowid, entry);
  }
  perStore.set(model, cache);
  return cache;
}

export interface SemanticSearchOptions {
  embedder: Embedder;
}

export interface SemanticHit {
  row: CandidateRow;
  similarity: number;
}

/**
 * What the semantic veto needs: the query's similarity to any passage with a current vector, and the line
 * "far below the floor" stands for — the median similarity of the library's unrelated passage pairs, as
 * calibration measured it: a passage no nearer the query than two unrelated passages are to each other.
 */
export interface SemanticJudge {
  similarity(row: CandidateRow): number | undefined;
  farBelow: number;
}

/** Above-floor hits kept per query, and the best below-floor ones kept so the record can show the near misses. */
const SEMANTIC_HIT_LIMIT = 100;
const SEMANTIC_NEAR_MISSES = 20;

/**
 * Semantic candidates for a query: raw cosine against every stored vector of the model, but only when
 * the model has a floor measured on this library. Never throws: any failure is a status with a reason,
 * and lexical retrieval carries on without it.
 */
export async function semanticCandidates(
  store: KnowledgeStore,
  options: SemanticSearchOptions,
  queryText: string,
  stage: RetrievalStage,
): Promise<{ status: SemanticStatus; floor: number | null; hits: SemanticHit[]; judge: SemanticJudge | null }> {
  const { embedder } = options;
  const model = embedder.model;
  const skip = (reason: string) => ({ status: { used: false, model, reason }, floor: null, hits: [], judge: null });
  const info = getEmbeddingModel(store, model);
  if (!info || info.floor === null) {
    return skip(`no calibrated similarity floor for '${model}' in this library, so semantic retrieval was skipped (lexical only); calibrate the model first`);
  }
  if (!queryText.trim()) return skip('nothing to embed: the query is empty');
  const vectors = loadVectors(store, model);
  if (vectors.entries.length === 0) return skip(`no passage has a vector for '${model}' yet; embed the library first`);
  if (vectors.dimensions.size > 1 || !vectors.dimensions.has(info.dimensions)) {
    return skip(`stored vectors for '${model}' are ${[...vectors.dimensions].join('/')}-dimensional but its floor was measured at ${info.dimensions}: re-embed and recalibrate`);
  }
  // Vectors made on another server are comparable only if its model under this name is the same one: a
  // stored passage rides along with the query, once per process, and must come back as it was stored.
  const verdictKey = JSON.stringify([model, info.server, embedder.host]);
  const verdicts = serverVerdicts.get(store) ?? new Map<string, boolean>();
  serverVerdicts.set(store, verdicts);
  const sample = info.server !== embedder.host && !verdicts.has(verdictKey) ? storedSample(store, model) : undefined;
  let queryVector: Float32Array;
  try {
    const [vector, again] = await embedder.embed(sample ? [queryText, sample.text] : [queryText]);
    queryVector = normalized(vector ?? []);
    if (sample) verdicts.set(verdictKey, sameModel(again, sample.vector));
  } catch (error) {
    return skip(`${error instanceof Error ? error.message : String(error)}; lexical results only`);
  }
  if (queryVector.length !== info.dimensions) {
    return skip(
      `'${model}' now returns ${queryVector.length}-dimensional vectors but this library's vectors and floor are ${info.dimensions}-dimensional (the model changed): re-embed and recalibrate; lexical results only`,
    );
  }
  if (verdicts.get(verdictKey) === false) {
    return skip(`${notTheSameModel(model, embedder.host, info.server)} (a stored passage came back different): index the campaign with it to embed the library again; lexical results only`);
  }
  const floor = info.floor;
  const scored = vectors.entries.map((e) => ({ entry: e, similarity: dot(queryVector, e.vector) })).sort((a, b) => b.similarity - a.similarity);
  const above = scored.filter((s) => s.similarity >= floor).slice(0, SEMANTIC_HIT_LIMIT);
  const near = scored.filter((s) => s.similarity < floor).slice(0, SEMANTIC_NEAR_MISSES);
  const wanted = [...above, ...near];
  const hits: SemanticHit[] = [];
  if (wanted.length > 0) {
    const similarityOf = new Map(wanted.map((w) => [w.entry.rowid, w]));
    const rows = store.db
      .prepare(
        `SELECT ${CANDIDATE_COLUMNS} FROM passages p JOIN sources s ON s.id = p.source_id
         WHERE p.rowid IN (SELECT value FROM json_each(@rowids)) AND p.campaign_id = @campaign AND ${ELIGIBLE}`,
      )
      .all({ rowids: JSON.stringify(wanted.map((w) => w.entry.rowid)), campaign: store.campaignId, stage }) as CandidateRow[];
    for (const row of rows) {
      const hit = similarityOf.get(row.rowid)!;
      // A passage rewritten since the vectors were loaded must not borrow its predecessor's vector.
      if (hit.entry.contentHash === row.content_hash) hits.push({ row, similarity: hit.similarity });
    }
  }
  const median = info.details['p50'];
  const judge: SemanticJudge | null =
    typeof median === 'number'
      ? {
          farBelow: median,
          similarity: (row) => {
            const entry = vectors.byRowid.get(row.rowid);
            // A passage rewritten since its vector was made has no similarity to judge by.
            return entry && entry.contentHash === row.content_hash ? dot(queryVector, entry.vector) : undefined;
          },
        }
      : null;
  const stale = vectors.missing > 0 ? `; ${vectors.missing} passage(s) have no vector for '${model}' yet and were matched lexically only` : '';
  return {
    status: { used: true, model, reason: `'${model}' with its calibrated floor ${floor.toFixed(3)} (${info.samplePairs} unrelated pairs measured)${stale}` },
    floor,
    hits,
    judge,
  };
}
