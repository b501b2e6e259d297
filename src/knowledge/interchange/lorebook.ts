import { z } from 'zod';
import { isPng, PngError, readPngTextChunks } from './lorebookPng';

/**
 * Lorebooks from other tools (SillyTavern World Info, Character Card V2/V3 `character_book`, NovelAI
 * `.lorebook`) read into one neutral shape. Entry text is data: it is carried verbatim and never
 * interpreted (macros such as `{{char}}` and V3 `@@decorators` stay as written).
 */

export const LOREBOOK_FORMATS = ['sillytavern-world-info', 'character-card-v2', 'character-card-v3', 'character-book', 'novelai'] as const;
export type LorebookFormat = (typeof LOREBOOK_FORMATS)[number];

export const LOREBOOK_FORMAT_NAMES: Record<LorebookFormat, string> = {
  'sillytavern-world-info': 'SillyTavern World Info',
  'character-card-v2': 'Character Card V2',
  'character-card-v3': 'Character Card V3',
  'character-book': 'Character Card lorebook',
  novelai: 'NovelAI lorebook',
};

export interface LoreEntry {
  /** The entry's id in its own file (uid, id, or position), for provenance. */
  sourceId: string;
  title: string;
  /** Trigger keys; they name what the entry is about, so they become the source's entities. */
  keys: string[];
  /** Secondary keys that narrow a match (AND logic); they become tags. */
  qualifierKeys: string[];
  content: string;
  alwaysInclude: boolean;
  enabled: boolean;
  /** Extra tags the format itself carries (NovelAI categories). */
  tags: string[];
}

/** A field of the source file that has no equivalent in campaign markdown, with how often it occurred. */
export interface UnmappedField {
  field: string;
  /** Entries carrying the field (for book-level fields: 1). */
  entries: number;
  /** Distinct values, most frequent first, at most five, each shown as short JSON. */
  values: { value: string; count: number }[];
}

export interface ParsedLorebook {
  format: LorebookFormat;
  name: string | undefined;
  entries: LoreEntry[];
  unmapped: UnmappedField[];
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

/** `/pattern/flags` — a regular-expression key, which entity matching cannot honour. */
const REGEX_KEY = /^\/(.+)\/([dgimsuvy]*)$/s;

const keyList = z.union([z.array(z.string()), z.string().transform((s) => s.split(','))]);
const optionalKeyList = keyList.optional().default([]);

// Only the mapped fields are checked; everything else passes through and is counted as unmapped.
const StEntrySchema = z.looseObject({
  uid: z.union([z.number(), z.string()]).optional(),
  key: keyList,
  keysecondary: optionalKeyList,
  comment: z.string().nullish(),
  content: z.string(),
  constant: z.boolean().nullish(),
  disable: z.boolean().nullish(),
  selective: z.boolean().nullish(),
  selectiveLogic: z.number().nullish(),
});
const StWorldInfoSchema = z.looseObject({ entries: z.record(z.string(), StEntrySchema) });

const BookEntrySchema = z.looseObject({
  keys: keyList,
  content: z.string(),
  extensions: z.record(z.string(), z.unknown()).optional(),
  enabled: z.boolean().optional(),
  id: z.union([z.number(), z.string()]).nullish(),
  name: z.string().nullish(),
  comment: z.string().nullish(),
  secondary_keys: optionalKeyList,
  selective: z.boolean().nullish(),
  constant: z.boolean().nullish(),
});
const CharacterBookSchema = z.looseObject({
  name: z.string().nullish(),
  entries: z.array(BookEntrySchema),
});
const CardSchema = z.looseObject({
  spec: z.enum(['chara_card_v2', 'chara_card_v3']),
  data: z.looseObject({ name: z.string().nullish(), character_book: CharacterBookSchema.nullish() }),
});
const StandaloneBookSchema = z.looseObject({ spec: z.literal('lorebook_v3'), data: CharacterBookSchema });

const NovelAiEntrySchema = z.looseObject({
  text: z.string(),
  keys: z.array(z.string()).default([]),
  displayName: z.string().nullish(),
  id: z.string().nullish(),
  enabled: z.boolean().nullish(),
  forceActivation: z.boolean().nullish(),
  category: z.string().nullish(),
});
const NovelAiSchema = z.looseObject({
  lorebookVersion: z.number(),
  entries: z.array(NovelAiEntrySchema),
  categories: z.array(z.looseObject({ id: z.string().nullish(), name: z.string().nullish() })).optional(),
});

// SillyTavern selectiveLogic: 0 AND_ANY, 1 NOT_ALL, 2 NOT_ANY, 3 AND_ALL. Only AND logic narrows a match
// in a way a tag can stand for; NOT logic is an exclusion, which has no equivalent.
const EXCLUDING_LOGIC = new Set([1, 2]);

class UnmappedCollector {
  private readonly fields = new Map<string, Map<string, number>>();

