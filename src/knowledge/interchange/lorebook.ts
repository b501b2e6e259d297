import path from 'node:path';
import { z } from 'zod';
import { entryTitle, prettyTitle, WORLD_INFO_ENTRY_DEFAULTS, type WorldInfoEntry } from './lorebookEntry';
import { isPng, PngError, readPngTextChunks } from './lorebookPng';
import { isZip, readZipEntry, ZipError } from './lorebookZip';

/**
 * Lorebooks from other tools read into one neutral shape: each entry as the SillyTavern World Info entry that
 * SillyTavern itself makes of it on import (its own conversions for cards, NovelAI, Agnai and RisuAI), so a
 * campaign can hand SillyTavern back what SillyTavern would have had. Entry text is data: it is carried
 * verbatim and never interpreted (macros such as `{{char}}` and V3 `@@decorators` stay as written).
 */

export const LOREBOOK_FORMATS = [
  'sillytavern-world-info',
  'character-card-v1',
  'character-card-v2',
  'character-card-v3',
  'character-book',
  'charx',
  'novelai',
  'novelai-png',
  'agnai-memory-book',
  'risu-lorebook',
] as const;
export type LorebookFormat = (typeof LOREBOOK_FORMATS)[number];

export const LOREBOOK_FORMAT_NAMES: Record<LorebookFormat, string> = {
  'sillytavern-world-info': 'SillyTavern World Info',
  'character-card-v1': 'Character Card V1',
  'character-card-v2': 'Character Card V2',
  'character-card-v3': 'Character Card V3',
  'character-book': 'Character Card lorebook',
  charx: 'CharX card',
  novelai: 'NovelAI lorebook',
  'novelai-png': 'NovelAI lorebook (PNG)',
  'agnai-memory-book': 'Agnai memory book',
  'risu-lorebook': 'RisuAI lorebook',
};

export interface LoreEntry {
  /** The entry's id in its own file (uid, id, or position), for provenance. */
  sourceId: string;
  title: string;
  /** The entry as SillyTavern holds it after importing this file. */
  worldInfo: WorldInfoEntry;
  /** Each field of the source entry and the World Info field it became (undefined: it has none). */
  sourceFields: Record<string, string | undefined>;
  /** Values of the source fields that have no World Info field (named per entry in the report). */
  dropped: Record<string, unknown>;
  /** Tags the format itself carries (NovelAI categories). */
  tags: string[];
}

export interface ParsedLorebook {
  format: LorebookFormat;
  /** The book's name: its own, else the file's name without extension. */
  name: string;
  /** A character card's character: who `{{char}}` in its entries is. */
  character?: string;
  /** Book-level fields besides the entries, verbatim (a card book's scan_depth, token_budget, extensions …). */
  settings: Record<string, unknown>;
  /** Book-level fields that are not kept, with why. */
  droppedSettings: { field: string; reason: string }[];
  entries: LoreEntry[];
  /** Plain remarks about what was read and how (for the report). */
  notes: string[];
}

export class LorebookError extends Error {
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super(`${file}: ${reason}`);
  }
}

/** Files above this are refused before parsing; card PNGs with art are a few megabytes. */
export const MAX_LOREBOOK_BYTES = 64 * 1024 * 1024;

/**
 * Deepest nesting of a lorebook's JSON: real books nest a handful of levels (an entry's extensions); deeper
 * is a damaged or hostile file, and walking it would exhaust the stack where it is written out.
 */
export const MAX_JSON_DEPTH = 64;

/** A field's path as the report names it, shortened when it is deep. */
const fieldPath = (segments: readonly string[]): string =>
  segments.length > 8 ? `${segments.slice(0, 6).join('.')}.….${segments.at(-1)!}` : segments.join('.');

/**
 * Refuses JSON nested deeper than `MAX_JSON_DEPTH`, naming the file and the field; walks without recursion so
 * the check itself cannot overflow.
 */
