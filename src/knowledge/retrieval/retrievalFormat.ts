import type { CandidateDecision, SelectedPassage } from './retrievalTypes';

// How retrieval results read as text, for every surface that prints them (CLI, previews in the editor).

/** "places/old-abbey.md:9-12 › The Old Abbey › The Crypt" */
export function locate(p: Pick<SelectedPassage, 'sourcePath' | 'startLine' | 'endLine' | 'headingPath'>): string {
  return [`${p.sourcePath}:${p.startLine}-${p.endLine}`, ...p.headingPath].join(' › ');
}

export function excerpt(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

export function decisionLine(d: CandidateDecision): string {
  return `${d.outcome.padEnd(16)} ${[d.sourcePath, ...d.headingPath].join(' › ')}: ${d.reason}`;
}
