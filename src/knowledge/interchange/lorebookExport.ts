import fs from 'node:fs';
import path from 'node:path';
import { frontMatterData, splitFrontMatter } from '../campaign';
import { createFile, replaceFile, writeFailure } from '../files';
import { LorebookError } from './lorebook';
import { entryFromFrontMatter, keptSillyTavern, type WorldInfoEntry } from './lorebookEntry';
import { KnowledgeStore } from '../indexing';
import type { SourceRecord } from '../campaign';

/**
 * A campaign's canon as a SillyTavern World Info file, one entry per Canon source. A file a lorebook import
 * wrote gives back its entry with every field it kept (lorebookEntry.ts), its uid too unless an earlier
 * entry holds it; any other canon file becomes a new entry with SillyTavern's defaults, keyed by its
 * title and entities, its text plain. The book settings the imported entries agree on go back to the top of the file.
 * A source whose text repeats another's is still its own entry: its keys are its own.
 */

export interface WorldInfoFile {
  entries: Record<string, WorldInfoEntry>;
  [bookField: string]: unknown;
}

export interface WorldInfoExportResult {
  file: string;
  entries: { uid: number | string; path: string; title: string }[];
  /** Imported entries whose uid an earlier entry already held, and the uid they got instead. */
  renumbered: { path: string; from: string; to: number }[];
  /** Canon sources with no entities and no keys, keyed by their title instead. */
  keyedByTitle: string[];
  /** Book settings written at the top of the file, and those left out because the entries' books disagree. */
  bookSettings: { written: string[]; conflicting: string[] };
  /** What in a file could not be carried into its entry. */
  notes: { path: string; notes: string[] }[];
  /** Canon sources left out, and why. */
  skipped: { path: string; reason: string }[];
}

type ExportDraft = { source: SourceRecord; entry: WorldInfoEntry; keptUid: unknown; book: Record<string, unknown> | undefined };

/** A canon statement the writer settled against (kept the other side, or a file declares it superseded). */
export interface SettledStatement {
  statement: { path: string; line: number; value: string };
  by: { value: string };
}

/**
 * The file's text with each settled-against statement saying what is true now: a "Keep 47" decision makes
 * the other file's `Age: 39` line read `Age: 47`, so SillyTavern is never told the value the writer rejected.
 */
function withSettledValues(content: string, settled: readonly SettledStatement['statement'][], current: readonly string[]): string {
  if (settled.length === 0) return content;
  const lines = content.split('\n');
  settled.forEach((statement, i) => {
    const at = statement.line - 1;
    const line = lines[at];
    const index = line?.lastIndexOf(statement.value) ?? -1;
    if (line !== undefined && index !== -1) lines[at] = line.slice(0, index) + current[i]! + line.slice(index + statement.value.length);
  });
  return lines.join('\n');
}

/**
 * A written file's body as plain text for SillyTavern, which shows entry content verbatim: `[[links]]` keep
 * their shown words, headings and bold/italic markers go. Entries a lorebook import wrote keep their text
 * exactly (it came from SillyTavern as it is).
 */
