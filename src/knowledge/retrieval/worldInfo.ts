import { regexKey, regexKeyRefusal, type CompiledPattern, type SelectiveLogic, type WorldInfoFields, type WorldInfoSettings } from '../campaign';
import { hasLorebookMacro, substituteLorebookMacros, type MacroNames } from './lorebookMacros';

export { WORLD_INFO_DEFAULTS, type WorldInfoSettings } from '../campaign';

/**
 * SillyTavern's World Info activation (its 1.12+ semantics, learned from its documentation and source, not
 * copied), as a pure function: entries, the chat's messages, the branch's timed effects and a seed in; the
 * entries it would insert, the timed effects after this message, and a plain-words verdict for every entry
 * out. No I/O and no clock: the same input always gives the same output, so a recorded turn shows what it
 * sent and a retry with a new seed rolls again.
 *
 * Time is counted as SillyTavern counts it, in chat messages: `chatLength` is how many the chat holds when
 * the scan runs (the action being played included). An effect that starts at message L with a length of N
 * holds while the chat has fewer than L + N messages.
 */

/** The budget in tokens for a context of this many tokens: its share, at least 1, and never over the cap. */
export function worldInfoBudget(settings: WorldInfoSettings, contextTokens: number): number {
  const share = Math.round((settings.budgetPercent * contextTokens) / 100) || 1;
  return settings.budgetCap > 0 ? Math.min(share, settings.budgetCap) : share;
}

export interface ActivationEntry {
  id: string;
  /** How the writer names it in reasons. */
  title: string;
  /** Changes when the entry does: a timed effect of an edited entry ends, as SillyTavern's does. */
  hash: string;
  /** Its text as written: macros substituted, it is what recursion scans and what the budget prices. */
  content: string;
  /** The character its card named, whom `{{char}}` means in its keys and text (else the narrator). */
  character?: string;
  fields: WorldInfoFields;
}

export interface TimedEffect {
  /** The entry's hash when the effect began. */
  hash: string;
  /** Chat length when it began, and the length from which it no longer holds. */
  start: number;
  end: number;
  /** A cooldown that follows a sticky: it stands even on the message it began. */
  protected: boolean;
}

/** The branch's timed effects by entry id, as they stand after a message. */
export interface TimedState {
  sticky: Record<string, TimedEffect>;
  cooldown: Record<string, TimedEffect>;
}

export const NO_TIMED_EFFECTS: Readonly<TimedState> = Object.freeze({ sticky: {}, cooldown: {} });

export interface ActivationInput {
  entries: readonly ActivationEntry[];
  /** The chat's messages, oldest first; the action being played is the last. */
  messages: readonly string[];
  /** Messages the chat holds (delay and timed effects count these); the number of messages when absent. */
  chatLength?: number;
  state: TimedState;
  seed: number;
  settings: WorldInfoSettings;
  /** Tokens the activated entries may take together (see worldInfoBudget). */
  budget: number;
  /** Tokens of a text as the prompt sends it: an entry is priced on its content, as SillyTavern prices it. */
  countTokens: (text: string) => number;
  /** Who `{{user}}` and `{{char}}` are (an entry's card character aside); absent: the player character and the narrator. */
  names?: ChatNames;
}

/** The chat's two speakers, as the scan's name prefixes and the macros call them. */
export interface ChatNames {
  user: string;
  narrator: string;
}

/** Who speaks when the adventure names no one: the player character and the narrator, as our prompt calls them. */
export const DEFAULT_NAMES: Readonly<ChatNames> = Object.freeze({ user: 'the player character', narrator: 'the narrator' });

/** A message as the scan reads it: `Name: message` when the campaign includes names (SillyTavern's default). */
export function scannedMessage(speaker: string, text: string, settings: Pick<WorldInfoSettings, 'includeNames'>): string {
  return settings.includeNames ? `${speaker}: ${text}` : text;
}

export interface EntryVerdict {
  id: string;
  title: string;
  fired: boolean;
  /** Plain words: "key 'inn' in message 7", "cooling down until message 9", "probability 40%: rolled 63". */
  reason: string;
  /** 0: the first scan; n: the n-th recursion; null: it never got that far. */
  step: number | null;
  position: number;
  order: number;
  depth: number;
  role: number;
  /** Fired entries only: the place in which it was activated (0 first), which orders equal orders in the prompt. */
  activatedAt?: number;
}