function checkDepth(file: string, data: unknown, what: string): void {
  const stack: { value: unknown; path: string[] }[] = [{ value: data, path: [] }];
  while (stack.length > 0) {
    const { value, path: at } = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (at.length >= MAX_JSON_DEPTH) {
      throw new LorebookError(file, `${what}: the field ${fieldPath(at)} is nested more than ${MAX_JSON_DEPTH} levels deep, deeper than any lorebook; the file is damaged`);
    }
    for (const [key, child] of Object.entries(value)) stack.push({ value: child, path: [...at, key] });
  }
}

// The schemas are built on the first import, not when the extension loads: most sessions never import a lorebook.
function buildSchemas() {
  const keyList = z.union([z.array(z.string()), z.string().transform((s) => s.split(','))]);
  const optionalKeyList = keyList.optional().default([]);
  const looseRecord = z.record(z.string(), z.unknown());

  // Only what a conversion reads is checked; every other field passes through and is kept or reported.
  const StEntrySchema = z.looseObject({ uid: z.union([z.number(), z.string()]).optional(), key: keyList, content: z.string() });
  // Entries are keyed by uid: read from the JSON's own keys, not through a record schema, which drops a key named `__proto__`.
  const StWorldInfoSchema = z.looseObject({ entries: z.custom<Record<string, unknown>>((v) => v !== null && typeof v === 'object' && !Array.isArray(v), 'expected an object') });

  const BookEntrySchema = z.looseObject({
    keys: keyList,
    content: z.string(),
    extensions: looseRecord.optional(),
    enabled: z.boolean().optional(),
    insertion_order: z.number().optional(),
    id: z.union([z.number(), z.string()]).optional(),
    name: z.string().nullish(),
    comment: z.string().nullish(),
    secondary_keys: optionalKeyList,
    selective: z.boolean().nullish(),
    constant: z.boolean().nullish(),
    position: z.string().nullish(),
  });
  const CharacterBookSchema = z.looseObject({ name: z.string().nullish(), entries: z.array(BookEntrySchema) });
  const CardSchema = z.looseObject({
    spec: z.enum(['chara_card_v2', 'chara_card_v3']),
    data: z.looseObject({ name: z.string().nullish(), character_book: CharacterBookSchema.nullish() }),
  });
  const StandaloneBookSchema = z.looseObject({ spec: z.literal('lorebook_v3'), data: CharacterBookSchema });
  const V1CardSchema = z.looseObject({
    name: z.string(),
    description: z.string(),
    personality: z.string().optional(),
    scenario: z.string().optional(),
    first_mes: z.string().optional(),
    mes_example: z.string().optional(),
  });

  const NovelAiEntrySchema = z.looseObject({
    text: z.string(),
    keys: z.array(z.string()).default([]),
    displayName: z.string().nullish(),
    id: z.string().nullish(),
    enabled: z.boolean().nullish(),
    forceActivation: z.boolean().nullish(),
    category: z.string().nullish(),
    contextConfig: looseRecord.optional(),
  });
  const NovelAiSchema = z.looseObject({
    lorebookVersion: z.number(),
    entries: z.array(NovelAiEntrySchema),
    categories: z.array(z.looseObject({ id: z.string().nullish(), name: z.string().nullish() })).optional(),
  });

  const AgnaiSchema = z.looseObject({
    kind: z.literal('memory'),
    name: z.string().nullish(),
    entries: z.array(
      z.looseObject({ name: z.string().nullish(), entry: z.string(), keywords: z.array(z.string()), weight: z.number().optional(), enabled: z.boolean().optional() }),
    ),
  });

  const RisuSchema = z.looseObject({
    type: z.literal('risu'),
    data: z.array(
      z.looseObject({
        key: z.string().default(''),
        secondkey: z.string().nullish(),
        comment: z.string().nullish(),
        content: z.string().default(''),
        mode: z.string().nullish(),
        insertorder: z.number().optional(),
        alwaysActive: z.boolean().nullish(),
        selective: z.boolean().nullish(),
        activationPercent: z.number().nullish(),
      }),
    ),
  });
  return { StEntrySchema, StWorldInfoSchema, CharacterBookSchema, CardSchema, StandaloneBookSchema, V1CardSchema, NovelAiSchema, AgnaiSchema, RisuSchema };
}
let builtSchemas: ReturnType<typeof buildSchemas> | undefined;
function schemas(): ReturnType<typeof buildSchemas> {
  builtSchemas ??= buildSchemas();
  return builtSchemas;
}

