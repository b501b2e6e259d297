import type { FrontMatter } from './frontMatter';
import type { SelectiveLogic } from './types';

/**
 * What makes a source eligible by being mentioned, as its front matter declares it: SillyTavern World Info
 * keys with their selective logic and match options (the lorebook import writes exactly these fields), and
 * the names the writer gave it. Retrieval decides what is mentioned; this is the shared vocabulary.
 */

/** A regular-expression key (`/pattern/flags`): SillyTavern runs it; here an imported pattern is never run. */
export const isRegexKey = (key: string): boolean => /^\/(.+)\/([dgimsuvy]*)$/s.test(key);

export interface SourceTriggers {
  /** Any one of these mentioned makes the source eligible (subject to the secondary keys). */
  keys: string[];
  secondaryKeys: string[];
  selectiveLogic: SelectiveLogic;
  /** SillyTavern's defaults when the entry leaves them unset: case-insensitive, matched inside words too. */
  caseSensitive: boolean;
  matchWholeWords: boolean;
  /** Front matter `entities:`: names the writer says the source is about, matched as whole words. */
  aliases: string[];
  /** Front matter `title:` (only a canon title names a story entity; retrieval checks the class). */
  title: string | null;
}

/** The triggers a source's front matter declares, or null when it declares none. */
export function triggersOf(meta: FrontMatter): SourceTriggers | null {
  const keys = (meta.keys ?? []).filter((k) => k.trim() !== '' && !isRegexKey(k));
  const aliases = (meta.entities ?? []).filter((e) => e.trim() !== '');
  const title = meta.title?.trim() || null;
  if (keys.length === 0 && aliases.length === 0 && title === null) return null;
  return {
    keys,
    secondaryKeys: (meta.secondary_keys ?? []).filter((k) => k.trim() !== '' && !isRegexKey(k)),
    selectiveLogic: meta.selective_logic ?? 'and_any',
    caseSensitive: meta.case_sensitive ?? false,
    matchWholeWords: meta.match_whole_words ?? false,
    aliases,
    title,
  };
}