export interface ActivationResult {
  /** Entries to insert, in SillyTavern's prompt order (by position, then lower order first, so the highest lands last). */
  activated: EntryVerdict[];
  /** Every entry, fired or not, in the book's order. */
  verdicts: EntryVerdict[];
  state: TimedState;
  budget: number;
  /** Tokens the inserted entries take. */
  used: number;
}

/**
 * Where SillyTavern's prompt holds each position, earliest first: before the character, after it, around the
 * examples, then the chat, where an entry at a depth sits deeper (earlier) the greater its depth and the
 * author's note is near the end; an outlet goes only where a prompt names it, so last here.
 */
const PROMPT_PLACE: Record<number, number> = { 0: 0, 1: 1, 5: 2, 6: 3, 4: 4, 2: 5, 3: 6, 7: 7 };

/**
 * SillyTavern's prompt order of two inserted entries: by position, then depth (deeper first), then order; of
 * equal orders, the one activated later comes first (it puts each entry at the front of its position's list,
 * going through them highest order first, activation order within one order), so a book's ties read in
 * reverse book order.
 */
export function insertionOrder(
  a: Pick<EntryVerdict, 'position' | 'depth' | 'order' | 'activatedAt'>,
  b: Pick<EntryVerdict, 'position' | 'depth' | 'order' | 'activatedAt'>,
): number {
  const place = (v: typeof a) => PROMPT_PLACE[v.position] ?? 7;
  return place(a) - place(b) || (a.position === 4 && b.position === 4 ? b.depth - a.depth : 0) || a.order - b.order || (b.activatedAt ?? 0) - (a.activatedAt ?? 0);
}

/** A 32-bit hash (FNV-1a) of text: the roll of one entry under one seed, never Math.random. */
function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  // A final avalanche, so neighbouring seeds roll unrelated numbers.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A seed fixed by text (a preview's, which shows the same rolls each time it is asked). */
export const seedFromText = (text: string): number => hash32(text) % 2 ** 31;

/** 1–100, as a percent roll reads. */
const roll = (seed: number, what: string): number => (hash32(`${seed}:${what}`) % 100) + 1;

/**
 * A word character as SillyTavern's whole-word test sees one: its `\W` boundary has no `u` flag, so any other
 * character (Chinese, Cyrillic, é) bounds a key, and 宗门 is a whole word inside 我们的宗门很大.
 */
const WORD_CHAR = /[A-Za-z0-9_]/;

export interface KeyRules {
  caseSensitive: boolean;
  matchWholeWords: boolean;
}

/** SillyTavern's test of a plain key: a substring, or with whole words a single word bounded by non-word characters. */
export function plainKeyIn(key: string, text: { raw: string; lower: string }, rules: KeyRules): boolean {
  const needle = rules.caseSensitive ? key.trim() : key.trim().toLowerCase();
  if (needle === '') return false;
  return needleIn(needle, rules.matchWholeWords && !/\s/.test(needle), rules.caseSensitive ? text.raw : text.lower);
}

/** A key as matched (trimmed, lower-cased unless case counts) in the text read the same way; a key with a space is never a single word. */
function needleIn(needle: string, wholeWord: boolean, haystack: string): boolean {
  if (!wholeWord) return haystack.includes(needle);
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) {
    const before = haystack[at - 1];
    const after = haystack[at + needle.length];
    if ((before === undefined || !WORD_CHAR.test(before)) && (after === undefined || !WORD_CHAR.test(after))) return true;
  }
  return false;
}

/** Where the scan reads: each message (1-based number in the chat) and the recursion buffer. */
interface Scanned {
  number: number | null;
  raw: string;
  lower: string;
}

/** What one entry's scan reads, newest first, and the same joined for a quick first look. */
interface Window {
  texts: Scanned[];
  raw: string;
  lower: string;
  /** Where each three characters in a row first stand in the window (raw, lower-cased), built when first asked. */
  grams: { raw?: GramIndex; lower?: GramIndex };
  /** What an entry none of whose keys it holds is told: "no key in the last 2 messages". */
  nothing: string;
}

/**
 * SillyTavern's scan buffer: each text opens with \x01 and the next follows on a new line, so a regular
 * expression tested once over the whole of it never sees a message start as `^` (its `^` is the \x01).
 */