function zodReason(error: z.ZodError, what: string, within: readonly string[] = []): string {
  const issue = error.issues[0]!;
  const at = [...within, ...issue.path.map(String)];
  const where = at.length > 0 ? at.join('.') : 'top level';
  return `not a valid ${what}: ${where}: ${issue.message}`;
}

/** Where the JSON holds a key named `__proto__` (its path), if anywhere; the walk is bounded by `checkDepth`. */
function protoKeyPath(data: unknown): string | undefined {
  const stack: { value: unknown; path: string[] }[] = [{ value: data, path: [] }];
  while (stack.length > 0) {
    const { value, path: at } = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    for (const [key, child] of Object.entries(value)) {
      if (key === '__proto__') return fieldPath([...at, key]);
      stack.push({ value: child, path: [...at, key] });
    }
  }
  return undefined;
}

/**
 * Checks a format's JSON against its schema. A key named `__proto__` would be dropped by the check without a
 * word, so it is refused by name: only SillyTavern's own World Info, read key by key, carries one.
 */
function parseWith<T extends z.ZodType>(file: string, schema: T, data: unknown, what: string): z.infer<T> {
  const proto = protoKeyPath(data);
  if (proto) throw new LorebookError(file, `not imported: the ${what} has a field named __proto__ (${proto}), which cannot be carried; rename or remove it`);
  const parsed = schema.safeParse(data);
  if (!parsed.success) throw new LorebookError(file, zodReason(parsed.error, what));
  return parsed.data;
}

/** A book named only by its file (`eldoria.json`) is titled as a name: `Eldoria`. */
const bookName = (file: string): string => prettyTitle(path.basename(file).replace(/\.(json|lorebook|png|charx)$/i, ''));

/** Builds a LoreEntry from a finished World Info entry and the source-field → World Info-field account. */
function loreEntry(
  sourceId: string,
  worldInfo: WorldInfoEntry,
  raw: Record<string, unknown>,
  fieldMap: Record<string, string | undefined>,
  options: { titleFallback?: string | null | undefined; tags?: string[] } = {},
): LoreEntry {
  // Built from entries, never by assignment, and looked up as own keys: a field named `__proto__` or
  // `constructor` is a field like any other.
  const fates = Object.entries(raw).map(([field, value]) => ({ field, value, to: Object.hasOwn(fieldMap, field) ? fieldMap[field] : undefined }));
  const sourceFields: Record<string, string | undefined> = Object.fromEntries(fates.map((f) => [f.field, f.to]));
  const dropped: Record<string, unknown> = Object.fromEntries(fates.filter((f) => f.to === undefined).map((f) => [f.field, f.value]));
  const keys = Array.isArray(worldInfo.key) ? (worldInfo.key as string[]) : [];
  const comment = typeof worldInfo.comment === 'string' && worldInfo.comment.trim() ? worldInfo.comment : options.titleFallback;
  // A lowercase title (`eldoria`, SillyTavern's habit) reads as a name; the comment itself is kept, for export.
  return { sourceId, title: prettyTitle(entryTitle(comment, keys, sourceId)), worldInfo, sourceFields, dropped, tags: options.tags ?? [] };
}

