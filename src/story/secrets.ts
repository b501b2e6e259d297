import { sourceExclusion } from '../knowledge/campaign';
import type { KnowledgeStore } from '../knowledge/indexing';
import { wordRuns } from '../knowledge/retrieval';

/**
 * Words in a row that, copied from a narrator-only file, count as repeating it: long enough that two files
 * rarely share them by chance, short enough to catch a secret's sentence quoted in a new one.
 */
const SECRET_RUN_WORDS = 8;

/**
 * The campaign's narrator-only text (its `visibility: hidden` sources, enabled or not), as runs of words, for
 * asking whether a proposal would put it where the player stage reads it. A run a source the player stage
 * reads holds too is no secret. Built when first asked; visible sources are read only once a
 * proposal repeats a hidden run.
 */
export class NarratorOnlyText {
  /** Each hidden run, with the first hidden file (campaign-relative path) that holds it. */
  private runs: Map<string, string> | undefined;
  private publicRunsDropped = false;

  constructor(private readonly store: KnowledgeStore) {}

  /**
   * The narrator-only file whose text `after` repeats and `before` (what the player's file held until now) did
   * not; undefined when it repeats none.
   */
  repeatedIn(after: string, before: string): string | undefined {
    const runs = (this.runs ??= this.hiddenRuns());
    if (runs.size === 0) return undefined;
    const held = new Set(wordRuns(before, SECRET_RUN_WORDS));
    const repeated = wordRuns(after, SECRET_RUN_WORDS).filter((run) => runs.has(run) && !held.has(run));
    if (repeated.length === 0) return undefined;
    this.dropPublicRuns(runs);
    return repeated.map((run) => runs.get(run)).find((file) => file !== undefined);
  }

  private hiddenRuns(): Map<string, string> {
    const runs = new Map<string, string>();
    for (const source of this.store.listSources()) {
      if (source.visibility !== 'hidden') continue;
      for (const run of wordRuns(this.store.getSourceContent(source.id) ?? '', SECRET_RUN_WORDS)) if (!runs.has(run)) runs.set(run, source.path);
    }
    return runs;
  }

  private dropPublicRuns(runs: Map<string, string>): void {
    if (this.publicRunsDropped) return;
    this.publicRunsDropped = true;
    for (const source of this.store.listSources()) {
      if (sourceExclusion(source, 'player') !== null) continue;
      for (const run of wordRuns(this.store.getSourceContent(source.id) ?? '', SECRET_RUN_WORDS)) runs.delete(run);
    }
  }
}
