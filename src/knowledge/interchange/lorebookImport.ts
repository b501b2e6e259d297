import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { loadCampaign, CAMPAIGN_FILE, DATA_DIR, ReadRefusedError, pathInside, readFileBounded, refusedRegexKeys, regexKeyRefusal, unsafeName, unsafeRelativePath } from '../campaign';
import { WriteConflictError, writeFailure, writeFileSet, type SetFile } from '../files';
import { LOREBOOK_FORMAT_NAMES, LorebookError, MAX_LOREBOOK_BYTES, parseLorebook, type LoreEntry, type LorebookFormat, type ParsedLorebook } from './lorebook';
import { entitiesOfEntry, entryToFrontMatter, WORLD_INFO_ENTRY_DEFAULTS, type Placement } from './lorebookEntry';
import type { KnowledgeClass } from '../campaign';

/**
 * Writes a lorebook into a campaign as one markdown file per entry (the mapping is in lorebookEntry.ts):
 * the entry text is the body, verbatim; keys, secondary keys and the match options are front matter the
 * product uses; every other SillyTavern field is kept under `sillytavern:` for export. The report says,
 * field by field, where each went, and entry by entry what the source had that nothing can hold. Existing
 * files are never overwritten: a taken name gets a suffix, unless it holds this very entry already (the same
 * book imported again, or a retry after a killed import), which is left as it is and not written twice.
 */

export const DEFAULT_LORE_FOLDER = 'lore';

export interface LorebookImportOptions {
  campaignRoot: string;
  class: KnowledgeClass;
  /** Campaign-relative folder for the new files (default `lore`). */
  folder?: string;
  /** Called after each file is written. */
  onProgress?: (done: number, total: number) => void;
}

/**
 * Most entries one import writes: the largest lorebooks people share hold a few thousand; 100,000 ran for
 * minutes writing as many files. Above it the writer is asked to split the book.
 */
export const MAX_LOREBOOK_ENTRIES = 20_000;

export interface PlannedLoreFile {
  /** Campaign-relative POSIX path. */
  path: string;
  title: string;
  /** The entry's id in the lorebook. */
  entryId: string;
  content: string;
}

/** One field of the source's entries: how many entries had it, and where it went. */
export interface FieldFate {
  field: string;
  entries: number;
  /** Front matter path, `body`, or `not carried`. */
  keptAs: string[];
}

/** A field SillyTavern acts on that play here does not: kept for export, with the entries whose value is not the default. */
export interface ExportOnlyBehaviour {
  field: string;
  entries: string[];
  values: string[];
}

export interface LorebookImportResult {
  file: string;
  format: LorebookFormat;
  formatName: string;
  bookName: string;
  folder: string;
  class: KnowledgeClass;
  written: Omit<PlannedLoreFile, 'content'>[];
  /** Entries already in the folder exactly as this import would write them (an earlier import of the same book): not written again. */
  alreadyThere: Omit<PlannedLoreFile, 'content'>[];
  /** Every field of the source's entries and where it went. */
  fields: FieldFate[];
  /** Entry by entry, the source fields nothing can hold, with their values (short JSON). */
  notCarried: { entryId: string; title: string; fields: Record<string, string> }[];
  /** Book-level fields: kept under `sillytavern.book`, or not kept and why. */
  bookSettings: { kept: string[]; dropped: { field: string; reason: string }[] };
  /** The book's activation settings written into campaign.yaml's `world_info:`, and those left as campaign.yaml says. */
  campaignSettings: { applied: string[]; notApplied: string[] };
  exportOnly: ExportOnlyBehaviour[];
  /** Regex keys kept in their entry's file that play never runs: "regex key not run: /…/ uses a backreference …". */
  refusedKeys: { entryId: string; title: string; refusal: string }[];
  notes: string[];
}

const MAX_SLUG = 60;
const NOT_CARRIED = 'not carried';

/**
 * A file stem from a title, in any script: letters, marks and digits of every language are kept (so
 * Chinese titles stay Chinese), everything else becomes `-`; lowercase, NFC, at most 60 characters, and
 * never a name some file system reads as another (a Windows device such as `con` or `com¹`). Safe on Windows,
 * macOS and Linux.
 */
