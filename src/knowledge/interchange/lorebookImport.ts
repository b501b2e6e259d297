import fs from 'node:fs';
import path from 'node:path';
import YAML, { isMap, isSeq } from 'yaml';
import { loadCampaign, DATA_DIR } from '../campaign';
import { LOREBOOK_FORMAT_NAMES, LorebookError, parseLorebook, type LoreEntry, type LorebookFormat, type ParsedLorebook, type UnmappedField } from './lorebook';
import type { KnowledgeClass } from '../campaign';

/**
 * Writes a lorebook into a campaign as one markdown file per entry. The mapping (documented for writers):
 * - keys → `entities` (the names the entry is about); regex keys have no equivalent and are reported;
 * - secondary keys under AND logic → `tags` (they narrow what the entry is about); under NOT logic they
 *   exclude, which has no equivalent, so they are reported instead;
 * - constant / forceActivation → `always_include: true`; disabled → `enabled: false`;
 * - comment / name / displayName → `title` (else the first key); the class is the writer's choice;
 * - the entry text → the markdown body, verbatim.
 * Every other field is counted in the report. Existing files are never overwritten: a taken name gets a suffix.
 */

export const DEFAULT_LORE_FOLDER = 'lore';

export interface LorebookImportOptions {
  campaignRoot: string;
  class: KnowledgeClass;
  /** Campaign-relative folder for the new files (default `lore`). */
  folder?: string;
}

export interface PlannedLoreFile {
  /** Campaign-relative POSIX path. */
  path: string;
  title: string;
  /** The entry's id in the lorebook. */
  entryId: string;
  content: string;
}

export interface LorebookImportResult {
  file: string;
  format: LorebookFormat;
  formatName: string;
  bookName: string | undefined;
  folder: string;
  class: KnowledgeClass;
  written: Omit<PlannedLoreFile, 'content'>[];
  unmapped: UnmappedField[];
  notes: string[];
}

// Names Windows refuses whatever the extension; a campaign must open on every writer's machine.
const RESERVED_NAMES = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])$/;
const MAX_SLUG = 60;

/** A lowercase ASCII file stem that is safe on Windows, macOS and Linux. */
export function portableSlug(title: string): string {
  const slug = title
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, MAX_SLUG)
    .replace(/^-+|-+$/g, '');
  if (!slug) return 'entry';
  return RESERVED_NAMES.test(slug) ? `${slug}-entry` : slug;
}

/** A campaign-relative folder, refused when it could land outside the campaign or in its data folder. */
export function normalizeCampaignFolder(folder: string): string {
  const posix = folder.replace(/\\/g, '/').replace(/^\.\/+/, '').replace(/\/+$/, '');
  const segments = posix.split('/');
  if (
    posix === '' ||
    posix.includes('\0') ||
    path.posix.isAbsolute(posix) ||
    /^[A-Za-z]:/.test(posix) ||
    segments.some((s) => s === '' || s === '.' || s === '..') ||
    segments[0] === DATA_DIR
  ) {
    throw new LorebookError(folder, `folder must be a plain path inside the campaign (not absolute, no '..', not ${DATA_DIR})`);
  }
  return posix;
}

function frontMatter(entry: LoreEntry, cls: KnowledgeClass, provenance: string): string {
  const fields: Record<string, unknown> = { title: entry.title, class: cls };
  if (entry.keys.length > 0) fields.entities = entry.keys;
  const tags = [...entry.tags, ...entry.qualifierKeys];
  if (tags.length > 0) fields.tags = tags;
  if (entry.alwaysInclude) fields.always_include = true;
  if (!entry.enabled) fields.enabled = false;
  fields.notes = provenance;
  const doc = new YAML.Document(fields);
  if (isMap(doc.contents)) {
    for (const pair of doc.contents.items) if (isSeq(pair.value)) pair.value.flow = true;
  }
  return `---\n${doc.toString({ lineWidth: 0 })}---\n`;
}

