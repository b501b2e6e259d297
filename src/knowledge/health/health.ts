import Database from 'better-sqlite3';
import fs from 'node:fs';
import type { Campaign } from '../campaign';
import { type ConflictAnalysis, type ConflictDecision } from '../conflicts';
import { loadConflictDecisions } from '../conflicts';
import { analyzeStoreConflicts } from '../conflicts';
import { KNOWLEDGE_FINDING_PRODUCERS, lintCampaign, summarizeFindings, type Finding, type FindingProducer, type LintContext, type LintOptions, type LintReport } from './lint';
import { DEFAULT_KNOWLEDGE_BUDGETS, rowSelected, type TokenMeasure } from '../retrieval';
import type { Db } from '../indexing';
import type { KnowledgeStore } from '../indexing';
import { ALWAYS_INCLUDED_SQL, CHUNKING_VERSION, ELIGIBLE_SQL, isAlwaysIncluded, sourceExclusion } from '../campaign';

/**
 * Campaign health = lint plus the checks that need more than one file: canon conflicts, the always-include
 * budget, stale or mismatched embeddings, sources no turn ever used. Each is a lint FindingProducer, so
 * `storyteller lint`, the "Check Campaign Health" command and the Problems panel run the same rules.
 */

/** One finding per open conflict, at its first statement; the message names the other. */
export function conflictFindings(analysis: ConflictAnalysis): Finding[] {
  return analysis.openConflicts.map((c) => ({
    severity: 'error',
    code: 'canon-conflict',
    message: `canon contradicts itself: ${c.entity} — ${c.attribute} is "${c.a.value}" here but "${c.b.value}" in ${c.b.path}:${c.b.line}`,
    path: c.a.path,
    line: c.a.line,
    sourceId: c.a.sourceId,
  }));
}

export function conflictProducer(decisions?: ReadonlyMap<string, ConflictDecision>): FindingProducer {
  return ({ store }) => conflictFindings(analyzeStoreConflicts(store, decisions));
}

/**
 * Always-include canon is sent with every turn; more of it than its budget means every prompt loses
 * something, so each such file is named with the sizes. `always_include` on non-canon does nothing.
 * "Sent with every turn" is the campaign's rule, as retrieval pins it: canon, enabled and indexed. With the
 * prompt's `measure`, sizes are what a turn's prompt pays (framed, under the section's heading, in the
 * narrator's calibrated unit), as retrieval counts them; without it (CI, no narrator), the stored estimates.
 */
export function alwaysIncludeProducer(budgetTokens: number, measure?: TokenMeasure): FindingProducer {
  return ({ store, sources }) => {
    const findings: Finding[] = sources
      .filter((s) => s.enabled && s.alwaysInclude && !isAlwaysIncluded(s))
      .map((s) => ({
        severity: 'warning',
        code: 'always-include-not-canon',
        message: `always_include is ignored on ${s.class} sources: only canon is sent with every turn`,
        path: s.path,
        sourceId: s.id,
      }));
    const passages = store.db
      .prepare(
        `SELECT p.id, s.id AS source_id, s.path, s.title, p.class, p.heading_path, p.token_count, p.text, s.visibility, p.start_line, p.end_line
           FROM sources s JOIN passages p ON p.source_id = s.id
          WHERE s.campaign_id = @campaign AND ${ALWAYS_INCLUDED_SQL} AND (${ELIGIBLE_SQL})`,
      )
      .all({ campaign: store.campaignId, stage: 'narrator' }) as (Parameters<typeof rowSelected>[0] & { heading_path: string; token_count: number })[];
    const perSource = new Map<string, { id: string; path: string; tokens: number }>();
    for (const row of passages) {
      const entry = perSource.get(row.source_id) ?? { id: row.source_id, path: row.path, tokens: 0 };
      entry.tokens += measure ? measure.passage(rowSelected(row, JSON.parse(row.heading_path) as string[], row.token_count, null, 'always included')) : row.token_count;
      perSource.set(row.source_id, entry);
    }
    const canon = [...perSource.values()].sort((a, b) => b.tokens - a.tokens || a.path.localeCompare(b.path));
    const heading = measure && canon.length > 0 ? measure.section('alwaysInclude') : 0;
    const total = canon.reduce((sum, r) => sum + r.tokens, heading);
    if (total > budgetTokens) {
      const all = [...canon.map((r) => `${r.path} (${r.tokens})`), ...(heading > 0 ? [`the section's heading (${heading})`] : [])].join(', ');
      const unit = measure ? ' as a prompt sends it' : '';
      for (const r of canon) {
        findings.push({
          severity: 'warning',
          code: 'always-include-over-budget',
          message: `always-include canon is ${total} tokens${unit}, over its ${budgetTokens}-token budget (this file: ${r.tokens}; all: ${all})`,
          path: r.path,
          sourceId: r.id,
        });
      }
    }
    return findings;
  };
}