export function portableSlug(title: string): string {
  const dashed = title.normalize('NFC').toLowerCase().replace(/[^\p{L}\p{M}\p{N}]+/gu, '-').replace(/^-+/, '');
  const slug = Array.from(dashed).slice(0, MAX_SLUG).join('').replace(/-+$/, '');
  if (!slug) return 'entry';
  return unsafeName(`${slug}.md`) ? `${slug}-entry` : slug;
}

/**
 * A campaign-relative folder, refused when it could land outside the campaign, or names a folder imported
 * content never writes into (the data folder, .git, .vscode … in any spelling) or a Windows device.
 */
export function normalizeCampaignFolder(folder: string): string {
  const posix = folder.replace(/\\/g, '/').replace(/^\.\/+/, '').replace(/\/+$/, '');
  const unsafe = unsafeRelativePath(posix);
  if (unsafe) throw new LorebookError(folder, `folder must be a plain path inside the campaign: it ${unsafe}`);
  const name = unsafeName(posix);
  if (name) throw new LorebookError(folder, `the folder ${posix}/ is refused: ${name}; choose another folder`);
  return posix;
}

const shortJson = (value: unknown): string => {
  const json = JSON.stringify(value) ?? 'undefined';
  return json.length > 60 ? `${json.slice(0, 57)}...` : json;
};

interface EntryFile {
  text: string;
  placement: Record<string, Placement>;
}

function entryFile(entry: LoreEntry, book: ParsedLorebook, cls: KnowledgeClass, provenance: string): EntryFile {
  const { fields, kept, placement } = entryToFrontMatter(entry.worldInfo, entry.title);
  const keys = Array.isArray(fields.keys) ? (fields.keys as string[]) : [];
  const entities = entitiesOfEntry(entry.title, keys, entry.title === `Entry ${entry.sourceId}`);
  const sillytavern = {
    book: { name: book.name, ...(Object.keys(book.settings).length > 0 ? { settings: book.settings } : {}) },
    entry: kept,
  };
  const frontMatter = {
    title: entry.title,
    class: cls,
    ...(entities.length > 0 ? { entities } : {}),
    ...fields,
    ...(entry.tags.length > 0 ? { tags: entry.tags } : {}),
    ...(book.character ? { character: book.character } : {}),
    notes: provenance,
    sillytavern,
  };
  const doc = new YAML.Document(frontMatter);
  // Lists on one line keep a file with a long key list readable; maps stay in blocks.
  YAML.visit(doc, { Seq: (_key, node) => void (node.flow = true) });
  return { text: `---\n${doc.toString({ lineWidth: 0 })}---\n${entry.worldInfo.content as string}`, placement };
}

/**
 * Decides every file's path and content without touching the disk beyond reading what exists, so a
 * failure can be reported before anything is written. `taken` holds existing names (lowercased);
 * `existingText` reads one of them, so an entry already there as this import would write it is found.
 */
export function planLoreFiles(
  book: ParsedLorebook,
  fileName: string,
  cls: KnowledgeClass,
  folder: string,
  taken: ReadonlySet<string>,
  existingText: (name: string) => string | undefined = () => undefined,
): { files: PlannedLoreFile[]; alreadyThere: PlannedLoreFile[]; placements: Record<string, Placement>[] } {
  const used = new Set(taken);
  const formatName = LOREBOOK_FORMAT_NAMES[book.format];
  const placements: Record<string, Placement>[] = [];
  const files: PlannedLoreFile[] = [];
  const alreadyThere: PlannedLoreFile[] = [];
  const claimed = new Set<string>();
  for (const entry of book.entries) {
    const provenance = `Imported from ${formatName} ${fileName} (${book.name}), entry ${entry.sourceId}.`;
    const file = entryFile(entry, book, cls, provenance);
    placements.push(file.placement);
    const stem = portableSlug(entry.title);
    let name = `${stem}.md`;
    let there = false;
    for (let n = 2; used.has(name) && !(there = taken.has(name) && !claimed.has(name) && existingText(name) === file.text); n++) name = `${stem}-${n}.md`;
    used.add(name);
    claimed.add(name);
    (there ? alreadyThere : files).push({ path: `${folder}/${name}`, title: entry.title, entryId: entry.sourceId, content: file.text });
  }
  return { files, alreadyThere, placements };
}

