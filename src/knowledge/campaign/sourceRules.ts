import type { SourceRecord } from './types';

/**
 * What a source's standing lets retrieval do with it, decided here once for every surface: retrieval,
 * health, the index status, the Sources view and the CLI. Each rule comes twice, for records and as SQL
 * over `sources s` for candidate queries; the unit tests hold both forms to the same answers.
 */

/** Who reads the text: hidden (narrator-only) sources never reach the player. */
export type ReadingStage = 'narrator' | 'player';

/** Why retrieval may not use a source's passages at a stage. */
export type SourceExclusion = 'disabled' | 'not-ready' | 'hidden-for-stage';

export type EligibilityFields = Pick<SourceRecord, 'enabled' | 'lexicalState' | 'visibility'>;

/** Why the source's passages may not be retrieved at `stage`, or null when they may. */
export function sourceExclusion(source: EligibilityFields, stage: ReadingStage): SourceExclusion | null {
  if (!source.enabled) return 'disabled';
  if (source.lexicalState !== 'ready') return 'not-ready';
  if (stage === 'player' && source.visibility === 'hidden') return 'hidden-for-stage';
  return null;
}

/** `sourceExclusion(s, @stage) === null` as SQL; the query binds `@stage`. */
export const ELIGIBLE_SQL = `s.enabled = 1 AND s.lexical_state = 'ready' AND (@stage = 'narrator' OR s.visibility = 'normal')`;

/**
 * Always-include pins a source into every prompt only when it is canon: reference and inspiration are
 * never authoritative, so the flag on them is ignored (and lint says so).
 */
export function isAlwaysIncluded(source: Pick<SourceRecord, 'class' | 'alwaysInclude'>): boolean {
  return source.alwaysInclude && source.class === 'canon';
}

/** `isAlwaysIncluded(s)` as SQL. */
export const ALWAYS_INCLUDED_SQL = `s.always_include = 1 AND s.class = 'canon'`;

/** What always_include does for this source, in words; null when it is not set. */
export function alwaysIncludeStanding(source: Pick<SourceRecord, 'class' | 'alwaysInclude'>): string | null {
  if (!source.alwaysInclude) return null;
  return isAlwaysIncluded(source) ? 'always included' : `always_include ignored (${source.class} is never sent as canon)`;
}

/** A source's standing in the words every surface shows it: "disabled", "hidden", "always included". */
export function standingFlags(source: EligibilityFields & Pick<SourceRecord, 'class' | 'alwaysInclude'>): string[] {
  return [source.enabled ? null : 'disabled', source.visibility === 'hidden' ? 'hidden' : null, alwaysIncludeStanding(source)].filter((f) => f !== null);
}
