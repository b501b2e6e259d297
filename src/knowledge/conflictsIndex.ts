import { analyzeConflicts, FactCache, type ConflictAnalysis, type ConflictDecision, type ConflictSourceInput } from './conflicts';
import { buildEntityNames, type EntityNames, type FactStatement } from './facts';
import { factSourceFromSplit } from './factsInput';
import { splitFrontMatter } from './frontMatter';
import type { KnowledgeStore } from './store';
import type { SourceRecord } from './types';

/**
 * Conflict detection over an indexed campaign: the store keeps each source's text as read and its resolved
 * metadata (class from front matter, folder rule or default; title; entities), so nothing is re-read from
 * disk and every surface sees the same sources the index does.
 */

function analyzedSources(store: KnowledgeStore): SourceRecord[] {
  return store.listSources().filter((s) => s.lexicalState === 'ready');
}

function conflictInputOf(store: KnowledgeStore, source: SourceRecord): ConflictSourceInput | undefined {
  const content = store.getSourceContent(source.id);
  return content === undefined ? undefined : factSourceFromSplit(source.path, content, splitFrontMatter(content), source);
}

export function conflictInputsFromStore(store: KnowledgeStore): ConflictSourceInput[] {
  return analyzedSources(store).flatMap((source) => conflictInputOf(store, source) ?? []);
}

export function analyzeStoreConflicts(store: KnowledgeStore, decisions?: ReadonlyMap<string, ConflictDecision>, cache?: FactCache): ConflictAnalysis {
  return analyzeConflicts(conflictInputsFromStore(store), decisions, cache);
}

/**
 * The canon facts of a few sources at a time (the ones a turn retrieved), extracted exactly as the
 * conflict analysis extracts them, without reading the whole campaign's text on every turn: names come
 * from the index's source records, and facts are re-extracted only when a source or a name changed.
 */
export class StoreCanonFacts {
  private readonly cache = new FactCache();

  constructor(private readonly store: KnowledgeStore) {}

  /** Every name declared in the campaign, resolved as the conflict analysis resolves them. */
  names(): EntityNames {
    return buildEntityNames(analyzedSources(this.store));
  }

  /** The source's facts; none for a source that is not enabled, indexed Canon. */
  factsOf(sourceId: string, names: EntityNames): FactStatement[] {
    const source = this.store.getSource(sourceId);
    if (!source || source.class !== 'canon' || !source.enabled || source.lexicalState !== 'ready') return [];
    const input = conflictInputOf(this.store, source);
    return input ? this.cache.factsOf(input, names) : [];
  }
}
