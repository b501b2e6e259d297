import { analyzeConflicts, type ConflictAnalysis, type ConflictDecision, type ConflictSourceInput } from './conflicts';
import { factSourceFromSplit } from './factsInput';
import { splitFrontMatter } from './frontMatter';
import type { KnowledgeStore } from './store';

/**
 * Conflict detection over an indexed campaign: the store keeps each source's text as read and its resolved
 * metadata (class from front matter, folder rule or default; title; entities), so nothing is re-read from
 * disk and every surface sees the same sources the index does.
 */
export function conflictInputsFromStore(store: KnowledgeStore): ConflictSourceInput[] {
  const inputs: ConflictSourceInput[] = [];
  for (const source of store.listSources()) {
    if (source.lexicalState !== 'ready') continue;
    const content = store.getSourceContent(source.id);
    if (content === undefined) continue;
    inputs.push(factSourceFromSplit(source.path, content, splitFrontMatter(content), source));
  }
  return inputs;
}

export function analyzeStoreConflicts(store: KnowledgeStore, decisions?: ReadonlyMap<string, ConflictDecision>): ConflictAnalysis {
  return analyzeConflicts(conflictInputsFromStore(store), decisions);
}