/**
 * Embeddings that no longer describe their passages: vectors of another size than the model makes now,
 * vectors made for an older chunking, passages with no vector (new or changed since the last embedding
 * run). Vectors are keyed by content, so `embeddingsDb` may be the campaign's real index while the
 * passages come from a throwaway lint index.
 */
export function embeddingProducer(model: string, embeddingsDb?: Db): FindingProducer {
  return ({ store, sources }) => {
    const db = embeddingsDb ?? store.db;
    const modelRow = db.prepare('SELECT dimensions FROM embedding_models WHERE model = ?').get(model) as { dimensions: number } | undefined;
    if (!modelRow) {
      return [{ severity: 'warning', code: 'embedding-missing', message: `semantic search uses ${model} but nothing has been embedded with it yet; index with Ollama reachable`, path: '.' }];
    }
    const lookup = db.prepare('SELECT dimensions, chunking_version FROM embeddings WHERE model = ? AND content_hash = ?');
    const findings: Finding[] = [];
    for (const source of sources) {
      if (sourceExclusion(source, 'narrator')) continue;
      const passages = store.listPassages(source.id);
      let missing = 0;
      let oldChunking = 0;
      let wrongSize = 0;
      for (const p of passages) {
        const vector = lookup.get(model, p.contentHash) as { dimensions: number; chunking_version: number } | undefined;
        if (!vector) missing++;
        else if (vector.dimensions !== modelRow.dimensions) wrongSize++;
        else if (vector.chunking_version !== CHUNKING_VERSION) oldChunking++;
      }
      const at = { path: source.path, sourceId: source.id };
      if (wrongSize > 0) {
        findings.push({
          severity: 'error',
          code: 'embedding-mismatch',
          message: `${wrongSize} of ${passages.length} passages have ${model} vectors of another size than the model makes now (${modelRow.dimensions}); semantic search skips them until re-embedded`,
          ...at,
        });
      }
      if (missing + oldChunking > 0) {
        const why = [missing ? `${missing} never embedded or changed since` : '', oldChunking ? `${oldChunking} embedded for an older chunking` : ''].filter(Boolean).join(', ');
        findings.push({
          severity: 'warning',
          code: 'embedding-stale',
          message: `${missing + oldChunking} of ${passages.length} passages lack a current ${model} vector (${why}); they are found lexically only until reindexed`,
          ...at,
        });
      }
    }
    return findings;
  };
}

export interface RetrievalCount {
  /** Turns whose prompt used the passage. */
  used: number;
  /** Turns whose retrieval considered it, used or not. */
  considered: number;
}

/** How many turns retrieved each passage (play.db turn_passages). */
export function passageRetrievalCounts(playDb: Db, passageIds: readonly string[]): Map<string, RetrievalCount> {
  if (passageIds.length === 0) return new Map();
  const rows = playDb
    .prepare(`SELECT passage_id, sum(selected) AS used, count(*) AS considered FROM turn_passages WHERE passage_id IN (${passageIds.map(() => '?').join(',')}) GROUP BY passage_id`)
    .all(...passageIds) as { passage_id: string; used: number; considered: number }[];
  return new Map(rows.map((r) => [r.passage_id, { used: r.used, considered: r.considered }]));
}

/** Turns that retrieved anything: until one has, "never retrieved" says nothing about a source. */
export function retrievingTurnCount(playDb: Db): number {
  return (playDb.prepare('SELECT count(DISTINCT turn_id) AS n FROM turn_passages').get() as { n: number }).n;
}

/**
 * Sources no turn has used. Only meaningful once something was played, and only about sources retrieval
 * could return (enabled, indexed, not always-included — those are sent without retrieval).
 */