const OPENS = '\u0001';
function windowOf(texts: Scanned[]): Window {
  const raw = texts.length > 0 ? OPENS + texts.map((t) => t.raw).join(`\n${OPENS}`) : '';
  return { texts, raw, lower: raw.toLowerCase(), grams: {}, nothing: '' };
}

/**
 * Three characters in a row as one small number (ten bits of each), so an index of them holds no strings.
 * Characters past the first 1,024 may share a number; the exact comparison that follows tells them apart.
 */
const gramAt = (text: string, i: number): number => ((text.charCodeAt(i) & 1023) << 20) | ((text.charCodeAt(i + 1) & 1023) << 10) | (text.charCodeAt(i + 2) & 1023);

/**
 * Where each three-character run first stands in the text: a table of runs and places addressed by the run's
 * hash (twice the text's length, so probes stay short), which a pass builds and reads without a Map's cost.
 */
interface GramIndex {
  runs: Int32Array;
  /** The run's first place + 1; 0 marks an empty slot. */
  places: Int32Array;
  shift: number;
}

function gramIndex(text: string): GramIndex {
  let bits = 6;
  while (1 << bits < text.length * 2) bits++;
  const index = { runs: new Int32Array(1 << bits), places: new Int32Array(1 << bits), shift: 32 - bits };
  const mask = (1 << bits) - 1;
  for (let i = 0; i + 3 <= text.length; i++) {
    const g = gramAt(text, i);
    for (let slot = Math.imul(g, 0x9e3779b1) >>> index.shift; ; slot = (slot + 1) & mask) {
      if (index.places[slot] === 0) {
        index.runs[slot] = g;
        index.places[slot] = i + 1;
        break;
      }
      if (index.runs[slot] === g) break;
    }
  }
  return index;
}

/** Where the run first stands, or -1. */
function firstPlace(index: GramIndex, g: number): number {
  const mask = index.places.length - 1;
  for (let slot = Math.imul(g, 0x9e3779b1) >>> index.shift; ; slot = (slot + 1) & mask) {
    const place = index.places[slot]!;
    if (place === 0) return -1;
    if (index.runs[slot] === g) return place - 1;
  }
}

/**
 * Whether the window holds the key, as `includes` would say, without reading the whole window for each key of
 * a big book: a key is there only where each of its three-character runs is, so a missing run rules it out,
 * and the search starts no earlier than the latest first place of any of its runs allows.
 */
function windowHolds(window: Window, k: Key, caseSensitive: boolean): boolean {
  const text = caseSensitive ? window.raw : window.lower;
  if (k.grams.length === 0) return text.includes(k.needle);
  const index = caseSensitive ? (window.grams.raw ??= gramIndex(text)) : (window.grams.lower ??= gramIndex(text));
  let from = 0;
  for (let i = 0; i < k.grams.length; i++) {
    const first = firstPlace(index, k.grams[i]!);
    if (first === -1) return false;
    from = Math.max(from, first - i);
  }
  return text.indexOf(k.needle, from) !== -1;
}

interface Key {
  key: string;
  /** The key as matched: trimmed, and lower-cased unless case counts. */
  needle: string;
  /** The needle's three-character runs (see gramAt), in order; none when it is shorter. */
  grams: number[];
  /** Matched as a whole word: the entry asks for whole words and the key holds no space. */
  wholeWord: boolean;
  /** A `/pattern/flags` key compiled by the one door for patterns from files; null for a plain key. */
  regex: CompiledPattern | null;
}

/** An entry's keys, compiled for its key rules and names. */
interface Prepared {
  rules: KeyRules;
  /** The names its macros were substituted with; null when its keys hold no macro, so no names change them. */
  names: string | null;
  keys: Key[];
  secondary: Key[];
  /** "; regex key not run: /(a)\1/ uses a backreference \1, …" for each key that never runs, or nothing. */
  refused: string;
}

/**
 * Keys compiled once per entry version (its fields object, which the index keeps until the book changes) and
 * key rules: the pass then only looks them up, however many turns and recursion steps ask.
 */
const compiled = new WeakMap<WorldInfoFields, Prepared>();

/** The names an entry's macros are substituted with, as one string to compare with those its keys were compiled for. */
const namesSignature = (names: MacroNames): string => `${names.user}\u0000${names.char}`;

