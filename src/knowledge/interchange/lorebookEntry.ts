import { SELECTIVE_LOGIC, isRegexKey, type SelectiveLogic } from '../campaign';

/**
 * One SillyTavern World Info entry ↔ the front matter of one campaign file. Import and export share this
 * mapping, so an untouched import exports the same entry. The fields the product uses itself go to the top
 * level under the names agreed with retrieval (`keys`, `secondary_keys`, `selective_logic`, `case_sensitive`,
 * `match_whole_words`, plus `title`, `always_include`, `enabled`); the entry text is the body; every other
 * field stays verbatim under `sillytavern.entry`, and the book's name and settings under `sillytavern.book`.
 * On export a top-level value wins over the kept one, so an edit in the file is what SillyTavern gets.
 */

export type WorldInfoEntry = Record<string, unknown>;

/**
 * SillyTavern's template for a new entry (newWorldInfoEntryDefinition): what it fills in for a missing field
 * when it loads a book, so a missing field and its default behave the same.
 */
export const WORLD_INFO_ENTRY_DEFAULTS: Readonly<WorldInfoEntry> = {
  key: [],
  keysecondary: [],
  comment: '',
  content: '',
  constant: false,
  vectorized: false,
  selective: true,
  selectiveLogic: 0,
  addMemo: false,
  order: 100,
  position: 0,
  disable: false,
  ignoreBudget: false,
  excludeRecursion: false,
  preventRecursion: false,
  matchPersonaDescription: false,
  matchCharacterDescription: false,
  matchCharacterPersonality: false,
  matchCharacterDepthPrompt: false,
  matchScenario: false,
  matchCreatorNotes: false,
  delayUntilRecursion: 0,
  probability: 100,
  useProbability: true,
  depth: 4,
  outletName: '',
  group: '',
  groupOverride: false,
  groupWeight: 100,
  scanDepth: null,
  caseSensitive: null,
  matchWholeWords: null,
  useGroupScoring: null,
  automationId: '',
  role: 0,
  sticky: null,
  cooldown: null,
  delay: null,
  triggers: [],
};

/** Where an entry field lives in the campaign file: a front matter path, or `body`. */
export type Placement = string;

export interface EntryFrontMatter {
  /** Top-level front matter fields, in the order they are written. */
  fields: Record<string, unknown>;
  /** Fields kept only for export, verbatim (`sillytavern.entry`). */
  kept: WorldInfoEntry;
  /** Where each field of the entry went. */
  placement: Record<string, Placement>;
}

const oneLine = (text: string): string => text.replace(/\s+/g, ' ').trim();

const stringArray = (value: unknown): string[] | undefined =>
  Array.isArray(value) && value.every((v) => typeof v === 'string') ? (value as string[]) : undefined;

/**
 * The title a file gets for an entry: its comment on one line, else its first plain key, else `Entry <id>`.
 * Export calls it too, to tell an untouched title (the comment goes back verbatim) from a renamed one.
 */
export function entryTitle(comment: unknown, keys: readonly string[], sourceId: string): string {
  return (typeof comment === 'string' && oneLine(comment)) || keys.map(oneLine).find((k) => k && !isRegexKey(k)) || `Entry ${sourceId}`;
}

const MINOR_WORDS = new Set(['a', 'an', 'and', 'at', 'by', 'for', 'in', 'of', 'on', 'or', 'the', 'to']);

/**
 * A lowercase title reads as a name: `eldoria` → `Eldoria`, `house of the moon` → `House of the Moon`. Any
 * capital means the writer chose the case. Names are matched case-sensitively, so a title left as the
 * trigger word `power` would make every lowercase "power" in the campaign a mention of the entry.
 */