/**
 * Decides every file's path and content without touching the disk beyond reading what exists, so a
 * failure can be reported before anything is written. `taken` holds existing names (lowercased).
 */
export function planLoreFiles(book: ParsedLorebook, fileName: string, cls: KnowledgeClass, folder: string, taken: ReadonlySet<string>): PlannedLoreFile[] {
  const used = new Set(taken);
  const formatName = LOREBOOK_FORMAT_NAMES[book.format];
  return book.entries.map((entry) => {
    const stem = portableSlug(entry.title);
    let name = `${stem}.md`;
    for (let n = 2; used.has(name); n++) name = `${stem}-${n}.md`;
    used.add(name);
    const provenance = `Imported from ${formatName} ${fileName}${book.name ? ` (${book.name})` : ''}, entry ${entry.sourceId}.`;
    return {
      path: `${folder}/${name}`,
      title: entry.title,
      entryId: entry.sourceId,
      content: frontMatter(entry, cls, provenance) + entry.content,
    };
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
    bytes = fs.readFileSync(file);
  } catch (error) {
    throw new LorebookError(file, `cannot read the file (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  const book = parseLorebook(file, bytes);
  if (book.entries.length === 0) throw new LorebookError(file, 'the lorebook has no entries; nothing to import');

  const absFolder = path.join(campaign.root, ...folder.split('/'));
  const planned = planLoreFiles(book, path.basename(file), options.class, folder, existingNames(absFolder));
  writeAllOrNothing(file, campaign.root, absFolder, planned);
  return {
    file,
    format: book.format,
    formatName: LOREBOOK_FORMAT_NAMES[book.format],
    bookName: book.name,
    folder,
    class: options.class,
    written: planned.map(({ content: _content, ...rest }) => rest),
    unmapped: book.unmapped,
    notes: book.notes,
  };
}

function writeAllOrNothing(file: string, root: string, absFolder: string, planned: readonly PlannedLoreFile[]): void {
  const createdDirs: string[] = [];
  const createdFiles: string[] = [];
  try {
    for (let dir = absFolder; dir !== root && !fs.existsSync(dir); dir = path.dirname(dir)) createdDirs.unshift(dir);
    fs.mkdirSync(absFolder, { recursive: true });
    for (const item of planned) {
      const target = path.join(root, ...item.path.split('/'));
      // 'wx' fails if the file appeared since planning: never overwrite the writer's file.
      fs.writeFileSync(target, item.content, { flag: 'wx' });
      createdFiles.push(target);
    }
  } catch (error) {
    for (const f of createdFiles) fs.rmSync(f, { force: true });
    // Only folders this call created, and only when empty: rmdir refuses anything else.
    for (const d of createdDirs.reverse()) fs.rmdirSync(d, { maxRetries: 0 });
    throw new LorebookError(file, `could not write the entries, nothing was kept (${error instanceof Error ? error.message : String(error)})`);
  }
}

function describeUnmapped(fields: readonly UnmappedField[]): string[] {
  if (fields.length === 0) return ['Every field had an equivalent.'];
  const width = Math.max(...fields.map((f) => f.field.length));
  return [
    'No equivalent in campaign markdown (not carried into the files):',
    ...fields.map((f) => `  ${f.field.padEnd(width)}  ${String(f.entries).padStart(4)}×  ${f.values.map((v) => `${v.value}×${v.count}`).join(', ')}`),
  ];
}

/** The import as a writer reads it, on every surface: each file written, every field with no equivalent, the notes. */
export function lorebookImportReport(result: LorebookImportResult, shownFile: string): string[] {
  const width = Math.max(...result.written.map((w) => w.path.length));
  return [
    `Imported ${result.written.length} entries from ${result.formatName} ${shownFile}${result.bookName ? ` (${result.bookName})` : ''} into ${result.folder}/ as ${result.class}:`,
    ...result.written.map((w) => `  ${w.path.padEnd(width)}  ${w.title} (entry ${w.entryId})`),
    ...describeUnmapped(result.unmapped),
    ...result.notes.map((n) => `Note: ${n}`),
  ];
}