export function neverRetrievedProducer(playDb: Db): FindingProducer {
  return ({ sources }) => {
    if (retrievingTurnCount(playDb) === 0) return [];
    const used = new Set((playDb.prepare('SELECT DISTINCT source_id FROM turn_passages WHERE selected = 1').all() as { source_id: string }[]).map((r) => r.source_id));
    // Only turns played after a source was first indexed could have used it: a file imported after the
    // last turn is not "unused".
    const playedAt = (playDb.prepare('SELECT created_at FROM turns WHERE id IN (SELECT DISTINCT turn_id FROM turn_passages)').all() as { created_at: string }[]).map((r) => Date.parse(r.created_at));
    return sources
      .filter((s) => !sourceExclusion(s, 'narrator') && !isAlwaysIncluded(s) && !used.has(s.id))
      .flatMap((s) => {
        const since = Date.parse(s.importedAt);
        const turns = playedAt.filter((at) => !(at < since)).length;
        if (turns === 0) return [];
        return [{
          severity: 'info' as const,
          code: 'never-retrieved',
          message: `no turn has used this ${s.class} source in the ${turns} turn${turns === 1 ? '' : 's'} played since it was added: check its headings and tags, or whether it belongs here`,
          path: s.path,
          sourceId: s.id,
        }];
      });
  };
}

export interface HealthOptions {
  /** Default: the budget every surface uses (DEFAULT_KNOWLEDGE_BUDGETS). */
  alwaysIncludeBudget?: number;
  /** How a narrator prompt prices a passage (the session's `promptMeasure`); absent: stored estimates. */
  measure?: TokenMeasure;
  /** The embedding model semantic search uses; null or absent: embeddings are not checked. */
  embeddingModel?: string | null;
  /** Where the vectors are, when not in the store being checked (lint's throwaway index). */
  embeddingsDb?: Db;
  /** play.db: conflict decisions and retrieval history. Absent: nothing ignored, retrieval not checked. */
  playDb?: Db;
}

/** Every health rule, in the order a report lists them. */
export function healthProducers(campaignId: string, options: HealthOptions = {}): FindingProducer[] {
  const decisions = options.playDb ? loadConflictDecisions(options.playDb, campaignId) : undefined;
  return [
    ...KNOWLEDGE_FINDING_PRODUCERS,
    conflictProducer(decisions),
    alwaysIncludeProducer(options.alwaysIncludeBudget ?? DEFAULT_KNOWLEDGE_BUDGETS.alwaysInclude, options.measure),
    ...(options.embeddingModel ? [embeddingProducer(options.embeddingModel, options.embeddingsDb)] : []),
    ...(options.playDb ? [neverRetrievedProducer(options.playDb)] : []),
  ];
}

/** Health of an index as it stands (the extension's live index), without re-importing. */
export async function indexHealth(campaign: Campaign, store: KnowledgeStore, options: HealthOptions = {}): Promise<LintReport> {
  const context: LintContext = { campaign, store, sources: store.listSources() };
  const findings: Finding[] = [];
  for (const produce of healthProducers(campaign.id, options)) findings.push(...(await produce(context)));
  return summarizeFindings(campaign.id, findings);
}

/** Opens an existing database without creating or migrating it (reading must never write). */
export function openReadOnly(file: string): Db | undefined {
  if (!fs.existsSync(file)) return undefined;
  return new Database(file, { readonly: true, fileMustExist: true });
}

/**
 * Health for CI (`storyteller lint`): lint's throwaway index of the files as they are now, checked against
 * the campaign's own play.db and embedding cache when they exist. Writes nothing into the campaign.
 */
export async function campaignHealth(
  campaign: Campaign,
  options: Omit<HealthOptions, 'playDb' | 'embeddingsDb'> & Pick<LintOptions, 'parser'> = {},
): Promise<LintReport> {
  const playDb = openReadOnly(campaign.playPath);
  const embeddingsDb = options.embeddingModel ? openReadOnly(campaign.indexPath) : undefined;
  try {
    return await lintCampaign(campaign, {
      ...(options.parser ? { parser: options.parser } : {}),
      producers: healthProducers(campaign.id, { ...options, ...(playDb ? { playDb } : {}), ...(embeddingsDb ? { embeddingsDb } : {}) }),
    });
  } finally {
    playDb?.close();
    embeddingsDb?.close();
  }
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The report in one line: "Westhaven: 1 error, 2 warnings; 3 files use the campaign's default class". */
export function healthSummary(report: LintReport, title: string): string {
  const count = (code: string) => report.findings.filter((f) => f.code === code).length;
  const unclassified = count('unclassified');
  const neverUsed = count('never-retrieved');
  const notes = [
    unclassified ? `${unclassified === 1 ? '1 file uses' : `${unclassified} files use`} the campaign's default class` : '',
    neverUsed ? `${plural(neverUsed, 'source')} no turn has used` : '',
  ].filter(Boolean);
  return `${title}: ${plural(report.errors, 'error')}, ${plural(report.warnings, 'warning')}${notes.length ? `; ${notes.join('; ')}` : ''}`;
}