/** Where each source field went, counted over the entries: through the World Info field it became. */
function fieldFates(book: ParsedLorebook, placements: readonly Record<string, Placement>[]): FieldFate[] {
  const fates = new Map<string, Map<string, number>>();
  book.entries.forEach((entry, i) => {
    for (const [field, worldInfoField] of Object.entries(entry.sourceFields)) {
      const keptAs = worldInfoField === undefined ? NOT_CARRIED : (placements[i]![worldInfoField] ?? worldInfoField);
      let seen = fates.get(field);
      if (!seen) fates.set(field, (seen = new Map()));
      seen.set(keptAs, (seen.get(keptAs) ?? 0) + 1);
    }
  });
  return [...fates.entries()].map(([field, seen]) => ({
    field,
    entries: [...seen.values()].reduce((a, b) => a + b, 0),
    keptAs: [...seen.entries()].map(([where, n]) => (seen.size > 1 ? `${where} ×${n}` : where)),
  }));
}

/**
 * Kept SillyTavern fields whose value changes what SillyTavern does, where play here does not act on them.
 * Activation (order, probability, groups, timers, scan depth, recursion, budget) and insertion (position,
 * depth, role) play as SillyTavern's do; an outlet goes only where a prompt names it, and ours names none; the
 * rest needs a chat of characters, vectors or generation types this product does not have.
 */
const EXPORT_ONLY_FIELDS = [
  'outletName',
  'vectorized',
  'automationId',
  'characterFilter',
  'triggers',
  'matchPersonaDescription',
  'matchCharacterDescription',
  'matchCharacterPersonality',
  'matchCharacterDepthPrompt',
  'matchScenario',
  'matchCreatorNotes',
];

/** SillyTavern reads a missing, null, 0 or false value of a field whose default is "off" as off. */
function actsLikeDefault(value: unknown, fallback: unknown): boolean {
  return value === undefined || JSON.stringify(value) === JSON.stringify(fallback) || (!fallback && !value);
}

function exportOnlyBehaviour(book: ParsedLorebook): ExportOnlyBehaviour[] {
  return EXPORT_ONLY_FIELDS.flatMap((field) => {
    const differing = book.entries.filter((e) => !actsLikeDefault(e.worldInfo[field], WORLD_INFO_ENTRY_DEFAULTS[field]));
    if (differing.length === 0) return [];
    const values = [...new Set(differing.map((e) => shortJson(e.worldInfo[field])))].slice(0, 5);
    return [{ field, entries: differing.map((e) => e.sourceId), values }];
  });
}