function prepare(f: WorldInfoFields, settings: WorldInfoSettings, names: MacroNames, signature: string): Prepared {
  const caseSensitive = f.caseSensitive ?? settings.caseSensitive;
  const matchWholeWords = f.matchWholeWords ?? settings.matchWholeWords;
  let c = compiled.get(f);
  if (!c || c.rules.caseSensitive !== caseSensitive || c.rules.matchWholeWords !== matchWholeWords || (c.names !== null && c.names !== signature)) {
    // SillyTavern substitutes its macros in each key before it looks for it: `{{user}}` is the persona's name.
    const keyed = (written: readonly string[]): Key[] =>
      written.flatMap((original) => {
        const key = substituteLorebookMacros(original, names);
        if (key.trim() === '') return [];
        const needle = caseSensitive ? key.trim() : key.trim().toLowerCase();
        const grams = Array.from({ length: Math.max(0, needle.length - 2) }, (_, i) => gramAt(needle, i));
        return [{ key, needle, grams, wholeWord: matchWholeWords && !/\s/.test(needle), regex: regexKey(key) }];
      });
    const keys = keyed(f.keys);
    const secondary = keyed(f.secondaryKeys);
    const refused = [...keys, ...secondary].flatMap((k) => (k.regex && 'refused' in k.regex ? [`; ${regexKeyRefusal(k.key, k.regex.refused)}`] : []));
    const named = [...f.keys, ...f.secondaryKeys].some(hasLorebookMacro);
    c = { rules: { caseSensitive, matchWholeWords }, names: named ? signature : null, keys, secondary, refused: refused.join('') };
    compiled.set(f, c);
  }
  return c;
}

/** A key's test of one text (a message, or the whole scan buffer); false for a pattern the door refused. */
function keyIn(k: Key, text: { raw: string; lower: string }, rules: KeyRules): boolean {
  if (k.regex) return 'pattern' in k.regex && k.regex.pattern.test(text.raw, text.lower);
  return needleIn(k.needle, k.wholeWord, rules.caseSensitive ? text.raw : text.lower);
}

/** Whether the key may be in the window: one search of the whole window rules out most keys of a big book at once. */
const mayHold = (k: Key, window: Window, rules: KeyRules): boolean => (k.regex ? keyIn(k, window, rules) : windowHolds(window, k, rules.caseSensitive));

/**
 * The first of the keys found, and where: a plain key in one text, a regular expression over the whole scan
 * buffer, tested once as SillyTavern tests it (a match no single text holds is said to be in the scanned text).
 */
function findKey(keys: readonly Key[], window: Window, rules: KeyRules): { key: string; where: Scanned | null } | null {
  // Most entries of a big book have no key in the window: they are told so without a list being built.
  let first = 0;
  while (first < keys.length && !mayHold(keys[first]!, window, rules)) first++;
  if (first === keys.length) return null;
  const possible = [keys[first]!, ...keys.slice(first + 1).filter((k) => mayHold(k, window, rules))];
  for (const text of window.texts) for (const k of possible) if (keyIn(k, text, rules)) return { key: k.key, where: text };
  const pattern = possible.find((k) => k.regex);
  return pattern ? { key: pattern.key, where: null } : null;
}

/** Keys found in the window; a regular expression is tested over the whole buffer. */
const countFound = (keys: readonly Key[], window: Window, rules: KeyRules): number =>
  keys.filter((k) => mayHold(k, window, rules) && (k.regex !== null || window.texts.some((t) => keyIn(k, t, rules)))).length;

function secondaryAllows(logic: SelectiveLogic, found: number, total: number): boolean {
  switch (logic) {
    case 'and_any':
      return found > 0;
    case 'and_all':
      return found === total;
    case 'not_any':
      return found === 0;
    case 'not_all':
      return found < total;
  }
}

const LOGIC_WORDS: Record<SelectiveLogic, string> = { and_any: 'AND ANY', and_all: 'AND ALL', not_any: 'NOT ANY', not_all: 'NOT ALL' };

/** Group scoring: a point per primary key found, and per secondary key under AND ANY (all of them under AND ALL). */
function groupScore(p: Prepared, logic: SelectiveLogic, window: Window): number {
  const primary = countFound(p.keys, window, p.rules);
  if (p.secondary.length === 0) return primary;
  const secondary = countFound(p.secondary, window, p.rules);
  if (logic === 'and_any') return primary + secondary;
  if (logic === 'and_all') return primary + (secondary === p.secondary.length ? secondary : 0);
  return primary;
}

const where = (s: Scanned | null): string => (s === null ? 'the scanned text' : s.number === null ? 'the text of an entry already activated' : `message ${s.number}`);