function parseWorldInfo(file: string, data: unknown): ParsedLorebook {
  const checked = schemas().StWorldInfoSchema.safeParse(data);
  if (!checked.success) throw new LorebookError(file, zodReason(checked.error, 'SillyTavern World Info file'));
  // The JSON's own objects, whose every key is kept (`__proto__` too); zod checks the fields a conversion reads.
  const book = data as Record<string, unknown> & { entries: Record<string, Record<string, unknown>> };
  const entries = Object.entries(book.entries).map(([uid, original]) => {
    const parsed = schemas().StEntrySchema.safeParse(original);
    if (!parsed.success) throw new LorebookError(file, zodReason(parsed.error, 'SillyTavern World Info file', ['entries', uid]));
    // The file is SillyTavern's own: every field is the World Info field of the same name.
    const raw = { ...original, key: parsed.data.key };
    const fieldMap = Object.fromEntries(Object.keys(raw).map((k) => [k, k]));
    return loreEntry(String(parsed.data.uid ?? uid), { ...raw, uid: parsed.data.uid ?? uid }, raw, fieldMap);
  });
  const { entries: _entries, originalData, ...settings } = book;
  const droppedSettings =
    originalData === undefined
      ? []
      : [{ field: 'originalData', reason: "SillyTavern's copy of the card lorebook this book was imported from; the entries themselves are kept" }];
  const name = typeof settings.name === 'string' && settings.name.trim() ? settings.name : bookName(file);
  return { format: 'sillytavern-world-info', name, settings, droppedSettings, entries, notes: [] };
}

/** Card book entry → World Info entry, as SillyTavern's convertCharacterBook does it. */
const CARD_EXTENSION_FIELDS: Record<string, [string, unknown]> = {
  exclude_recursion: ['excludeRecursion', false],
  prevent_recursion: ['preventRecursion', false],
  delay_until_recursion: ['delayUntilRecursion', false],
  probability: ['probability', 100],
  useProbability: ['useProbability', true],
  depth: ['depth', 4],
  selectiveLogic: ['selectiveLogic', 0],
  group: ['group', ''],
  group_override: ['groupOverride', false],
  group_weight: ['groupWeight', 100],
  scan_depth: ['scanDepth', null],
  case_sensitive: ['caseSensitive', null],
  match_whole_words: ['matchWholeWords', null],
  use_group_scoring: ['useGroupScoring', null],
  automation_id: ['automationId', ''],
  role: ['role', 0],
  vectorized: ['vectorized', false],
  sticky: ['sticky', null],
  cooldown: ['cooldown', null],
  delay: ['delay', null],
  match_persona_description: ['matchPersonaDescription', false],
  match_character_description: ['matchCharacterDescription', false],
  match_character_personality: ['matchCharacterPersonality', false],
  match_character_depth_prompt: ['matchCharacterDepthPrompt', false],
  match_scenario: ['matchScenario', false],
  match_creator_notes: ['matchCreatorNotes', false],
};

function parseCharacterBook(book: z.infer<ReturnType<typeof buildSchemas>['CharacterBookSchema']>, format: LorebookFormat, name: string, notes: string[]): ParsedLorebook {
  const used = new Set(book.entries.filter((e) => e.id !== undefined).map((e) => String(e.id)));
  let next = 0;
  const freeId = (): number => {
    while (used.has(String(next))) next++;
    used.add(String(next));
    return next;
  };
  const entries = book.entries.map((raw, index) => {
    const ext = raw.extensions ?? {};
    const uid = raw.id ?? freeId();
    const fromExtensions = Object.fromEntries(Object.entries(CARD_EXTENSION_FIELDS).map(([extField, [wiField, fallback]]) => [wiField, ext[extField] ?? fallback]));
    const worldInfo: WorldInfoEntry = {
      ...WORLD_INFO_ENTRY_DEFAULTS,
      uid,
      key: raw.keys,
      keysecondary: raw.secondary_keys,
      comment: raw.comment || '',
      content: raw.content,
      constant: raw.constant || false,
      selective: raw.selective || false,
      order: raw.insertion_order,
      position: typeof ext.position === 'number' ? ext.position : raw.position === 'before_char' ? 0 : 1,
      disable: raw.enabled === false,
      addMemo: !!raw.comment,
      displayIndex: ext.display_index ?? index,
      ...fromExtensions,
      extensions: ext,
    };
    const fieldMap: Record<string, string | undefined> = {
      id: 'uid',
      keys: 'key',
      secondary_keys: 'keysecondary',
      comment: 'comment',
      content: 'content',
      constant: 'constant',
      selective: 'selective',
      insertion_order: 'order',
      position: 'position',
      enabled: 'disable',
      extensions: 'extensions',
      // SillyTavern drops a card entry's name; here it titles an entry that has no comment.
      name: !raw.comment && raw.name ? 'title' : undefined,
    };
    return loreEntry(String(uid), worldInfo, raw, fieldMap, { titleFallback: raw.name });
  });
  const { entries: _entries, ...settings } = book;
  return { format, name: book.name || name, settings, droppedSettings: [], entries, notes };
}

