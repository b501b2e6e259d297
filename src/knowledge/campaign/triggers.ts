import type { FrontMatter } from './frontMatter';
import { isRegexKey, refusedRegexKeys, regexKeyRefusal } from './patterns';
import { SELECTIVE_LOGIC, type SelectiveLogic, type SourceIssue } from './types';

/**
 * What makes a source eligible by being mentioned, as its front matter declares it: SillyTavern World Info
 * keys with their selective logic and match options (the lorebook import writes exactly these fields), and
 * the names the writer gave it. Retrieval decides what is mentioned; this is the shared vocabulary.
 */

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
  /**
   * Present when the file carries SillyTavern behaviour (a `sillytavern: {entry: …}` map, as a lorebook import
   * writes it): the entry then enters a prompt by SillyTavern's activation rules (worldInfo.ts in retrieval),
   * not by these keys as mentions. Absent in indexes written before it existed.
   */
  worldInfo?: WorldInfoFields;
}

/** One entry's SillyTavern World Info fields, as its activation reads them (SillyTavern's defaults filled in). */
export interface WorldInfoFields {
  /** Every key as written, `/regex/flags` keys included. */
  keys: string[];
  secondaryKeys: string[];
  selectiveLogic: SelectiveLogic;
  /** Null: the campaign's default decides, as SillyTavern's entry default inherits its global setting. */
  caseSensitive: boolean | null;
  matchWholeWords: boolean | null;
  useGroupScoring: boolean | null;
  /** Messages scanned for this entry's keys; null: the campaign's scan depth. */
  scanDepth: number | null;
  constant: boolean;
  order: number;
  /** SillyTavern's numbers: 0 before the character, 1 after it, 2/3 top/bottom of the author's note, 4 at a depth, 5/6 around examples, 7 an outlet. */
  position: number;
  depth: number;
  /** At a depth: 0 system, 1 user, 2 assistant. */
  role: number;
  probability: number;
  useProbability: boolean;
  /** Inclusion groups (SillyTavern's comma-separated `group`). */
  groups: string[];
  groupOverride: boolean;
  groupWeight: number;
  /** Messages; 0 is off. */
  sticky: number;
  cooldown: number;
  delay: number;
  excludeRecursion: boolean;
  preventRecursion: boolean;
  /** 0 off; 1 or more: activated only by recursion, from that recursion level on. */
  delayUntilRecursion: number;
  ignoreBudget: boolean;
  /** Its uid in its book: SillyTavern's book order, which decides between equal orders. Absent in older indexes. */
  uid?: number;
  /** Front matter `character:`: who `{{char}}` is in its keys and text (a card's character); else the narrator. */
  character?: string;
}

const plainMap = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
const numberOr = (value: unknown, fallback: number): number => (typeof value === 'number' && Number.isFinite(value) ? value : fallback);
const flag = (value: unknown): boolean => value === true;
/** A book keys its entries by uid, a number, sometimes written as text. */
const uidOf = (value: unknown): number | undefined => {
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
};

/**
 * The World Info fields of a file whose front matter holds a `sillytavern.entry` map: top-level fields (the
 * writer's edits) win over the kept entry, and a missing or null value behaves as SillyTavern's default does.
 */
export function worldInfoOf(meta: FrontMatter): WorldInfoFields | undefined {
  const entry = plainMap(plainMap(meta.sillytavern)?.entry);
  if (!entry) return undefined;
  const logic = typeof entry.selectiveLogic === 'number' ? SELECTIVE_LOGIC[entry.selectiveLogic] : undefined;
  const groups = typeof entry.group === 'string' ? entry.group.split(',').map((g) => g.trim()).filter(Boolean) : [];
  const delayUntilRecursion = entry.delayUntilRecursion === true ? 1 : Math.max(0, Math.floor(numberOr(entry.delayUntilRecursion, 0)));
  const optionalFlag = (top: boolean | undefined, kept: unknown): boolean | null => top ?? (typeof kept === 'boolean' ? kept : null);
  return {
    keys: (meta.keys ?? []).filter((k) => k.trim() !== ''),
    secondaryKeys: (meta.secondary_keys ?? []).filter((k) => k.trim() !== ''),
    selectiveLogic: meta.selective_logic ?? logic ?? 'and_any',
    caseSensitive: optionalFlag(meta.case_sensitive, entry.caseSensitive),
    matchWholeWords: optionalFlag(meta.match_whole_words, entry.matchWholeWords),
    useGroupScoring: typeof entry.useGroupScoring === 'boolean' ? entry.useGroupScoring : null,
    scanDepth: typeof entry.scanDepth === 'number' && entry.scanDepth >= 0 ? Math.floor(entry.scanDepth) : null,
    constant: meta.always_include ?? flag(entry.constant),
    order: numberOr(entry.order, 100),
    position: numberOr(entry.position, 0),
    depth: Math.max(0, numberOr(entry.depth, 4)),
    role: numberOr(entry.role, 0),
    probability: Math.min(100, Math.max(0, numberOr(entry.probability, 100))),
    useProbability: entry.useProbability !== false,
    groups,
    groupOverride: flag(entry.groupOverride),
    groupWeight: Math.max(1, numberOr(entry.groupWeight, 100)),
    sticky: Math.max(0, Math.floor(numberOr(entry.sticky, 0))),
    cooldown: Math.max(0, Math.floor(numberOr(entry.cooldown, 0))),
    delay: Math.max(0, Math.floor(numberOr(entry.delay, 0))),
    excludeRecursion: flag(entry.excludeRecursion),
    preventRecursion: flag(entry.preventRecursion),
    delayUntilRecursion,
    ignoreBudget: flag(entry.ignoreBudget),
    ...(uidOf(entry.uid) !== undefined ? { uid: uidOf(entry.uid) } : {}),
    ...(meta.character?.trim() ? { character: meta.character.trim() } : {}),
  };
}

/** A warning for each regex key of the file's World Info entry that never runs, with the reason (lint shows them). */
export function regexKeyIssues(meta: FrontMatter): SourceIssue[] {
  const worldInfo = worldInfoOf(meta);
  if (!worldInfo) return [];
  return refusedRegexKeys([...worldInfo.keys, ...worldInfo.secondaryKeys]).map(({ key, reason }) => ({ severity: 'warning', code: 'regex-key', message: regexKeyRefusal(key, reason) }));
}

/** The triggers a source's front matter declares, or null when it declares none. */
export function triggersOf(meta: FrontMatter): SourceTriggers | null {
  const worldInfo = worldInfoOf(meta);
  const keys = (meta.keys ?? []).filter((k) => k.trim() !== '' && !isRegexKey(k));
  const aliases = (meta.entities ?? []).filter((e) => e.trim() !== '');
  const title = meta.title?.trim() || null;
  if (keys.length === 0 && aliases.length === 0 && title === null && !worldInfo) return null;
  return {
    keys,
    secondaryKeys: (meta.secondary_keys ?? []).filter((k) => k.trim() !== '' && !isRegexKey(k)),
    selectiveLogic: meta.selective_logic ?? 'and_any',
    caseSensitive: meta.case_sensitive ?? false,
    matchWholeWords: meta.match_whole_words ?? false,
    aliases,
    title,
    ...(worldInfo ? { worldInfo } : {}),
  };
}
