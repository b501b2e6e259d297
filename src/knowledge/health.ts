import { describeConflict, type ConflictAnalysis } from './conflicts';
import type { Db } from './sqlite';
import type { KnowledgeStore } from './store';
import { CHUNKING_VERSION, type SourceRecord } from './types';

/**
 * Campaign health: every problem a writer can fix, from every check, in one list — the `Storyteller:
 * Check Campaign Health` command, the Problems panel and `storyteller lint` all read it. Each producer
 * below is one rule; campaignHealth composes them.
 */

export type HealthSeverity = 'error' | 'warning' | 'info';

export interface HealthLocation {
  path: string;
  /** 1-based. */
  line?: number;
}

export interface HealthFinding {
  severity: HealthSeverity;
  code: string;
  message: string;
  location?: HealthLocation;
  /** Other places the finding is about (the other side of a conflict). */
  related?: (HealthLocation & { message: string })[];
}

export function conflictFindings(analysis: ConflictAnalysis): HealthFinding[] {
  return analysis.openConflicts.map((c) => ({
    severity: 'error',
    code: 'canon-conflict',
    message: `canon contradicts itself: ${describeConflict(c)}`,
    location: { path: c.a.path, line: c.a.line },
    related: [{ path: c.b.path, line: c.b.line, message: `${c.entity} — ${c.b.attribute}: ${c.b.value}` }],
  }));
}

/** Issues the importer recorded on each source (decoding, oversize, duplicates, front matter), as findings. */
export function sourceIssueFindings(sources: readonly SourceRecord[]): HealthFinding[] {
  return sources.flatMap((s) =>
    s.issues.map((issue) => ({
      severity: issue.severity,
      code: issue.code,
      message: issue.message,
      location: { path: s.path, ...(issue.line !== undefined ? { line: issue.line } : {}) },
    })),
  );
}

/** A file no front matter and no folder rule classifies is whatever the campaign default says: say so. */
export function unclassifiedFindings(sources: readonly SourceRecord[]): HealthFinding[] {
  return sources
    .filter((s) => s.classOrigin.kind === 'campaign-default' && s.lexicalState !== 'error')
    .map((s) => ({
      severity: 'warning',
      code: 'unclassified',
      message: `class '${s.class}' comes only from the campaign default: add 'class:' to its front matter or a folder rule in campaign.yaml`,
      location: { path: s.path, line: 1 },
    }));
}

/**
 * Always-include canon is sent with every turn; when it exceeds its budget something is cut from every
 * prompt, so it is reported with the sizes that overflow. `always_include` on non-canon is ignored.
 */
export function alwaysIncludeFindings(store: KnowledgeStore, budgetTokens: number): HealthFinding[] {
  const findings: HealthFinding[] = [];
  const rows = store.db
    .prepare(
      `SELECT s.path, s.class, coalesce(sum(p.token_count), 0) AS tokens
         FROM sources s LEFT JOIN passages p ON p.source_id = s.id
        WHERE s.campaign_id = ? AND s.always_include = 1 AND s.enabled = 1
        GROUP BY s.id ORDER BY tokens DESC, s.path`,
    )
    .all(store.campaignId) as { path: string; class: string; tokens: number }[];
  for (const row of rows.filter((r) => r.class !== 'canon')) {
    findings.push({
      severity: 'warning',
      code: 'always-include-not-canon',
      message: `always_include is ignored on ${row.class} sources: only canon is sent with every turn`,
      location: { path: row.path, line: 1 },
    });
  }
  const canon = rows.filter((r) => r.class === 'canon');
  const total = canon.reduce((sum, r) => sum + r.tokens, 0);
  if (total > budgetTokens) {
    const parts = canon.map((r) => `${r.path} (${r.tokens})`).join(', ');
    for (const row of canon) {
      findings.push({
        severity: 'warning',
        code: 'always-include-over-budget',
        message: `always-include canon is ${total} tokens, over its ${budgetTokens}-token budget; this file is ${row.tokens}. All of it: ${parts}`,
        location: { path: row.path, line: 1 },
      });
    }
  }
  return findings;
}

/**
 * Embeddings that no longer describe their passages: vectors whose size differs from what the model makes
 * now, vectors made for an older chunking, and passages with no vector (new or changed since the last
 * embedding run, or the run failed). With no embedding model configured there is nothing to be stale against.
 */