function parseCard(file: string, data: unknown, formatOverride?: LorebookFormat): ParsedLorebook {
  const card = parseWith(file, schemas().CardSchema, data, 'Character Card');
  const book = card.data.character_book;
  const character = card.data.name ?? 'this character';
  if (!book) throw new LorebookError(file, `the character card for ${character} has no lorebook (data.character_book is absent)`);
  const format = formatOverride ?? (card.spec === 'chara_card_v3' ? 'character-card-v3' : 'character-card-v2');
  const notes = [`only the lorebook of ${character}'s card is imported, with the name as \`character:\` (who {{char}} is in play); the character's other fields are not`];
  const parsed = parseCharacterBook(book, format, `${character}'s Lorebook`, notes);
  return card.data.name?.trim() ? { ...parsed, character: card.data.name } : parsed;
}

/** A V1 card has no lorebook: the character itself becomes one entry, keyed by its name. */
function parseV1Card(file: string, data: unknown, format: LorebookFormat = 'character-card-v1'): ParsedLorebook {
  const card = parseWith(file, schemas().V1CardSchema, data, 'Character Card V1');
  const parts: [string, string | undefined][] = [
    ['Description', card.description],
    ['Personality', card.personality],
    ['Scenario', card.scenario],
  ];
  const content = parts
    .filter(([, text]) => text?.trim())
    .map(([heading, text]) => `## ${heading}\n\n${text!.trim()}`)
    .join('\n\n');
  const worldInfo: WorldInfoEntry = { ...WORLD_INFO_ENTRY_DEFAULTS, uid: 0, key: [card.name], comment: card.name, content, addMemo: true, displayIndex: 0 };
  const fieldMap = { name: 'comment', description: 'content', personality: 'content', scenario: 'content' };
  return {
    format,
    name: card.name,
    ...(card.name.trim() ? { character: card.name } : {}),
    settings: {},
    droppedSettings: [],
    entries: [loreEntry('0', worldInfo, card, fieldMap)],
    notes: [`a V1 card carries no lorebook: ${card.name}'s description, personality and scenario became one entry keyed by the name`],
  };
}

function parseNovelAi(file: string, data: unknown, format: LorebookFormat): ParsedLorebook {
  const book = parseWith(file, schemas().NovelAiSchema, data, 'NovelAI lorebook');
  const categories = new Map((book.categories ?? []).flatMap((c) => (c.id && c.name ? [[c.id, c.name] as const] : [])));
  const entries = book.entries.map((raw, index) => {
    const category = raw.category ? categories.get(raw.category) : undefined;
    const displayName = raw.displayName ?? '';
    // As SillyTavern converts it, except forceActivation, which is NovelAI's "always on" and stays so.
    const worldInfo: WorldInfoEntry = {
      ...WORLD_INFO_ENTRY_DEFAULTS,
      uid: index,
      key: raw.keys,
      comment: displayName,
      content: raw.text,
      constant: raw.forceActivation === true,
      selective: false,
      order: raw.contextConfig?.budgetPriority ?? 0,
      disable: raw.enabled === false,
      addMemo: displayName.trim() !== '',
      displayIndex: index,
    };
    const fieldMap = { keys: 'key', displayName: 'comment', text: 'content', forceActivation: 'constant', enabled: 'disable', category: 'tags' };
    const entry = loreEntry(String(index), worldInfo, raw, fieldMap, { tags: category ? [category] : [] });
    // Only the budget priority of contextConfig has a World Info field (order); the rest is reported.
    if (raw.contextConfig) {
      const { budgetPriority, ...rest } = raw.contextConfig;
      if (budgetPriority !== undefined) entry.sourceFields['contextConfig.budgetPriority'] = 'order';
      for (const [k, v] of Object.entries(rest)) {
        entry.sourceFields[`contextConfig.${k}`] = undefined;
        entry.dropped[`contextConfig.${k}`] = v;
      }
      delete entry.sourceFields.contextConfig;
      delete entry.dropped.contextConfig;
    }
    return entry;
  });
  const { entries: _entries, lorebookVersion: _version, ...settings } = book;
  return { format, name: bookName(file), settings, droppedSettings: [], entries, notes: [] };
}