function readText(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function refusedKeys(book: ParsedLorebook): LorebookImportResult['refusedKeys'] {
  return book.entries.flatMap((entry) => {
    const { fields } = entryToFrontMatter(entry.worldInfo, entry.title);
    const keys = [fields.keys, fields.secondary_keys].flatMap((k) => (Array.isArray(k) ? (k as string[]) : []));
    return refusedRegexKeys(keys).map(({ key, reason }) => ({ entryId: entry.sourceId, title: entry.title, refusal: regexKeyRefusal(key, reason) }));
  });
}

function existingNames(dir: string): Set<string> {
  try {
    return new Set(fs.readdirSync(dir).map((n) => n.toLowerCase()));
  } catch {
    return new Set();
  }
}

/**
 * Reads a lorebook file and writes its entries into the campaign. All-or-nothing: an invalid file writes
 * nothing, and a failed write removes the files this call created. Throws `LorebookError` with the reason.
 */
export function importLorebookFile(file: string, options: LorebookImportOptions): LorebookImportResult {
  const campaign = loadCampaign(options.campaignRoot);
  const folder = normalizeCampaignFolder(options.folder ?? DEFAULT_LORE_FOLDER);
  let bytes: Buffer;
  try {
    bytes = readFileBounded(file, MAX_LOREBOOK_BYTES);
  } catch (error) {
    if (!(error instanceof ReadRefusedError)) throw error;
    throw new LorebookError(file, `not read: ${error.message}`);
  }
  const book = parseLorebook(file, bytes);
  if (book.entries.length === 0) throw new LorebookError(file, 'the lorebook has no entries; nothing to import');
  if (book.entries.length > MAX_LOREBOOK_ENTRIES) {
    throw new LorebookError(file, `the lorebook has ${book.entries.length} entries, more than the ${MAX_LOREBOOK_ENTRIES} one import writes (one file each); split it into smaller books. Nothing was written`);
  }

  const absFolder = path.join(campaign.root, ...folder.split('/'));
  refuseFolderLeavingCampaign(file, campaign.root, folder, absFolder);
  const { files, alreadyThere, placements } = planLoreFiles(book, path.basename(file), options.class, folder, existingNames(absFolder), (name) => readText(path.join(absFolder, name)));
  const settings = bookSettingsEdit(campaign.root, book.settings);
  const entries: SetFile[] = files.map((item) => ({ path: item.path, data: item.content, create: true }));
  writeLoreSet(file, campaign.root, settings.edit ? [...entries, settings.edit] : entries, options.onProgress);
  const omitContent = ({ content: _content, ...rest }: PlannedLoreFile) => rest;
  return {
    file,
    format: book.format,
    formatName: LOREBOOK_FORMAT_NAMES[book.format],
    bookName: book.name,
    folder,
    class: options.class,
    written: files.map(omitContent),
    alreadyThere: alreadyThere.map(omitContent),
    fields: fieldFates(book, placements),
    notCarried: book.entries
      .filter((e) => Object.keys(e.dropped).length > 0)
      .map((e) => ({ entryId: e.sourceId, title: e.title, fields: Object.fromEntries(Object.entries(e.dropped).map(([k, v]) => [k, shortJson(v)])) })),
    bookSettings: { kept: Object.keys(book.settings), dropped: book.droppedSettings },
    campaignSettings: settings.result,
    exportOnly: exportOnlyBehaviour(book),
    refusedKeys: refusedKeys(book),
    notes: book.notes,
  };
}

/** A card book's settings that are SillyTavern's global World Info settings, by campaign.yaml's name, and a valid value. */
const BOOK_SETTINGS: Record<string, { key: string; valid: (v: unknown) => boolean }> = {
  scan_depth: { key: 'scan_depth', valid: (v) => Number.isInteger(v) && (v as number) >= 0 },
  token_budget: { key: 'budget_cap', valid: (v) => Number.isInteger(v) && (v as number) > 0 },
  recursive_scanning: { key: 'recursive', valid: (v) => typeof v === 'boolean' },
};

/**
 * A book's activation settings for campaign.yaml's `world_info:` where campaign.yaml does not set them
 * already (the writer's own value stands): the edited document, comments kept, written with the entries.
 */
function bookSettingsEdit(root: string, settings: Record<string, unknown>): { result: LorebookImportResult['campaignSettings']; edit?: SetFile } {
  const result: LorebookImportResult['campaignSettings'] = { applied: [], notApplied: [] };
  const present = Object.entries(BOOK_SETTINGS).filter(([field]) => settings[field] !== undefined && settings[field] !== null);
  if (present.length === 0) return { result };
  const file = path.join(root, CAMPAIGN_FILE);
  if (fs.lstatSync(file).isSymbolicLink()) {
    result.notApplied.push(`${present.map(([field]) => field).join(', ')}: campaign.yaml is a symbolic link, which is never written through`);
    return { result };
  }
  const before = fs.readFileSync(file, 'utf8');
  const doc = YAML.parseDocument(before);
  for (const [field, { key, valid }] of present) {
    const value = settings[field];
    const current: unknown = doc.getIn(['world_info', key]);
    if (!valid(value)) result.notApplied.push(`${field} ${JSON.stringify(value)} is not a valid ${key}`);
    else if (current !== undefined) result.notApplied.push(`${field} ${JSON.stringify(value)}: campaign.yaml's world_info.${key} ${JSON.stringify(current)} stands`);
    else {
      doc.setIn(['world_info', key], value);
      result.applied.push(`world_info.${key}: ${JSON.stringify(value)} (the book's ${field})`);
    }
  }
  return result.applied.length > 0 ? { result, edit: { path: CAMPAIGN_FILE, data: doc.toString(), expect: before } } : { result };
}

/**
 * Nothing is written through a link that leaves the campaign: the deepest part of the folder that exists
 * (the parts below it are created as real folders) must resolve inside the campaign.
 */
function refuseFolderLeavingCampaign(file: string, root: string, folder: string, absFolder: string): void {
  let existing = absFolder;
  while (existing !== root && !fs.existsSync(existing)) existing = path.dirname(existing);
  const real = fs.realpathSync(existing);
  const inside = pathInside(fs.realpathSync(root), real);
  if (inside === undefined) {
    throw new LorebookError(
      file,
      `the folder ${folder}/ leads outside the campaign (a symbolic link to ${real}); nothing was written — replace the link with a real folder or choose another --folder`,
    );
  }
  // A link into the data folder (or .git …) would hide the entries where nothing indexes or exports them.
  const refused = inside === '' ? undefined : unsafeName(inside);
  if (refused) {
    throw new LorebookError(
      file,
      `the folder ${folder}/ leads to ${inside}/ inside the campaign (a symbolic link): ${refused}; nothing was written — replace the link with a real folder or choose another --folder`,
    );
  }
}

/** The entries and campaign.yaml as one set: a failure or a kill leaves none of them, or (rolled forward on the next run) all. */
function writeLoreSet(file: string, root: string, set: readonly SetFile[], onProgress?: (done: number, total: number) => void): void {
  try {
    writeFileSet(root, path.join(root, DATA_DIR), set, onProgress);
  } catch (error) {
    if (error instanceof WriteConflictError) {
      throw new LorebookError(file, `${error.message} (another import at the same time?); nothing was written — run the import again`);
    }
    throw new LorebookError(file, `could not write the entries, nothing was kept (${writeFailure(error)})`);
  }
}

const table = (rows: readonly string[][]): string[] => {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) => `  ${r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]!))).join('  ')}`.trimEnd());
};