export function prettyTitle(title: string): string {
  // Any other mark (`title: "quoted" # …`) makes it a phrase, not a name, and it stays as written.
  if (/\p{Lu}/u.test(title) || /[^\p{L}\p{M}\p{N}\s'’-]/u.test(title)) return title;
  return title.replace(/\p{Ll}[\p{L}\p{M}\p{N}'’-]*/gu, (word, at: number) => (at > 0 && MINOR_WORDS.has(word) ? word : word.replace(/^./u, (first) => first.toUpperCase())));
}

/**
 * A key that names something: capitalised (`Elise`, `GDP`) or a form of the title (`eldorian`). A lowercase
 * phrase (`safe haven`, `magical forest`) is a trigger like any other: as an entity it would list in the Codex
 * and graph as a thing of its own, in lowercase.
 */
function nameLikeKey(key: string, title: string): boolean {
  if (/^\p{Lu}/u.test(key)) return true;
  const [k, t] = [key.toLowerCase(), title.toLowerCase()];
  const [short, long] = k.length <= t.length ? [k, t] : [t, k];
  return short.length >= 4 && long.startsWith(short) && long.length - short.length <= 3;
}

/**
 * The entity an entry is about and its aliases. Keys are triggers, not names: "magic" or "beast" as a
 * campaign entity would turn every sentence about magic into a mention of it. So the entity is the entry's
 * title, read as a name, and only name-like keys are its aliases (keys keeps them all). An entry titled by
 * nothing but its id (`Entry 7`, `untitled`) names no entity.
 */
export function entitiesOfEntry(title: string, keys: readonly string[], untitled: boolean): string[] {
  const seen = new Set<string>();
  const names = [...(untitled ? [] : [prettyTitle(title)]), ...keys.map(oneLine).filter((key) => key && !isRegexKey(key) && nameLikeKey(key, title))];
  return names.filter((name) => {
    if (!name || seen.has(name.toLowerCase())) return false;
    seen.add(name.toLowerCase());
    return true;
  });
}

/** A title of more than this many words is a document's name ("Westhaven Setting Bible — Part One"), not what a chat says. */
const MAX_KEY_WORDS = 3;

/**
 * Keys for a file written by hand: what the story calls its subject — the title and the entities it
 * declares. A long title gives its part before a dash or colon, and is left out when entities name the subject.
 */
function keysFromNames(title: string, entities: readonly string[]): string[] {
  const words = (text: string): number => text.split(/\s+/).filter(Boolean).length;
  const head = oneLine(title).split(/\s+[—–-]\s+|:\s+|\s+\(/)[0]!.trim();
  const titleKey = words(head) <= MAX_KEY_WORDS ? [head] : entities.length > 0 ? [] : [oneLine(title)];
  const seen = new Set<string>();
  return [...titleKey, ...entities.map(oneLine)].filter((key) => key && !seen.has(key.toLowerCase()) && seen.add(key.toLowerCase()));
}

/** Secondary keys only narrow a match in SillyTavern when `selective` is on (its default) and there are some. */
function secondaryKeysActive(entry: WorldInfoEntry): boolean {
  const secondary = stringArray(entry.keysecondary);
  return entry.selective !== false && secondary !== undefined && secondary.length > 0;
}

/** Splits a World Info entry titled `title` into front matter fields, the fields kept for export, and the body. */
export function entryToFrontMatter(entry: WorldInfoEntry, title: string): EntryFrontMatter {
  const fields: Record<string, unknown> = {};
  // Keyed by the entry's own field names: null-prototype, so `__proto__` or `constructor` is kept like any field.
  const kept: WorldInfoEntry = Object.create(null) as WorldInfoEntry;
  const placement: Record<string, Placement> = Object.create(null) as Record<string, Placement>;
  const activeSecondary = secondaryKeysActive(entry);
  const logic = typeof entry.selectiveLogic === 'number' ? SELECTIVE_LOGIC[entry.selectiveLogic] : undefined;

  for (const [field, value] of Object.entries(entry)) {
    const top = ((): [string, unknown] | undefined => {
      switch (field) {
        case 'content':
          return ['body', undefined];
        case 'key':
          return stringArray(value) ? ['keys', value] : undefined;
        case 'comment':
          return value === title ? ['title', undefined] : undefined;
        case 'keysecondary':
          return activeSecondary ? ['secondary_keys', value] : undefined;
        case 'selectiveLogic':
          return activeSecondary && logic ? ['selective_logic', logic] : undefined;
        case 'caseSensitive':
          return typeof value === 'boolean' ? ['case_sensitive', value] : undefined;
        case 'matchWholeWords':
          return typeof value === 'boolean' ? ['match_whole_words', value] : undefined;
        // The product's own defaults say nothing: only the value that differs is written, the other kept.
        case 'constant':
          return value === true ? ['always_include', true] : undefined;
        case 'disable':
          return value === true ? ['enabled', false] : undefined;
        default:
          return undefined;
      }
    })();
    if (top) {
      placement[field] = top[0];
      if (top[0] !== 'body' && top[0] !== 'title') fields[top[0]] = top[1];
    } else {
      placement[field] = `sillytavern.entry.${field}`;
      kept[field] = value;
    }
  }
  return { fields, kept, placement };
}

/** Front matter the campaign acts on that a World Info entry cannot say (a secret stays secret only here). */
const CAMPAIGN_ONLY_FIELDS = ['visibility', 'priority', 'scope', 'tags', 'facts', 'supersedes'] as const;

/** What an exported entry is built from: the file's front matter as written, its title and body as indexed. */
export interface EntrySource {
  frontMatter: Record<string, unknown>;
  title: string;
  body: string;
  alwaysInclude: boolean;
  enabled: boolean;
  entities: readonly string[];
}

const plainObject = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

/** The `sillytavern:` map of a file's front matter: the entry fields and book settings an import kept. */
export function keptSillyTavern(frontMatter: Record<string, unknown>): { entry: WorldInfoEntry | undefined; book: Record<string, unknown> | undefined } {
  const map = plainObject(frontMatter.sillytavern);
  return { entry: plainObject(map?.entry), book: plainObject(map?.book) };
}

/**
 * Rebuilds the World Info entry of a campaign file (without `uid`, which the book assigns). A file an import
 * wrote gives back the entry it came from, with the writer's edits; any other canon file gets SillyTavern's
 * defaults, keyed by its entities (else its title). `notes` say what in the file could not be carried.
 */
export function entryFromFrontMatter(source: EntrySource): { entry: WorldInfoEntry; notes: string[] } {
  const fm = source.frontMatter;
  const kept = keptSillyTavern(fm).entry;
  const notes: string[] = [];
  const entry: WorldInfoEntry = kept ? { ...kept } : { ...WORLD_INFO_ENTRY_DEFAULTS };
  delete entry.uid;

  const keys = stringArray(fm.keys);
  if (fm.keys !== undefined && !keys) notes.push('`keys` is not a list of text; the entities were used instead');
  entry.key = keys ?? keysFromNames(source.title, source.entities);
  const keptComment = typeof kept?.comment === 'string' ? kept.comment : undefined;
  // An untouched title (as imported, a lowercase one read as a name) goes back as the comment it came from; a renamed one replaces it.
  const importedTitle = keptComment !== undefined ? entryTitle(keptComment, entry.key as string[], String(kept?.uid ?? '')) : undefined;
  const untouched = importedTitle !== undefined && (source.title === importedTitle || source.title === prettyTitle(importedTitle));
  entry.comment = untouched ? keptComment! : source.title;
  entry.content = source.body;
  // The file's own always_include and enabled win; a kept value only stands where it agrees with them.
  if (source.alwaysInclude) entry.constant = true;
  else if (entry.constant === true) entry.constant = false;
  if (!source.enabled) entry.disable = true;
  else if (entry.disable === true) entry.disable = false;

  const secondary = stringArray(fm.secondary_keys);
  if (fm.secondary_keys !== undefined && !secondary) notes.push('`secondary_keys` is not a list of text; left out');
  if (secondary) {
    entry.keysecondary = secondary;
    // Written secondary keys are meant to narrow the match, which SillyTavern does only when selective.
    if (secondary.length > 0) entry.selective = true;
  }
  if (fm.selective_logic !== undefined) {
    const logic = SELECTIVE_LOGIC.indexOf(String(fm.selective_logic).trim().toLowerCase() as SelectiveLogic);
    if (logic === -1) notes.push(`\`selective_logic: ${String(fm.selective_logic)}\` is not one of ${SELECTIVE_LOGIC.join(', ')}; left out`);
    else entry.selectiveLogic = logic;
  }
  for (const [name, field] of [
    ['case_sensitive', 'caseSensitive'],
    ['match_whole_words', 'matchWholeWords'],
  ] as const) {
    if (fm[name] === undefined) continue;
    if (typeof fm[name] === 'boolean') entry[field] = fm[name];
    else notes.push(`\`${name}\` is not true or false; left out`);
  }
  if (fm.sillytavern !== undefined && !kept) notes.push('`sillytavern.entry` is not a map of fields; SillyTavern defaults were used');
  for (const field of CAMPAIGN_ONLY_FIELDS) {
    if (fm[field] !== undefined) notes.push(`\`${field}: ${JSON.stringify(fm[field])}\` has no World Info field`);
  }
  return { entry, notes };
}