function parseAgnai(file: string, data: unknown): ParsedLorebook {
  const book = parseWith(file, schemas().AgnaiSchema, data, 'Agnai memory book');
  const entries = book.entries.map((raw, index) => {
    const worldInfo: WorldInfoEntry = {
      ...WORLD_INFO_ENTRY_DEFAULTS,
      uid: index,
      key: raw.keywords,
      comment: raw.name ?? '',
      content: raw.entry,
      selective: false,
      order: raw.weight ?? 100,
      disable: raw.enabled === false,
      addMemo: !!raw.name,
      displayIndex: index,
    };
    const fieldMap = { keywords: 'key', name: 'comment', entry: 'content', weight: 'order', enabled: 'disable' };
    return loreEntry(String(index), worldInfo, raw, fieldMap);
  });
  const { entries: _entries, kind: _kind, name, ...settings } = book;
  return { format: 'agnai-memory-book', name: name || bookName(file), settings, droppedSettings: [], entries, notes: [] };
}

function parseRisu(file: string, data: unknown): ParsedLorebook {
  const book = parseWith(file, schemas().RisuSchema, data, 'RisuAI lorebook');
  const notes: string[] = [];
  const folders = book.data.filter((e) => e.mode === 'folder').length;
  if (folders > 0) notes.push(`${folders} RisuAI folder rows are folders, not entries, and were not imported`);
  const split = (text: string | null | undefined): string[] => (text ? text.split(',').map((k) => k.trim()) : []);
  const entries = book.data
    .filter((e) => e.mode !== 'folder')
    .map((raw, index) => {
      const worldInfo: WorldInfoEntry = {
        ...WORLD_INFO_ENTRY_DEFAULTS,
        uid: index,
        key: split(raw.key),
        keysecondary: split(raw.secondkey),
        comment: raw.comment ?? '',
        content: raw.content,
        constant: raw.alwaysActive === true,
        selective: raw.selective === true,
        order: raw.insertorder ?? 100,
        addMemo: true,
        displayIndex: index,
        probability: raw.activationPercent ?? 100,
      };
      const fieldMap = {
        key: 'key',
        secondkey: 'keysecondary',
        comment: 'comment',
        content: 'content',
        alwaysActive: 'constant',
        selective: 'selective',
        insertorder: 'order',
        activationPercent: 'probability',
      };
      return loreEntry(String(index), worldInfo, raw, fieldMap);
    });
  const { data: _data, type: _type, ...settings } = book;
  return { format: 'risu-lorebook', name: bookName(file), settings, droppedSettings: [], entries, notes };
}