export function embeddingFindings(store: KnowledgeStore, model: string | null): HealthFinding[] {
  if (!model) return [];
  const modelRow = store.db.prepare('SELECT dimensions FROM embedding_models WHERE model = ?').get(model) as { dimensions: number } | undefined;
  if (!modelRow) {
    return [{ severity: 'warning', code: 'embedding-missing', message: `semantic search is set to ${model} but nothing has been embedded with it yet; reindex with Ollama reachable` }];
  }
  const rows = store.db
    .prepare(
      `SELECT s.path, count(p.id) AS passages,
              sum(CASE WHEN e.content_hash IS NULL THEN 1 ELSE 0 END) AS missing,
              sum(CASE WHEN e.chunking_version <> ? THEN 1 ELSE 0 END) AS old_chunking,
              sum(CASE WHEN e.dimensions <> ? THEN 1 ELSE 0 END) AS wrong_size
         FROM sources s
         JOIN passages p ON p.source_id = s.id
         LEFT JOIN embeddings e ON e.model = ? AND e.content_hash = p.content_hash
        WHERE s.campaign_id = ? AND s.enabled = 1 AND s.lexical_state = 'ready'
        GROUP BY s.id ORDER BY s.path`,
    )
    .all(CHUNKING_VERSION, modelRow.dimensions, model, store.campaignId) as { path: string; passages: number; missing: number; old_chunking: number; wrong_size: number }[];
  const findings: HealthFinding[] = [];
  for (const row of rows) {
    const at = { path: row.path, line: 1 };
    if (row.wrong_size > 0) {
      findings.push({
        severity: 'error',
        code: 'embedding-mismatch',
        message: `${row.wrong_size} of ${row.passages} passages have ${model} vectors of another size than the model makes now (${modelRow.dimensions}); semantic search skips them until they are re-embedded`,
        location: at,
      });
    }
    const stale = row.missing + row.old_chunking;
    if (stale > 0) {
      const why = [row.missing > 0 ? `${row.missing} never embedded or changed since` : '', row.old_chunking > 0 ? `${row.old_chunking} embedded for an older chunking` : '']
        .filter(Boolean)
        .join(', ');
      findings.push({ severity: 'warning', code: 'embedding-stale', message: `${stale} of ${row.passages} passages lack a current ${model} vector (${why}); they are found lexically only until reindexed`, location: at });
    }
  }
  return findings;
}

export interface RetrievalCount {
  /** Turns whose prompt used the passage. */
  used: number;
  /** Turns whose retrieval considered it, used or not. */
  considered: number;
}

/** How many turns retrieved each passage (play.db turn_passages). */
export function passageRetrievalCounts(playDb: Db, passageIds?: readonly string[]): Map<string, RetrievalCount> {
  const sql = `SELECT passage_id, sum(selected) AS used, count(*) AS considered FROM turn_passages
               ${passageIds ? `WHERE passage_id IN (${passageIds.map(() => '?').join(',') || "''"})` : ''} GROUP BY passage_id`;
  const rows = playDb.prepare(sql).all(...(passageIds ?? [])) as { passage_id: string; used: number; considered: number }[];
  return new Map(rows.map((r) => [r.passage_id, { used: r.used, considered: r.considered }]));
}

/**
 * Sources no turn has ever used. Only meaningful once something was played, and only about sources that
 * could have been retrieved (enabled, indexed); always-include canon is sent without retrieval.
 */
export function neverRetrievedFindings(store: KnowledgeStore, playDb: Db): HealthFinding[] {
  const turns = (playDb.prepare('SELECT count(DISTINCT turn_id) AS n FROM turn_passages').get() as { n: number }).n;
  if (turns === 0) return [];
  const used = new Set(
    (playDb.prepare('SELECT DISTINCT source_id FROM turn_passages WHERE selected = 1').all() as { source_id: string }[]).map((r) => r.source_id),
  );
  return store
    .listSources()
    .filter((s) => s.enabled && s.lexicalState === 'ready' && !s.alwaysInclude && !used.has(s.id))
    .map((s) => ({
      severity: 'info',
      code: 'never-retrieved',
      message: `no turn has used this ${s.class} source (${turns} turns played): check its headings and tags, or whether it belongs in the campaign`,
      location: { path: s.path, line: 1 },
    }));
}

export interface CampaignHealthInput {
  store: KnowledgeStore;
  /** Conflicts among the campaign's canon (see analyzeConflicts / analyzeStoreConflicts). */
  conflicts: ConflictAnalysis;
  /** play.db, when the campaign has been played; without it retrieval checks are skipped. */
  playDb?: Db;
  alwaysIncludeBudget: number;
  /** The configured embedding model, or null when semantic search is off. */
  embeddingModel: string | null;
}

export interface CampaignHealth {
  findings: HealthFinding[];
  counts: Record<HealthSeverity, number>;
}

const SEVERITY_ORDER: Record<HealthSeverity, number> = { error: 0, warning: 1, info: 2 };

export function campaignHealth(input: CampaignHealthInput): CampaignHealth {
  const sources = input.store.listSources();
  const findings = [
    ...conflictFindings(input.conflicts),
    ...sourceIssueFindings(sources),
    ...unclassifiedFindings(sources),
    ...alwaysIncludeFindings(input.store, input.alwaysIncludeBudget),
    ...embeddingFindings(input.store, input.embeddingModel),
    ...(input.playDb ? neverRetrievedFindings(input.store, input.playDb) : []),
  ].sort(
    (a, b) =>
      SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity] ||
      (a.location?.path ?? '').localeCompare(b.location?.path ?? '') ||
      (a.location?.line ?? 0) - (b.location?.line ?? 0),
  );
  const counts: Record<HealthSeverity, number> = { error: 0, warning: 0, info: 0 };
  for (const f of findings) counts[f.severity]++;
  return { findings, counts };
}
