import type { CandidateDecision } from './retrievalTypes';
import { isMeaningfulWord, tokenize } from './retrievalTerms';

// How retrieval results read as text, for every surface that prints them (CLI, previews in the editor).

/** "places/old-abbey.md:9-12 › The Old Abbey › The Crypt" (without the lines when a stored record has none) */
export function locate(p: Pick<CandidateDecision, 'sourcePath' | 'startLine' | 'endLine' | 'headingPath'>): string {
  const lines = p.startLine === undefined ? '' : `:${p.startLine}-${p.endLine}`;
  return [`${p.sourcePath}${lines}`, ...p.headingPath].join(' › ');
}

export function excerpt(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/** The text around the first query word it contains (words as search reads them), on one line. */
export function excerptAround(text: string, query: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const wanted = new Set(tokenize(query).filter(isMeaningfulWord));
  const first = [...flat.matchAll(/\S+/g)].find((m) => tokenize(m[0]).some((word) => wanted.has(word)))?.index ?? 0;
  const start = Math.max(0, first - max / 4);
  const slice = flat.slice(start, start + max);
  return `${start > 0 ? '…' : ''}${slice}${start + max < flat.length ? '…' : ''}`;
}

/** Each outcome of retrieval in the words a writer uses. */
export const OUTCOME_WORDS: Record<CandidateDecision['outcome'], string> = {
  selected: 'used',
  'not-relevant': 'not relevant to this turn',
  'over-budget': 'no room left in its section',
  duplicate: 'repeats a passage that was used',
  'in-state': 'already said by the world state',
  disabled: 'its source is turned off',
  'hidden-for-stage': 'hidden at this stage of the story',
  'not-ready': 'not indexed yet',
};

/** "used · places/old-abbey.md:9-12 › The Crypt: matched 'crypt'; within the canon budget (412/1500 tokens)" */
export function decisionLine(d: CandidateDecision): string {
  return `${OUTCOME_WORDS[d.outcome]} · ${locate(d)}: ${d.reason}`;
}