/** "sticky: 3 more messages" */
const more = (n: number, what: string): string => `${n} more ${what}${n === 1 ? '' : 's'}`;

/** The last book sorted, by its entries' fields objects (one per entry version), and its order. */
let lastSorted: { fields: WorldInfoFields[]; order: number[] } | null = null;

/**
 * SillyTavern sorts a book by order, highest first; equal orders keep the book's own order. A book whose
 * entries did not change since the last pass (the same fields, in the same places) takes the same order
 * without sorting again.
 */
function byOrder(entries: readonly ActivationEntry[]): ActivationEntry[] {
  const last = lastSorted;
  if (!last || last.fields.length !== entries.length || entries.some((e, i) => e.fields !== last.fields[i])) {
    const order = entries.map((_, i) => i).sort((a, b) => entries[b]!.fields.order - entries[a]!.fields.order || a - b);
    lastSorted = { fields: entries.map((e) => e.fields), order };
  }
  return lastSorted!.order.map((i) => entries[i]!);
}

/** Runs SillyTavern's activation over one message. */
export function activateWorldInfo(input: ActivationInput): ActivationResult {
  const { settings, seed } = input;
  const chatLength = input.chatLength ?? input.messages.length;
  const entries = byOrder(input.entries);
  // Only the entries a timed effect names are looked up by id.
  const timed = new Set([...Object.keys(input.state.sticky), ...Object.keys(input.state.cooldown)]);
  const byId = new Map<string, ActivationEntry>();
  if (timed.size > 0) for (const e of entries) if (timed.has(e.id)) byId.set(e.id, e);
  const verdicts = new Map<string, EntryVerdict>();
  const verdict = (e: ActivationEntry, fired: boolean, reason: string, step: number | null): void => {
    const f = e.fields;
    verdicts.set(e.id, { id: e.id, title: e.title, fired, reason, step, position: f.position, order: f.order, depth: f.depth, role: f.role });
  };

  // Timed effects as they stand at this message: ended ones removed, an ended sticky's cooldown begun.
  const state: TimedState = { sticky: {}, cooldown: {} };
  const stickyNow = new Map<string, TimedEffect>();
  const coolingNow = new Map<string, TimedEffect>();
  const endedSticky = new Set<string>();
  for (const [id, effect] of Object.entries(input.state.sticky)) {
    const entry = byId.get(id);
    // A chat that did not move past the effect's start was rewound (SillyTavern drops it the same way).
    if (chatLength <= effect.start && !effect.protected) continue;
    if (!entry) {
      if (chatLength < effect.end) state.sticky[id] = effect;
      continue;
    }
    if (entry.hash !== effect.hash || entry.fields.sticky === 0) continue;
    if (chatLength >= effect.end) {
      endedSticky.add(id);
      if (entry.fields.cooldown > 0) state.cooldown[id] = { hash: entry.hash, start: chatLength, end: chatLength + entry.fields.cooldown, protected: true };
      continue;
    }
    state.sticky[id] = effect;
    stickyNow.set(id, effect);
  }
  for (const [id, effect] of Object.entries(input.state.cooldown)) {
    if (state.cooldown[id]) continue;
    const entry = byId.get(id);
    if (chatLength <= effect.start && !effect.protected) continue;
    if (!entry) {
      if (chatLength < effect.end) state.cooldown[id] = effect;
      continue;
    }
    if (entry.hash !== effect.hash || entry.fields.cooldown === 0 || chatLength >= effect.end) continue;
    state.cooldown[id] = effect;
  }
  for (const [id, effect] of Object.entries(state.cooldown)) if (byId.has(id)) coolingNow.set(id, effect);

  const names = input.names ?? DEFAULT_NAMES;
  // Most entries name no card character: they share one set of names, built once a pass.
  const narratorNames: MacroNames = { user: names.user, char: names.narrator };
  const narratorSignature = namesSignature(narratorNames);
  const macroNames = (e: ActivationEntry): MacroNames => (e.character === undefined ? narratorNames : { user: names.user, char: e.character });
  const preparedOf = (e: ActivationEntry): Prepared => {
    const n = macroNames(e);
    return prepare(e.fields, settings, n, n === narratorNames ? narratorSignature : namesSignature(n));
  };

  // SillyTavern trims each message it scans.
  const messages: Scanned[] = input.messages.map((text, i) => {
    const raw = text.trim();
    return { number: chatLength - input.messages.length + i + 1, raw, lower: raw.toLowerCase() };
  });
  const recursion: Scanned[] = [];
  const activated = new Map<string, { entry: ActivationEntry; step: number }>();
  const failedRoll = new Set<string>();
  const groupsWon = new Set<string>();
  let used = 0;
  /** Tokens of the text earlier passes gave recursion: SillyTavern counts it, not what preventRecursion kept out, against each later pass. */
  let carried = 0;
  let overflowed = false;
  let skew = 0;
  const levels = [...new Set(entries.map((e) => e.fields.delayUntilRecursion).filter((n) => n > 0))].sort((a, b) => a - b);
  let level = levels.shift() ?? 0;
  let mode: 'initial' | 'recursion' | 'min-activations' = 'initial';
  let step = 0;
  // An entry's own scan depth stays as it is while min activations widens the campaign's.
  const depthOf = (f: WorldInfoFields): number => f.scanDepth ?? settings.scanDepth + skew;
  // Most entries scan as deep as the campaign says: each window (its depth, and what recursion has added) is
  // built once, and a pass that adds nothing to scan reuses it.
  // By how much of the recursion text they hold, then by depth: every entry asks, so no key is built to look.
  const windows = new Map<number, Map<number, Window>>();
  const windowAt = (depth: number): Window => {
    // A depth of 0 scans nothing, the activated entries' text included, as SillyTavern's buffer gives it.
    const spread = mode === 'min-activations' || depth <= 0 ? 0 : recursion.length;
    let byDepth = windows.get(spread);
    if (!byDepth) windows.set(spread, (byDepth = new Map()));
    let w = byDepth.get(depth);
    if (!w) {
      w = windowOf([...(depth > 0 ? messages.slice(-depth).reverse() : []), ...recursion.slice(0, spread)]);
      w.nothing = `no key in the last ${depth === 1 ? 'message' : `${depth} messages`}${spread > 0 ? ' or activated entries' : ''}`;
      byDepth.set(depth, w);
    }
    return w;
  };
  const contentOf = new Map<string, { text: string; tokens: number }>();
  const insertedContent = (e: ActivationEntry) => {
    let c = contentOf.get(e.id);
    if (!c) {
      const text = substituteLorebookMacros(e.content, macroNames(e));
      // Each entry is inserted on its own line.
      c = { text, tokens: input.countTokens(`${text}\n`) };
      contentOf.set(e.id, c);
    }
    return c;
  };
  for (let pass = 0; ; pass++) {
    if (settings.maxRecursionSteps > 0 && pass >= settings.maxRecursionSteps) break;
    const now: { entry: ActivationEntry; why: string; sticky: boolean }[] = [];
    for (const entry of entries) {
      const id = entry.id;
      const f = entry.fields;
      if (failedRoll.has(id) || activated.has(id)) continue;
      const sticky = stickyNow.get(id);
      if (f.delay > 0 && chatLength < f.delay) {
        verdict(entry, false, `waits for message ${f.delay} (delay ${f.delay}; the chat holds ${chatLength})`, null);
        continue;
      }
      const cooling = coolingNow.get(id);
      if (cooling && !sticky) {
        verdict(entry, false, `cooling down until message ${cooling.end}${endedSticky.has(id) ? ' (its sticky just ended)' : ''}`, null);
        continue;
      }
      if (!sticky && f.delayUntilRecursion > 0 && (mode !== 'recursion' || f.delayUntilRecursion > level)) {
        verdict(entry, false, `only recursion activates it${f.delayUntilRecursion > 1 ? ` (from recursion level ${f.delayUntilRecursion})` : ''}`, null);
        continue;
      }
      if (!sticky && mode === 'recursion' && settings.recursive && f.excludeRecursion) continue;
      if (f.constant) {
        now.push({ entry, why: 'constant (always active)', sticky: false });
        continue;
      }
      if (sticky) {
        now.push({ entry, why: `sticky: ${more(sticky.end - chatLength - 1, 'message')} after this one`, sticky: true });
        continue;
      }
      const p = preparedOf(entry);
      if (p.keys.length === 0) {
        verdict(entry, false, 'it has no keys and is not constant', null);
        continue;
      }
      const window = windowAt(depthOf(f));
      const found = findKey(p.keys, window, p.rules);
      if (!found) {
        verdict(entry, false, `${window.nothing}${p.refused}`, null);
        continue;
      }
      let why = `key '${found.key}' in ${where(found.where)}`;
      if (p.secondary.length > 0) {
        const count = countFound(p.secondary, window, p.rules);
        if (!secondaryAllows(f.selectiveLogic, count, p.secondary.length)) {
          verdict(entry, false, `${why}, but its secondary keys fail ${LOGIC_WORDS[f.selectiveLogic]} (${count} of ${p.secondary.length} found)${p.refused}`, null);
          continue;
        }
        why += ` with secondary keys ${LOGIC_WORDS[f.selectiveLogic]} (${count} of ${p.secondary.length} found)`;
      }
      now.push({ entry, why: `${why}${p.refused}`, sticky: false });
    }
    // Stickies first, then the book's order.
    now.sort((a, b) => Number(b.sticky) - Number(a.sticky));

    const winners = inclusionGroups(now, groupsWon, (e) => stickyNow.has(e.id), settings, preparedOf, windowAt, depthOf, seed, step, verdict);

    // SillyTavern prices the pass's new entries together, on top of what earlier passes gave recursion, and
    // stops at the first that brings the total to the budget.
    let pending = 0;
    const accepted: ActivationEntry[] = [];
    for (const { entry, why, sticky } of winners) {
      const f = entry.fields;
      let reason = why;
      if (!sticky && f.useProbability && f.probability < 100) {
        const rolled = roll(seed, `${entry.id}:probability`);
        if (rolled > f.probability) {
          failedRoll.add(entry.id);
          verdict(entry, false, `${why}; probability ${f.probability}%: rolled ${rolled}`, step);
          continue;
        }
        reason += `; probability ${f.probability}%: rolled ${rolled}`;
      }
      if (overflowed && !f.ignoreBudget) {
        verdict(entry, false, `${reason}; the World Info budget (${input.budget} tokens) was already full`, step);
        continue;
      }
      const { tokens } = insertedContent(entry);
      if (!f.ignoreBudget) {
        const total = carried + pending + tokens;
        if (total >= input.budget) {
          overflowed = true;
          verdict(entry, false, `${reason}; over the World Info budget (${total}/${input.budget} tokens: SillyTavern stops when the total reaches it)`, step);
          continue;
        }
        pending += tokens;
      }
      used += tokens;
      if (f.ignoreBudget && used > input.budget) reason += '; ignores the budget';
      if (step > 0) reason += ` (recursion step ${step})`;
      verdict(entry, true, reason, step);
      verdicts.get(entry.id)!.activatedAt = activated.size;
      activated.set(entry.id, { entry, step });
      for (const g of f.groups) groupsWon.add(g);
      accepted.push(entry);
    }

    // What the next pass is, as SillyTavern decides it.
    const spreading = accepted.filter((e) => !e.fields.preventRecursion);
    const wasMinActivations = mode === 'min-activations';
    let next: 'recursion' | 'min-activations' | 'level' | null = null;
    if (settings.recursive && !overflowed && (spreading.length > 0 || (wasMinActivations && recursion.length > 0))) next = 'recursion';
    if (!next && !overflowed && settings.minActivations > 0 && activated.size < settings.minActivations) {
      // It widens while the depth it scanned is within the widest allowed, so the last scan reaches one past it.
      const depth = settings.scanDepth + skew;
      if (!(settings.minActivationsDepthMax > 0 && depth > settings.minActivationsDepthMax) && depth <= messages.length) next = 'min-activations';
    }
    // Entries that wait for a recursion level get their pass after the rest, recursion on or off.
    if (!next && levels.length > 0) next = 'level';
    if (!next) break;
    if (spreading.length > 0) {
      const text = spreading.map((e) => insertedContent(e).text).join('\n');
      recursion.push({ number: null, raw: text, lower: text.toLowerCase() });
      carried += input.countTokens(`${text}\n`);
    }
    if (next === 'min-activations') {
      skew++;
      mode = 'min-activations';
      continue;
    }
    if (next === 'level') level = levels.shift()!;
    mode = 'recursion';
    step++;
  }

  // New timed effects start with this message; one already running is not renewed.
  for (const { entry } of activated.values()) {
    const f = entry.fields;
    if (f.sticky > 0 && !state.sticky[entry.id]) state.sticky[entry.id] = { hash: entry.hash, start: chatLength, end: chatLength + f.sticky, protected: false };
    if (f.cooldown > 0 && !state.cooldown[entry.id]) state.cooldown[entry.id] = { hash: entry.hash, start: chatLength, end: chatLength + f.cooldown, protected: false };
  }
  for (const [id, effect] of Object.entries(state.sticky)) {
    const v = verdicts.get(id);
    if (v?.fired && effect.start === chatLength) v.reason += `; sticky: stays for ${more(effect.end - chatLength - 1, 'message')}`;
  }

  const all = input.entries.map((e) => verdicts.get(e.id) ?? { id: e.id, title: e.title, fired: false, reason: 'not scanned', step: null, position: e.fields.position, order: e.fields.order, depth: e.fields.depth, role: e.fields.role });
  const inserted = all.filter((v) => v.fired).sort(insertionOrder);
  return { activated: inserted, verdicts: all, state, budget: input.budget, used };
}