  record(field: string, value: unknown): void {
    let values = this.fields.get(field);
    if (!values) this.fields.set(field, (values = new Map()));
    const shown = shortJson(value);
    values.set(shown, (values.get(shown) ?? 0) + 1);
  }

  /** Records every key of `raw` not in `mapped`; objects listed in `nested` are reported key by key. */
  recordRest(raw: Record<string, unknown>, mapped: ReadonlySet<string>, prefix = '', nested: ReadonlySet<string> = new Set()): void {
    for (const [key, value] of Object.entries(raw)) {
      if (mapped.has(key)) continue;
      if (nested.has(key) && value !== null && typeof value === 'object' && !Array.isArray(value)) {
        this.recordRest(value as Record<string, unknown>, new Set(), `${prefix}${key}.`);
      } else {
        this.record(`${prefix}${key}`, value);
      }
    }
  }

  result(): UnmappedField[] {
    return [...this.fields.entries()].map(([field, values]) => ({
      field,
      entries: [...values.values()].reduce((a, b) => a + b, 0),
      values: [...values.entries()]
        .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
        .slice(0, 5)
        .map(([value, count]) => ({ value, count })),
    }));
  }
}

function shortJson(value: unknown): string {
  const json = JSON.stringify(value) ?? 'undefined';
  return json.length > 60 ? `${json.slice(0, 57)}...` : json;
}

/** Trims keys, drops empty ones and duplicates (case-insensitively), keeping the first spelling. */
function cleanKeys(keys: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const raw of keys) {
    const key = raw.replace(/\s+/g, ' ').trim();
    if (!key || seen.has(key.toLowerCase())) continue;
    seen.add(key.toLowerCase());
    out.push(key);
  }
  return out;
}

interface EntryDraft {
  sourceId: string;
  titleCandidates: (string | null | undefined)[];
  keys: string[];
  secondaryKeys: string[];
  secondaryExcludes: boolean;
  content: string;
  alwaysInclude: boolean;
  enabled: boolean;
  tags?: string[];
}

/** Splits regex keys off (reported), and picks a title: the first non-empty candidate, else the first key. */
function finishEntry(draft: EntryDraft, unmapped: UnmappedCollector): LoreEntry {
  const plain = (keys: string[], field: string): string[] =>
    cleanKeys(keys).filter((key) => {
      if (!REGEX_KEY.test(key)) return true;
      unmapped.record(`${field} (regular expression)`, key);
      return false;
    });
  const keys = plain(draft.keys, 'key');
  let qualifierKeys = plain(draft.secondaryKeys, 'secondary key');
  if (draft.secondaryExcludes) {
    for (const key of qualifierKeys) unmapped.record('secondary key (exclusion)', key);
    qualifierKeys = [];
  }
  const title =
    draft.titleCandidates.map((t) => t?.replace(/\s+/g, ' ').trim()).find((t): t is string => !!t) ?? keys[0] ?? `Entry ${draft.sourceId}`;
  return {
    sourceId: draft.sourceId,
    title,
    keys,
    qualifierKeys,
    content: draft.content,
    alwaysInclude: draft.alwaysInclude,
    enabled: draft.enabled,
    tags: cleanKeys(draft.tags ?? []),
  };
}

function zodReason(error: z.ZodError, what: string): string {
  const issue = error.issues[0]!;
  const where = issue.path.length > 0 ? issue.path.join('.') : 'top level';
  return `not a valid ${what}: ${where}: ${issue.message}`;
}