function plainText(body: string): string {
  return body
    .split('\n')
    .map((line) =>
      line
        .replace(/^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/, '$1')
        .replace(/\[\[([^\][\n|]+?)\|([^\][\n]+?)\]\]/g, '$2')
        .replace(/\[\[([^\][\n#]+?)#([^\][\n]+?)\]\]/g, '$2')
        .replace(/\[\[([^\][\n:]+?):([^\][\n]+?)\]\]/g, '$1')
        .replace(/\[\[([^\][\n]+?)\]\]/g, '$1')
        .replace(/(\*\*|__)(.+?)\1/g, '$2'),
    )
    .join('\n');
}

/** World Info entries for Canon sources, in path order. `contentOf` gives a source's text as indexed. */
export function worldInfoFromSources(
  sources: readonly SourceRecord[],
  contentOf: (source: SourceRecord) => string | undefined,
  settled: readonly SettledStatement[] = [],
): { file: WorldInfoFile; result: Omit<WorldInfoExportResult, 'file'> } {
  const result: Omit<WorldInfoExportResult, 'file'> = { entries: [], renumbered: [], keyedByTitle: [], bookSettings: { written: [], conflicting: [] }, notes: [], skipped: [] };
  const drafts: ExportDraft[] = [];
  for (const source of [...sources].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    if (source.class !== 'canon') continue;
    if (source.lexicalState === 'error') {
      result.skipped.push({ path: source.path, reason: 'the file could not be read or indexed' });
      continue;
    }
    const content = contentOf(source);
    if (content === undefined) {
      result.skipped.push({ path: source.path, reason: 'no indexed text' });
      continue;
    }
    const frontMatter = frontMatterData(content);
    const kept = keptSillyTavern(frontMatter);
    const mine = settled.filter((s) => s.statement.path === source.path);
    const body = splitFrontMatter(withSettledValues(content, mine.map((s) => s.statement), mine.map((s) => s.by.value))).body;
    const { entry, notes } = entryFromFrontMatter({
      frontMatter,
      title: source.title,
      body: kept.entry ? body : plainText(body),
      alwaysInclude: source.alwaysInclude,
      enabled: source.enabled,
      entities: source.entities,
    });
    if (frontMatter.keys === undefined && source.entities.length === 0) result.keyedByTitle.push(source.path);
    if (notes.length > 0) result.notes.push({ path: source.path, notes });
    drafts.push({ source, entry, keptUid: kept.entry?.uid, book: kept.book });
  }

  // Kept uids first (path order decides between two that claim the same one), then the smallest free ones.
  const taken = new Set<string>();
  const uids = drafts.map((d) => {
    const wanted = d.keptUid;
    if ((typeof wanted === 'number' || typeof wanted === 'string') && !taken.has(String(wanted))) {
      taken.add(String(wanted));
      return wanted;
    }
    return undefined;
  });
  let next = 0;
  const entries: Record<string, WorldInfoEntry> = {};
  drafts.forEach((draft, i) => {
    let uid = uids[i];
    if (uid === undefined) {
      while (taken.has(String(next))) next++;
      uid = next;
      taken.add(String(uid));
      if (draft.keptUid !== undefined) result.renumbered.push({ path: draft.source.path, from: String(draft.keptUid), to: uid });
      if (draft.entry.displayIndex === undefined) draft.entry.displayIndex = uid;
    }
    entries[String(uid)] = { uid, ...draft.entry };
    result.entries.push({ uid, path: draft.source.path, title: draft.source.title });
  });

  const settings = bookSettings(drafts.flatMap((d) => (d.book?.settings && typeof d.book.settings === 'object' ? [d.book.settings as Record<string, unknown>] : [])));
  result.bookSettings = { written: Object.keys(settings.agreed), conflicting: settings.conflicting };
  return { file: { entries, ...settings.agreed }, result };
}

/** The book-level fields every imported entry that has them agrees on; the others are named, not guessed. */
function bookSettings(all: readonly Record<string, unknown>[]): { agreed: Record<string, unknown>; conflicting: string[] } {
  const agreed: Record<string, unknown> = {};
  const conflicting: string[] = [];
  for (const field of new Set(all.flatMap((s) => Object.keys(s)))) {
    if (field === 'entries') continue;
    const values = new Set(all.filter((s) => field in s).map((s) => JSON.stringify(s[field])));
    if (values.size === 1) agreed[field] = all.find((s) => field in s)![field];
    else conflicting.push(field);
  }
  return { agreed, conflicting };
}

/**
 * Writes the campaign's canon as World Info to `outFile` (atomically; an existing file only with `force`).
 * It only reads the index the campaign session keeps, imported with the writer's settings.
 */
export function exportCampaignWorldInfo(
  store: KnowledgeStore,
  outFile: string,
  options: { force?: boolean; settled?: readonly SettledStatement[] } = {},
): WorldInfoExportResult {
  const out = path.resolve(outFile);
  if (!options.force && fs.existsSync(out)) throw new LorebookError(out, 'already exists; choose another name or pass --force to replace it');
  const built = worldInfoFromSources(store.listSources(), (s) => store.getSourceContent(s.id), options.settled);
  try {
    (options.force ? replaceFile : createFile)(out, `${JSON.stringify(built.file, null, 4)}\n`);
  } catch (error) {
    throw new LorebookError(out, (error as NodeJS.ErrnoException).code === 'EEXIST' ? 'already exists; choose another name or pass --force to replace it' : `could not write the World Info file (${writeFailure(error)})`);
  }
  return { file: out, ...built.result };
}

/** The export as a writer reads it, on every surface: each entry, what was renumbered, left out or not carried. */
export function worldInfoExportReport(result: WorldInfoExportResult, shownFile: string): string[] {
  return [
    `Exported ${result.entries.length} canon entries to ${shownFile}.`,
    ...result.renumbered.map((r) => `Renumbered: ${r.path} kept uid ${r.from}, which an earlier entry holds; it is uid ${r.to}.`),
    ...result.keyedByTitle.map((p) => `Keyed by its title (no keys or entities): ${p}`),
    ...(result.bookSettings.written.length > 0 ? [`Book settings written back: ${result.bookSettings.written.join(', ')}.`] : []),
    ...(result.bookSettings.conflicting.length > 0
      ? [`Book settings left out, the entries come from books that disagree on them: ${result.bookSettings.conflicting.join(', ')}.`]
      : []),
    ...result.notes.flatMap((n) => n.notes.map((note) => `Not carried from ${n.path}: ${note}`)),
    ...result.skipped.map((s) => `Left out: ${s.path}: ${s.reason}`),
  ];
}