/** What a JSON file that is not a lorebook most likely is, so the refusal can say so. */
function recogniseOther(record: Record<string, unknown> | unknown[]): string | undefined {
  if (Array.isArray(record)) {
    const first = record[0] as Record<string, unknown> | undefined;
    if (first && typeof first === 'object' && 'keys' in first && ('entry' in first || 'value' in first)) {
      return 'an AI Dungeon World Info / Story Cards export (a list of cards): this format is not supported; copy the cards into SillyTavern or a markdown file';
    }
    return undefined;
  }
  if ('storyContainerVersion' in record) return 'a NovelAI story (.story), not a lorebook: export the lorebook from NovelAI\'s Lorebook panel (.lorebook) and import that';
  if ('scenarioVersion' in record) return 'a NovelAI scenario, not a lorebook: export the lorebook from NovelAI\'s Lorebook panel (.lorebook) and import that';
  if (Array.isArray(record.storyCards) || Array.isArray(record.worldInfo)) {
    return 'an AI Dungeon scenario or adventure export: this format is not supported; export its story cards to SillyTavern or copy them into markdown';
  }
  if (record.kind === 'character') return 'an Agnai character, not a memory book: export the memory book from Agnai instead';
  if (record.kind === 'chat' || ('chat_metadata' in record && 'user_name' in record)) return 'a chat log, not a lorebook';
  if ('prompts' in record && 'prompt_order' in record) return 'a SillyTavern chat-completion preset, not a lorebook';
  return undefined;
}

function parseJsonLorebook(file: string, data: unknown, fromContainer: LorebookFormat | undefined): ParsedLorebook {
  if (data === null || typeof data !== 'object') throw new LorebookError(file, 'not a lorebook: the JSON is not an object');
  const other = recogniseOther(data as Record<string, unknown> | unknown[]);
  if (Array.isArray(data)) throw new LorebookError(file, other ? `this is ${other}` : 'not a lorebook: the JSON is a list, not an object');
  const record = data as Record<string, unknown>;
  if (record.spec === 'chara_card_v2' || record.spec === 'chara_card_v3') return parseCard(file, data, fromContainer);
  if (record.spec === 'lorebook_v3') {
    const book = parseWith(file, schemas().StandaloneBookSchema, data, 'V3 lorebook');
    return parseCharacterBook(book.data, 'character-book', bookName(file), []);
  }
  if ('lorebookVersion' in record) return parseNovelAi(file, data, fromContainer ?? 'novelai');
  if (record.kind === 'memory') return parseAgnai(file, data);
  if (record.type === 'risu') return parseRisu(file, data);
  if (record.spec === undefined && typeof record.name === 'string' && 'description' in record && ('first_mes' in record || 'personality' in record)) {
    return parseV1Card(file, data, fromContainer === 'charx' ? 'charx' : 'character-card-v1');
  }
  if (record.entries !== null && typeof record.entries === 'object' && !Array.isArray(record.entries)) return parseWorldInfo(file, data);
  if (Array.isArray(record.entries)) {
    const book = parseWith(file, schemas().CharacterBookSchema, data, 'Character Card lorebook');
    return parseCharacterBook(book, 'character-book', bookName(file), []);
  }
  if (other) throw new LorebookError(file, `this is ${other}`);
  if (typeof record.spec === 'string') throw new LorebookError(file, `unsupported card or lorebook spec '${record.spec}'`);
  throw new LorebookError(
    file,
    'not a recognised lorebook: expected SillyTavern World Info (entries keyed by uid), a Character Card V1/V2/V3 or CharX, a V3 lorebook, a NovelAI .lorebook, an Agnai memory book or a RisuAI lorebook',
  );
}

function parseJsonText(file: string, text: string, what: string): unknown {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new LorebookError(file, `${what} is not valid JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  checkDepth(file, data, what);
  return data;
}

/** The JSON in a PNG text chunk: base64 of UTF-8 JSON, as card and NovelAI writers store it. */
function pngChunkJson(file: string, chunks: Map<string, string>, chunk: string): unknown {
  const encoded = chunks.get(chunk)!.trim();
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded) || encoded.length % 4 === 1) {
    throw new LorebookError(file, `the PNG's \`${chunk}\` chunk is not base64`);
  }
  const json = new TextDecoder('utf-8', { fatal: false }).decode(Buffer.from(encoded, 'base64'));
  return parseJsonText(file, json, `the PNG's \`${chunk}\` chunk`);
}