const listIds = (ids: readonly string[]): string => (ids.length > 8 ? `${ids.slice(0, 8).join(', ')} … (${ids.length} entries)` : ids.join(', '));

/** The import as a writer reads it, on every surface: the files, where every field went, what nothing could hold. */
export function lorebookImportReport(result: LorebookImportResult, shownFile: string): string[] {
  const carriedNothing = result.notCarried.length === 0 && result.bookSettings.dropped.length === 0;
  return [
    `Imported ${result.written.length} entries from ${result.formatName} ${shownFile} (${result.bookName}) into ${result.folder}/ as ${result.class}:`,
    ...(result.written.length > 0 ? table(result.written.map((w) => [w.path, `${w.title} (entry ${w.entryId})`])) : []),
    ...(result.alreadyThere.length > 0
      ? [`Already there from an earlier import of this book, left as they are: ${result.alreadyThere.length} entries (${listIds(result.alreadyThere.map((w) => w.path))}).`]
      : []),
    '',
    'Where each field went (front matter field, body, or not carried):',
    ...table([['field', 'entries', 'kept as'], ...result.fields.map((f) => [f.field, String(f.entries), f.keptAs.join(', ')])]),
    ...(result.bookSettings.kept.length > 0 ? [`Book settings kept under sillytavern.book.settings: ${result.bookSettings.kept.join(', ')}.`] : []),
    ...(result.campaignSettings.applied.length > 0 ? [`Written into campaign.yaml, how play activates entries: ${result.campaignSettings.applied.join(', ')}.`] : []),
    ...(result.campaignSettings.notApplied.length > 0 ? [`Not written into campaign.yaml: ${result.campaignSettings.notApplied.join('; ')}.`] : []),
    '',
    ...(carriedNothing
      ? ['Every field was carried: exporting these files as World Info gives SillyTavern the same entries.']
      : [
          'Not carried (no SillyTavern World Info field holds them):',
          ...result.notCarried.map((e) => `  entry ${e.entryId} (${e.title}): ${Object.entries(e.fields).map(([k, v]) => `${k} ${v}`).join(', ')}`),
          ...result.bookSettings.dropped.map((d) => `  book ${d.field}: ${d.reason}`),
        ]),
    ...(result.exportOnly.length > 0
      ? [
          '',
          "Kept for export, not acted on in play here (outlets, vector matching, character and generation-type filters, and matching beyond the chat):",
          ...result.exportOnly.map((b) => `  ${b.field}: ${b.values.join(', ')} in entries ${listIds(b.entries)}`),
        ]
      : []),
    ...(result.refusedKeys.length > 0
      ? ['', 'Regex keys kept but never run (play runs every pattern from a file in a linear-time engine):', ...result.refusedKeys.map((r) => `  entry ${r.entryId} (${r.title}): ${r.refusal}`)]
      : []),
    ...result.notes.map((n) => `Note: ${n}`),
  ];
}