function parseWorldInfo(file: string, data: unknown): ParsedLorebook {
  const parsed = StWorldInfoSchema.safeParse(data);
  if (!parsed.success) throw new LorebookError(file, zodReason(parsed.error, 'SillyTavern World Info file'));
  const unmapped = new UnmappedCollector();
  const mapped = new Set(['uid', 'key', 'keysecondary', 'comment', 'content', 'constant', 'disable']);
  const entries = Object.entries(parsed.data.entries).map(([uid, raw]) => {
    unmapped.recordRest(raw, mapped);
    return finishEntry(
      {
        sourceId: String(raw.uid ?? uid),
        titleCandidates: [raw.comment],
        keys: raw.key,
        secondaryKeys: raw.keysecondary,
        secondaryExcludes: EXCLUDING_LOGIC.has(raw.selectiveLogic ?? 0),
        content: raw.content,
        alwaysInclude: raw.constant === true,
        enabled: raw.disable !== true,
      },
      unmapped,
    );
  });
  unmapped.recordRest(parsed.data, new Set(['entries']), 'book.');
  return { format: 'sillytavern-world-info', name: undefined, entries, unmapped: unmapped.result(), notes: [] };
}

function parseCharacterBook(
  book: z.infer<typeof CharacterBookSchema>,
  format: LorebookFormat,
  unmapped: UnmappedCollector,
  notes: string[],
): ParsedLorebook {
  const mapped = new Set(['keys', 'secondary_keys', 'content', 'enabled', 'id', 'name', 'comment', 'constant']);
  const entries = book.entries.map((raw, index) => {
    unmapped.recordRest(raw, mapped, '', new Set(['extensions']));
    const logic = raw.extensions?.selectiveLogic;
    return finishEntry(
      {
        sourceId: String(raw.id ?? index),
        titleCandidates: [raw.name, raw.comment],
        keys: raw.keys,
        secondaryKeys: raw.secondary_keys,
        secondaryExcludes: typeof logic === 'number' && EXCLUDING_LOGIC.has(logic),
        content: raw.content,
        alwaysInclude: raw.constant === true,
        enabled: raw.enabled !== false,
      },
      unmapped,
    );
  });
  unmapped.recordRest(book, new Set(['entries', 'name']), 'book.', new Set(['extensions']));
  return { format, name: book.name ?? undefined, entries, unmapped: unmapped.result(), notes };
}

function parseCard(file: string, data: unknown, formatOverride?: LorebookFormat): ParsedLorebook {
  const parsed = CardSchema.safeParse(data);
  if (!parsed.success) throw new LorebookError(file, zodReason(parsed.error, 'Character Card'));
  const book = parsed.data.data.character_book;
  const character = parsed.data.data.name ?? 'this character';
  if (!book) throw new LorebookError(file, `the character card for ${character} has no lorebook (data.character_book is absent)`);
  const format = formatOverride ?? (parsed.data.spec === 'chara_card_v3' ? 'character-card-v3' : 'character-card-v2');
  const notes = [`only the lorebook of ${character}'s card is imported; the character's own fields are not`];
  return parseCharacterBook(book, format, new UnmappedCollector(), notes);
}

function parseNovelAi(file: string, data: unknown): ParsedLorebook {
  const parsed = NovelAiSchema.safeParse(data);
  if (!parsed.success) throw new LorebookError(file, zodReason(parsed.error, 'NovelAI lorebook'));
  const categories = new Map((parsed.data.categories ?? []).flatMap((c) => (c.id && c.name ? [[c.id, c.name] as const] : [])));
  const unmapped = new UnmappedCollector();
  const mapped = new Set(['text', 'keys', 'displayName', 'id', 'enabled', 'forceActivation', 'category']);
  const entries = parsed.data.entries.map((raw, index) => {
    unmapped.recordRest(raw, mapped, '', new Set(['contextConfig']));
    const category = raw.category ? categories.get(raw.category) : undefined;
    return finishEntry(
      {
        sourceId: raw.id ?? String(index),
        titleCandidates: [raw.displayName],
        keys: raw.keys,
        secondaryKeys: [],
        secondaryExcludes: false,
        content: raw.text,
        alwaysInclude: raw.forceActivation === true,
        enabled: raw.enabled !== false,
        tags: category ? [category] : [],
      },
      unmapped,
    );
  });
  unmapped.recordRest(parsed.data, new Set(['entries', 'lorebookVersion']), 'book.');
  return { format: 'novelai', name: undefined, entries, unmapped: unmapped.result(), notes: [] };
}