/** A card (`ccv3` preferred over `chara`, as the V3 spec says) or a NovelAI lorebook (`naidata`) in a PNG. */
function parsePng(file: string, bytes: Uint8Array): ParsedLorebook {
  let chunks: Map<string, string>;
  try {
    chunks = readPngTextChunks(bytes);
  } catch (error) {
    if (error instanceof PngError) throw new LorebookError(file, error.message);
    throw error;
  }
  if (chunks.has('naidata') && !chunks.has('ccv3') && !chunks.has('chara')) {
    const book = parseNovelAi(file, pngChunkJson(file, chunks, 'naidata'), 'novelai-png');
    return { ...book, notes: ["read from the PNG's `naidata` text chunk", ...book.notes] };
  }
  const chunk = chunks.has('ccv3') ? 'ccv3' : chunks.has('chara') ? 'chara' : undefined;
  if (!chunk) throw new LorebookError(file, 'this PNG is neither a character card nor a NovelAI lorebook: it has no `ccv3`, `chara` or `naidata` text chunk');
  const data = pngChunkJson(file, chunks, chunk);
  const spec = (data as { spec?: unknown } | null)?.spec;
  const book =
    spec === 'chara_card_v2' || spec === 'chara_card_v3'
      ? parseCard(file, data, spec === 'chara_card_v3' ? 'character-card-v3' : 'character-card-v2')
      : spec === undefined && data !== null && typeof data === 'object'
        ? parseV1Card(file, data)
        : undefined;
  if (!book) throw new LorebookError(file, `the PNG's \`${chunk}\` chunk is not a Character Card (spec is ${JSON.stringify(spec)})`);
  return { ...book, notes: [`read from the PNG's \`${chunk}\` text chunk`, ...book.notes] };
}

/** A CharX card: a zip whose `card.json` is a Character Card V3 (the assets beside it are not read). */
function parseCharx(file: string, bytes: Uint8Array): ParsedLorebook {
  let json: Buffer | undefined;
  try {
    json = readZipEntry(bytes, 'card.json');
  } catch (error) {
    if (error instanceof ZipError) throw new LorebookError(file, error.message);
    throw error;
  }
  if (!json) throw new LorebookError(file, 'this zip is not a CharX card: it has no card.json at its root');
  const text = new TextDecoder('utf-8', { fatal: false }).decode(json).replace(/^\uFEFF/, '');
  const book = parseJsonLorebook(file, parseJsonText(file, text, 'the CharX card.json'), 'charx');
  return { ...book, format: 'charx', notes: ["read from the CharX's card.json", ...book.notes] };
}

/**
 * Reads a lorebook from its bytes: a PNG (card or NovelAI), a CharX zip, or JSON in any supported format
 * (detected from its shape). `file` names the file in messages. Throws `LorebookError` with the reason when
 * it is not one, naming what it is when that can be told.
 */
export function parseLorebook(file: string, bytes: Uint8Array): ParsedLorebook {
  if (bytes.length > MAX_LOREBOOK_BYTES) {
    throw new LorebookError(file, `file is ${bytes.length} bytes, above the ${MAX_LOREBOOK_BYTES}-byte limit for a lorebook`);
  }
  if (isPng(bytes)) return parsePng(file, bytes);
  if (isZip(bytes)) return parseCharx(file, bytes);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes).replace(/^\uFEFF/, '');
  } catch {
    throw new LorebookError(file, 'not a lorebook: the file is neither a PNG, a CharX zip nor UTF-8 text');
  }
  const trimmed = text.trimStart();
  if (trimmed === '') throw new LorebookError(file, 'the file is empty: there is no lorebook in it');
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) {
    throw new LorebookError(file, 'not a lorebook: this is plain text, not JSON (use Import File into Campaign for markdown or text)');
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    // SillyTavern chats are JSON Lines: one object per line, the first holding the chat's metadata.
    const firstLine = trimmed.split('\n', 1)[0]!;
    if (/"user_name"|"chat_metadata"/.test(firstLine) && trimmed.includes('\n')) throw new LorebookError(file, 'this is a SillyTavern chat (JSON Lines), not a lorebook');
    throw new LorebookError(file, `the file is not valid JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  checkDepth(file, data, 'the JSON');
  return parseJsonLorebook(file, data, undefined);
}
