import { createHash } from 'node:crypto';
import type { KnowledgeStore } from '../indexing';
import { splitFrontMatter, type Campaign, type SourceTriggers, type WorldInfoFields } from '../campaign';
import { CANDIDATE_COLUMNS, type CandidateRow } from './retrievalRows';
import type { RetrievalQuery, WorldInfoQuery, WorldInfoRecord } from './retrievalTypes';
import { activateWorldInfo, DEFAULT_NAMES, NO_TIMED_EFFECTS, scannedMessage, WORLD_INFO_DEFAULTS, type ActivationEntry, type EntryVerdict } from './worldInfo';

/** A source that carries SillyTavern behaviour: its passages (the entry's text) and its World Info fields. */
export interface WorldInfoSource {
  sourceId: string;
  path: string;
  title: string;
  rows: CandidateRow[];
  fields: WorldInfoFields;
  /** Changes with the entry's text or fields, ending its timed effects as an edit in SillyTavern does. */
  hash: string;
}

const sourcesCache = new WeakMap<KnowledgeStore, { key: string; sources: WorldInfoSource[] }>();

/** The campaign's sources with SillyTavern behaviour, read once per index version (indexVersion, as the search read it). */
export function worldInfoSources(store: KnowledgeStore, version: string): WorldInfoSource[] {
  const cached = sourcesCache.get(store);
  if (cached && cached.key === version) return cached.sources;
  const rows = store
    .statement(
      `SELECT ${CANDIDATE_COLUMNS}, t.triggers AS triggers FROM source_triggers t CROSS JOIN sources s ON s.id = t.source_id
       CROSS JOIN passages p ON p.source_id = s.id
       WHERE t.campaign_id = ? AND json_extract(t.triggers, '$.worldInfo') IS NOT NULL ORDER BY s.path, p.idx`,
    )
    .all(store.campaignId) as (CandidateRow & { triggers: string })[];
  const bySource = new Map<string, WorldInfoSource>();
  for (const { triggers, ...row } of rows) {
    let source = bySource.get(row.source_id);
    if (!source) {
      const fields = (JSON.parse(triggers) as SourceTriggers).worldInfo!;
      source = { sourceId: row.source_id, path: row.path, title: row.title, rows: [], fields, hash: JSON.stringify(fields) };
      bySource.set(row.source_id, source);
    }
    source.rows.push(row);
  }
  const sources = [...bySource.values()]
    .map((s) => ({ ...s, hash: createHash('sha1').update(s.hash).update(s.rows.map((r) => r.content_hash).join(',')).digest('hex').slice(0, 16) }))
    .sort(bookOrder);
  sourcesCache.set(store, { key: version, sources });
  return sources;
}

const folderOf = (path: string): string => path.slice(0, path.lastIndexOf('/') + 1);

/**
 * SillyTavern's book order, which decides between entries of equal order: a book (here its folder) after
 * another, and within one its entries by uid; an entry without one (written by hand) after those, by path.
 */
function bookOrder(a: WorldInfoSource, b: WorldInfoSource): number {
  const [fa, fb] = [folderOf(a.path), folderOf(b.path)];
  if (fa !== fb) return fa < fb ? -1 : 1;
  const [ua, ub] = [a.fields.uid ?? Infinity, b.fields.uid ?? Infinity];
  return ua !== ub ? (ua < ub ? -1 : 1) : a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}

/**
 * The chat of a prompt that brought none (a `context` preview outside play): the query's recent lines and its
 * input, no timed effects, seed 0, the campaign's settings (SillyTavern's defaults when not given), and the
 * knowledge budgets together as the World Info budget.
 */
export function defaultWorldInfoQuery(query: Pick<RetrievalQuery, 'input' | 'recent' | 'budgets'>, campaign: Campaign['worldInfo'] = { ...WORLD_INFO_DEFAULTS, searchAdmits: false }): WorldInfoQuery {
  const { searchAdmits, ...settings } = campaign;
  // Who said each recent line is not known here; the input is the player character's.
  const input = query.input.trim() === '' ? [] : [scannedMessage(DEFAULT_NAMES.user, query.input, settings)];
  const messages = [...(query.recent ?? []).filter((m) => m.trim() !== ''), ...input];
  const b = query.budgets;
  return {
    messages,
    chatLength: messages.length,
    state: NO_TIMED_EFFECTS,
    seed: 0,
    settings,
    budget: b.alwaysInclude + b.canon + b.reference + b.inspiration,
    searchAdmits,
  };
}

const bodies = new WeakMap<KnowledgeStore, Map<string, string>>();

/**
 * An entry's content as SillyTavern holds it: its file's body, byte for byte what an export gives back (the
 * passages strip markdown), kept by source version.
 */
export function entryContent(store: KnowledgeStore, source: WorldInfoSource): string {
  let held = bodies.get(store);
  if (!held) bodies.set(store, (held = new Map()));
  const key = `${source.sourceId}:${source.hash}`;
  let body = held.get(key);
  if (body === undefined) {
    const text = store.getSourceContent(source.sourceId);
    body = text === undefined ? source.rows.map((r) => r.text).join('\n') : splitFrontMatter(text).body;
    if (held.size > 10_000) held.clear();
    held.set(key, body);
  }
  return body;
}

/**
 * SillyTavern's activation over the eligible sources: the record, and each source's verdict. `countTokens`
 * prices an entry's text as the prompt sends it (its passages, the text its file holds, without our frames).
 */
export function activateSources(
  sources: readonly WorldInfoSource[],
  query: WorldInfoQuery,
  countTokens: (text: string) => number,
  contentOf: (source: WorldInfoSource) => string,
): { record: WorldInfoRecord; verdicts: Map<string, EntryVerdict> } {
  const entries: ActivationEntry[] = sources.map((s) => ({
    id: s.sourceId,
    title: s.title,
    hash: s.hash,
    // Read only for an entry the pass prices or recurses into: a big book's others are never read.
    get content() {
      return contentOf(s);
    },
    ...(s.fields.character ? { character: s.fields.character } : {}),
    fields: s.fields,
  }));
  const result = activateWorldInfo({
    entries,
    messages: query.messages,
    chatLength: query.chatLength,
    state: query.state,
    seed: query.seed,
    settings: query.settings,
    budget: query.budget,
    countTokens,
    ...(query.names ? { names: query.names } : {}),
  });
  const paths = new Map(sources.map((s) => [s.sourceId, s.path]));
  return {
    record: {
      seed: query.seed,
      chatLength: query.chatLength,
      budget: result.budget,
      used: result.used,
      state: result.state,
      verdicts: result.verdicts.map((v) => ({ ...v, sourcePath: paths.get(v.id)! })),
    },
    verdicts: new Map(result.verdicts.map((v) => [v.id, v])),
  };
}