function parseJsonLorebook(file: string, data: unknown, fromPng: LorebookFormat | undefined): ParsedLorebook {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new LorebookError(file, 'not a lorebook: the JSON is not an object');
  }
  const record = data as Record<string, unknown>;
  if (record.spec === 'chara_card_v2' || record.spec === 'chara_card_v3') return parseCard(file, data, fromPng);
  if (record.spec === 'lorebook_v3') {
    const parsed = StandaloneBookSchema.safeParse(data);
    if (!parsed.success) throw new LorebookError(file, zodReason(parsed.error, 'V3 lorebook'));
    return parseCharacterBook(parsed.data.data, 'character-book', new UnmappedCollector(), []);
  }
  if ('lorebookVersion' in record) return parseNovelAi(file, data);
  if (record.entries !== null && typeof record.entries === 'object' && !Array.isArray(record.entries)) return parseWorldInfo(file, data);
  if (record.kind === 'memory' && Array.isArray(record.entries)) {
    throw new LorebookError(
      file,
      'this is an Agnai memory book, a format this version does not import; it reads SillyTavern World Info, Character Card V2/V3 (JSON or PNG), V3 lorebooks and NovelAI lorebooks',
    );
  }
  if (Array.isArray(record.entries)) {
    const parsed = CharacterBookSchema.safeParse(data);
    if (!parsed.success) throw new LorebookError(file, zodReason(parsed.error, 'Character Card lorebook'));
    return parseCharacterBook(parsed.data, 'character-book', new UnmappedCollector(), []);
  }
  if (typeof record.spec === 'string') throw new LorebookError(file, `unsupported card or lorebook spec '${record.spec}'`);
  throw new LorebookError(
    file,
    'not a recognised lorebook: expected SillyTavern World Info (entries keyed by uid), a Character Card V2/V3, a V3 lorebook or a NovelAI .lorebook',
  );
}

function parseJsonText(file: string, text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new LorebookError(file, `${what} is not valid JSON (${error instanceof Error ? error.message : String(error)})`);
  }
}

/** The card JSON in a PNG: `ccv3` is preferred over `chara` (CCv3 spec), both base64 of UTF-8 JSON. */
function cardFromPng(file: string, bytes: Uint8Array): { data: unknown; chunk: string } {
  let chunks: Map<string, string>;
  try {
    chunks = readPngTextChunks(bytes);
  } catch (error) {
    if (error instanceof PngError) throw new LorebookError(file, error.message);
    throw error;
  }
  const chunk = chunks.has('ccv3') ? 'ccv3' : chunks.has('chara') ? 'chara' : undefined;
  if (!chunk) throw new LorebookError(file, 'this PNG is not a character card: it has no `ccv3` or `chara` text chunk');
  const encoded = chunks.get(chunk)!.trim();
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded) || encoded.length % 4 === 1) {
    throw new LorebookError(file, `the PNG's \`${chunk}\` chunk is not base64`);
  }
  const json = new TextDecoder('utf-8', { fatal: false }).decode(Buffer.from(encoded, 'base64'));
  return { data: parseJsonText(file, json, `the PNG's \`${chunk}\` chunk`), chunk };
}

/**
 * Reads a lorebook from its bytes: a PNG character card, or JSON in any supported format (detected from its
 * shape). `file` names the file in messages. Throws `LorebookError` with the reason when it is not one.
 */
export function parseLorebook(file: string, bytes: Uint8Array): ParsedLorebook {
  if (bytes.length > MAX_LOREBOOK_BYTES) {
    throw new LorebookError(file, `file is ${bytes.length} bytes, above the ${MAX_LOREBOOK_BYTES}-byte limit for a lorebook`);
  }
  if (isPng(bytes)) {
    const { data, chunk } = cardFromPng(file, bytes);
    const spec = (data as { spec?: unknown } | null)?.spec;
    const format: LorebookFormat = spec === 'chara_card_v3' ? 'character-card-v3' : 'character-card-v2';
    if (spec !== 'chara_card_v2' && spec !== 'chara_card_v3') {
      throw new LorebookError(file, `the PNG's \`${chunk}\` chunk is not a Character Card V2/V3 (spec is ${shortJson(spec)})`);
    }
    const book = parseJsonLorebook(file, data, format);
    return { ...book, notes: [`read from the PNG's \`${chunk}\` text chunk`, ...book.notes] };
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes).replace(/^\uFEFF/, '');
  } catch {
    throw new LorebookError(file, 'not a lorebook: the file is neither a PNG nor UTF-8 text');
  }
  return parseJsonLorebook(file, parseJsonText(file, text, 'the file'), undefined);
}