type Candidate = { entry: ActivationEntry; why: string; sticky: boolean };

/**
 * One winner per inclusion group: a group a sticky member holds keeps it; a group already won in an earlier
 * pass takes no more; scoring keeps the members matching most keys; an override member wins on order;
 * otherwise a weighted roll. Losers get their verdict here.
 */
function inclusionGroups(
  candidates: Candidate[],
  won: ReadonlySet<string>,
  isSticky: (e: ActivationEntry) => boolean,
  settings: WorldInfoSettings,
  preparedOf: (e: ActivationEntry) => Prepared,
  windowAt: (depth: number) => Window,
  depthOf: (f: WorldInfoFields) => number,
  seed: number,
  step: number,
  verdict: (e: ActivationEntry, fired: boolean, reason: string, step: number | null) => void,
): Candidate[] {
  const out = new Set(candidates);
  const names = [...new Set(candidates.flatMap((c) => c.entry.fields.groups))];
  for (const name of names) {
    let members = candidates.filter((c) => out.has(c) && c.entry.fields.groups.includes(name));
    if (members.length === 0) continue;
    const lose = (c: Candidate, why: string) => {
      out.delete(c);
      verdict(c.entry, false, `${c.why}; group ${name}: ${why}`, step);
    };
    if (won.has(name)) {
      for (const c of members) lose(c, 'another member already activated in an earlier pass');
      continue;
    }
    if (members.length === 1) continue;
    const stickies = members.filter((c) => isSticky(c.entry));
    if (stickies.length > 0) {
      for (const c of members) if (!stickies.includes(c)) lose(c, `${stickies[0]!.entry.title} holds the group (sticky)`);
      members = stickies;
      if (members.length === 1) continue;
    }
    const scored = members.filter((c) => c.entry.fields.useGroupScoring ?? settings.useGroupScoring);
    if (scored.length > 0) {
      const score = (c: Candidate) => {
        const f = c.entry.fields;
        return groupScore(preparedOf(c.entry), f.selectiveLogic, windowAt(depthOf(f)));
      };
      const scores = new Map(scored.map((c) => [c, score(c)]));
      const best = Math.max(...scores.values());
      for (const [c, s] of scores) if (s < best) lose(c, `matched ${s} key${s === 1 ? '' : 's'}, fewer than the best member's ${best} (group scoring)`);
      members = members.filter((c) => out.has(c));
      if (members.length === 1) continue;
    }
    const overrides = members.filter((c) => c.entry.fields.groupOverride);
    if (overrides.length > 0) {
      // The highest order among the prioritized members; the book's order breaks a tie.
      const winner = overrides.reduce((a, b) => (b.entry.fields.order > a.entry.fields.order ? b : a));
      for (const c of members) if (c !== winner) lose(c, `${winner.entry.title} won on order (prioritized, order ${winner.entry.fields.order})`);
      winner.why += `; group ${name}: won on order`;
      continue;
    }
    const total = members.reduce((n, c) => n + c.entry.fields.groupWeight, 0);
    const rolled = (hash32(`${seed}:group:${name}:${step}`) % total) + 1;
    let at = 0;
    const winner = members.find((c) => (at += c.entry.fields.groupWeight) >= rolled)!;
    for (const c of members) if (c !== winner) lose(c, `${winner.entry.title} won the weighted roll (${rolled} of ${total})`);
    winner.why += `; group ${name}: won the weighted roll (${rolled} of ${total})`;
  }
  return candidates.filter((c) => out.has(c));
}
