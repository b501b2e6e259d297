import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { z } from 'zod';
import { CAMPAIGN_FILE, DATA_DIR, EVAL_FILE, ReadRefusedError, loadCampaign, readFileBounded, unsafeName, unsafeRelativePath, type Campaign } from '../campaign';
import { THIS_PROCESS, createFile, parseProcessOwner, processOwnerAlive, replaceFile, shortPath, writeFailure } from '../files';
import { SOURCE_EXTENSIONS, documentKind, importCampaign, type ImportReport } from '../indexing';
import { INDEX_MIGRATIONS } from '../indexing';
import { migrate, openDatabase, type Db, type Migration } from '../indexing';
import { KnowledgeStore } from '../indexing';
import { KNOWLEDGE_CLASSES, PRIORITIES, SCOPES, VISIBILITIES, type SourceRecord } from '../campaign';
import { PLAY_MIGRATIONS, describePlayProblem, playDataProblem } from '../indexing';

/**
 * A campaign bundle: one versioned JSON file holding every file of the campaign (exact bytes), the
 * metadata the index derived for each source, and every row of the play database, so a campaign can be
 * moved, archived and restored without its original paths. Import is all-or-nothing: the bundle is
 * checked completely, restored into a temporary sibling folder, and renamed into place only at the end.
 * Only campaign content is restored (see `notCampaignContent`); a member that is not is named with the reason.
 */

export const BUNDLE_FORMAT = 'adventure-storyteller.campaign-bundle';
export const BUNDLE_VERSION = 1;
export const BUNDLE_EXTENSION = '.storyteller.json';

export interface BundleLimits {
  /** Largest bundle file read. */
  maxBundleBytes: number;
  /** Largest single member: one file's bytes, or one table's cells. */
  maxMemberBytes: number;
  /** Most files one bundle holds. */
  maxFiles: number;
}

/**
 * A JSON string cannot exceed ~512 MiB in V8; bundles stay well below it. Ten D&D SRDs are ~10,300 files; a
 * bundle of 200,000 ran for minutes, so five times that library is the most one restore takes.
 */
export const DEFAULT_BUNDLE_LIMITS: BundleLimits = { maxBundleBytes: 256 * 1024 * 1024, maxMemberBytes: 32 * 1024 * 1024, maxFiles: 50_000 };

/** Index tables that hold embeddings; carried only on request (`--embeddings`), with their model metadata. */
const EMBEDDING_TABLES = ['embedding_models', 'embeddings'] as const;

/**
 * Play columns that are a derived embedding cache, cleared unless embeddings are carried; the story engine
 * treats a memory with no embedding and no model as one to embed again.
 */
const DERIVED_PLAY_COLUMNS: Record<string, readonly string[]> = { memories: ['embedding', 'embed_model'] };

export class BundleError extends Error {
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super(`${file}: ${reason}`);
  }
}

// --- The bundle's shape -------------------------------------------------------------------------------

// Built on the first bundle read, not when the extension loads: most sessions never import a bundle.
function buildSchemas() {
  /**
   * One SQLite value. JSON numbers are integers when integral, reals otherwise; the tagged forms keep what
   * JSON cannot say exactly: integers beyond 2^53, integral reals, non-finite reals, and blobs.
   */
  const CellSchema = z.union([
    z.null(),
    z.string(),
    z.number(),
    z.strictObject({ $int: z.string().regex(/^-?\d{1,19}$/) }),
    z.strictObject({ $real: z.union([z.number(), z.enum(['Infinity', '-Infinity'])]) }),
    z.strictObject({ $blob: z.string() }),
  ]);

  const TableSchema = z.strictObject({
    name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'table names are plain identifiers'),
    columns: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'column names are plain identifiers')).min(1),
    rows: z.array(z.array(CellSchema)),
  });

  const DatabaseSchema = z.strictObject({
    schema_version: z.number().int().positive(),
    tables: z.array(TableSchema),
  });

  const SourceMetaSchema = z.strictObject({
    title: z.string(),
    class: z.enum(KNOWLEDGE_CLASSES),
    class_origin: z.string(),
    enabled: z.boolean(),
    visibility: z.enum(VISIBILITIES),
    always_include: z.boolean(),
    priority: z.enum(PRIORITIES),
    scope: z.enum(SCOPES).nullable(),
    tags: z.array(z.string()),
    entities: z.array(z.string()),
    notes: z.string().nullable(),
    lexical_state: z.string(),
  });

  const FileSchema = z.strictObject({
    path: z.string(),
    size: z.number().int().nonnegative(),
    sha256: z.string().regex(/^[0-9a-f]{64}$/, 'sha256 must be 64 lowercase hex digits'),
    /** `utf8` when the bytes are valid UTF-8 (the content is the exact text), `base64` otherwise. */
    encoding: z.enum(['utf8', 'base64']),
    content: z.string(),
    /** What the index made of the file, when it is a source. Informational: the files are the truth. */
    source: SourceMetaSchema.optional(),
  });

  const BundleSchema = z.strictObject({
    format: z.literal(BUNDLE_FORMAT),
    version: z.literal(BUNDLE_VERSION),
    exported_at: z.string(),
    campaign: z.strictObject({ id: z.string(), title: z.string() }),
    files: z.array(FileSchema),
    /** The play database, table by table; null when the campaign was never played. */
    play: DatabaseSchema.nullable(),
    /** Index embedding tables with their model metadata; null unless asked for. */
    embeddings: DatabaseSchema.nullable(),
  });
  return { CellSchema, TableSchema, DatabaseSchema, SourceMetaSchema, FileSchema, BundleSchema };
}
type BundleSchemas = ReturnType<typeof buildSchemas>;
let builtSchemas: BundleSchemas | undefined;
function bundleSchema(): BundleSchemas['BundleSchema'] {
  builtSchemas ??= buildSchemas();
  return builtSchemas.BundleSchema;
}

type Cell = z.infer<BundleSchemas['CellSchema']>;
type BundleTable = z.infer<BundleSchemas['TableSchema']>;
export type BundleDatabase = z.infer<BundleSchemas['DatabaseSchema']>;
export type BundleSourceMeta = z.infer<BundleSchemas['SourceMetaSchema']>;
export type BundleFile = z.infer<BundleSchemas['FileSchema']>;
export type CampaignBundle = z.infer<BundleSchemas['BundleSchema']>;

// --- Cells --------------------------------------------------------------------------------------------

function encodeCell(value: unknown): Cell {
  if (value === null || typeof value === 'string') return value;
  if (typeof value === 'bigint') {
    return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : { $int: value.toString() };
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return { $real: value > 0 ? 'Infinity' : '-Infinity' };
    return Number.isInteger(value) ? { $real: value } : value;
  }
  if (Buffer.isBuffer(value)) return { $blob: value.toString('base64') };
  throw new Error(`unexpected SQLite value of type ${typeof value}`);
}

function decodeCell(cell: Cell): null | string | number | bigint | Buffer {
  if (cell === null || typeof cell === 'string') return cell;
  if (typeof cell === 'number') return Number.isInteger(cell) ? BigInt(cell) : cell;
  if ('$int' in cell) return BigInt(cell.$int);
  if ('$real' in cell) return typeof cell.$real === 'number' ? cell.$real : cell.$real === 'Infinity' ? Infinity : -Infinity;
  return Buffer.from(cell.$blob, 'base64');
}

function cellBytes(cell: Cell): number {
  if (cell === null || typeof cell === 'number') return 8;
  if (typeof cell === 'string') return cell.length;
  return '$blob' in cell ? cell.$blob.length : 8;
}

// --- Tables, generically, so the bundle follows schema migrations -------------------------------------

interface ColumnInfo {
  name: string;
  pk: number;
}

const quoteId = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** Ordinary tables of the main schema, in creation order (virtual tables and their shadows are derived). */
function ordinaryTables(db: Db): string[] {
  const kinds = new Map((db.prepare('PRAGMA main.table_list').all() as { name: string; type: string }[]).map((t) => [t.name, t.type]));
  return (db.prepare("SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid").all() as { name: string }[])
    .map((t) => t.name)
    .filter((name) => kinds.get(name) === 'table');
}

function columnsOf(db: Db, table: string): ColumnInfo[] {
  return db.prepare(`PRAGMA main.table_info(${quoteId(table)})`).all() as ColumnInfo[];
}

/** Rows in primary-key order, so the same data always exports to the same bytes. */
function dumpTable(db: Db, table: string, cleared: readonly string[] = []): BundleTable {
  const columns = columnsOf(db, table);
  const keys = columns.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk);
  const order = keys.length > 0 ? keys.map((c) => quoteId(c.name)).join(', ') : 'rowid';
  const select = columns.map((c) => (cleared.includes(c.name) ? `NULL AS ${quoteId(c.name)}` : quoteId(c.name))).join(', ');
  const rows = db.prepare(`SELECT ${select} FROM ${quoteId(table)} ORDER BY ${order}`).raw(true).safeIntegers(true).all() as unknown[][];
  return { name: table, columns: columns.map((c) => c.name), rows: rows.map((row) => row.map(encodeCell)) };
}

function dumpDatabase(db: Db, tables: readonly string[], cleared: Record<string, readonly string[]> = {}): BundleDatabase {
  // One read transaction: a consistent snapshot even while the extension writes.
  return db.transaction(() => ({
    schema_version: db.pragma('user_version', { simple: true }) as number,
    tables: tables.map((t) => dumpTable(db, t, cleared[t])),
  }))();
}

/**
 * Writes bundled rows into a database whose schema is at the bundle's version. Tables and columns must
 * match the schema exactly (names only ever reach SQL after that check), and foreign keys must hold.
 */
function restoreTables(db: Db, tables: readonly BundleTable[], what: string, file: string): void {
  const known = new Set(ordinaryTables(db));
  for (const table of tables) {
    if (!known.has(table.name)) throw new BundleError(file, `${what} table '${table.name}' is not part of schema version ${String(db.pragma('user_version', { simple: true }))}`);
    const expected = columnsOf(db, table.name).map((c) => c.name);
    if (table.columns.length !== expected.length || table.columns.some((c) => !expected.includes(c))) {
      throw new BundleError(file, `${what} table '${table.name}' has columns [${table.columns.join(', ')}], expected [${expected.join(', ')}]`);
    }
  }
  db.pragma('foreign_keys = OFF');
  try {
    db.transaction(() => {
      for (const table of tables) {
        const insert = db.prepare(
          `INSERT INTO ${quoteId(table.name)} (${table.columns.map(quoteId).join(', ')}) VALUES (${table.columns.map(() => '?').join(', ')})`,
        );
        for (const [index, row] of table.rows.entries()) {
          try {
            insert.run(row.map(decodeCell));
          } catch (error) {
            const reason = error instanceof Error ? error.message : String(error);
            const kind = /UNIQUE|PRIMARY KEY/.test(reason) ? 'duplicated id' : 'invalid row';
            throw new BundleError(file, `${what} table '${table.name}' row ${index}: ${kind} (${reason})`);
          }
        }
      }
      const broken = db.prepare('PRAGMA foreign_key_check').all() as { table: string; rowid: number; parent: string }[];
      if (broken.length > 0) {
        const first = broken[0]!;
        throw new BundleError(file, `${what} table '${first.table}' has ${broken.length} row(s) pointing at missing rows of '${first.parent}'`);
      }
    })();
  } finally {
    db.pragma('foreign_keys = ON');
  }
}

/** A fresh database at exactly `version` of `migrations`, ready to receive bundled rows. */
function createAtVersion(file: string, migrations: readonly Migration[], version: number, what: string, bundleFile: string): Db {
  const newest = migrations.reduce((max, m) => Math.max(max, m.version), 0);
  if (version > newest) {
    throw new BundleError(bundleFile, `${what} schema version ${version} is newer than this build understands (${newest}); update the extension`);
  }
  if (!migrations.some((m) => m.version === version)) throw new BundleError(bundleFile, `${what} schema version ${version} is unknown`);
  return openDatabase(file, migrations.filter((m) => m.version <= version));
}

// --- Files --------------------------------------------------------------------------------------------

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** A member left out of a bundle, or out of a restore, and why. */
export interface LeftOut {
  path: string;
  reason: string;
}

/**
 * Every file of the campaign a bundle carries (campaign-relative POSIX paths, sorted), and what it leaves out
 * with the reason; symlinks are not followed. The data folder is carried as play data, not as files.
 */
function walkCampaign(root: string): { files: string[]; skipped: LeftOut[] } {
  const files: string[] = [];
  const skipped: LeftOut[] = [];
  const walk = (abs: string, rel: string): void => {
    for (const entry of fs.readdirSync(abs, { withFileTypes: true })) {
      const relPath = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (relPath === DATA_DIR) continue;
        const refused = refusedName(relPath);
        if (refused) skipped.push({ path: `${relPath}/`, reason: refused });
        else walk(path.join(abs, entry.name), relPath);
      } else if (entry.isFile()) {
        const refused = notCampaignContent(relPath);
        if (refused) skipped.push({ path: relPath, reason: refused });
        else files.push(relPath);
      } else {
        skipped.push({ path: relPath, reason: 'is not a regular file (a symbolic link, socket or device)' });
      }
    }
  };
  walk(root, '');
  const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  return { files: files.sort(byCodeUnit), skipped: skipped.sort((a, b) => byCodeUnit(a.path, b.path)) };
}

/** UTF-8 text is carried as itself (readable, diffable); anything else, or a BOM, as base64. */
function encodeFile(bytes: Buffer): Pick<BundleFile, 'encoding' | 'content'> {
  try {
    const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
    if (Buffer.from(text, 'utf8').equals(bytes)) return { encoding: 'utf8', content: text };
  } catch {
    // not UTF-8: fall through to base64
  }
  return { encoding: 'base64', content: bytes.toString('base64') };
}

function sourceMeta(source: SourceRecord): BundleSourceMeta {
  return {
    title: source.title,
    class: source.class,
    class_origin: JSON.stringify(source.classOrigin),
    enabled: source.enabled,
    visibility: source.visibility,
    always_include: source.alwaysInclude,
    priority: source.priority,
    scope: source.scope,
    tags: source.tags,
    entities: source.entities,
    notes: source.notes,
    lexical_state: source.lexicalState,
  };
}

/** Why a path's names are not campaign content: a protected or unportable name, or a dot-named file or folder. */
function refusedName(p: string): string | undefined {
  const unsafe = unsafeName(p);
  if (unsafe) return unsafe;
  const dotted = p.split('/').find((s) => s.startsWith('.'));
  if (dotted === undefined) return undefined;
  return `'${dotted}' is dot-named: tools read such files and folders as their own (a .git file or folder can run a command when the folder is opened), never campaign content`;
}

const RESTORED_KINDS = `${CAMPAIGN_FILE}, ${EVAL_FILE} and ${Object.keys(SOURCE_EXTENSIONS).join(', ')} files`;

/**
 * Why a well-formed member is not campaign content, which a bundle neither carries nor restores, or undefined
 * when it is: only `campaign.yaml` and `eval.yaml` at the top and files the indexer reads as sources (play data travels beside
 * them). Anything else — git's metadata (a `.git` file or folder, HEAD, config, objects: dot-named or without
 * an extension), editor and CI settings, executables — is someone else's, and some of it runs commands.
 */
export function notCampaignContent(p: string): string | undefined {
  if (p === CAMPAIGN_FILE || p === EVAL_FILE) return undefined;
  const refused = refusedName(p);
  if (refused) return refused;
  if (documentKind(p) === undefined) return `is not campaign content (a bundle restores only ${RESTORED_KINDS})`;
  return undefined;
}

// --- Export -------------------------------------------------------------------------------------------

export interface ExportOptions {
  /** Carry the index's embeddings and the memories' vectors, with their model metadata. */
  embeddings?: boolean;
  now?: () => Date;
}

/** What the writer calls each play table's rows; the others (passage links, calibration) are details of these. */
const PLAY_DATA_WORDS: Record<string, [one: string, many: string]> = {
  adventures: ['adventure', 'adventures'],
  turns: ['turn', 'turns'],
  prompt_snapshots: ['saved turn context', 'saved turn contexts'],
  memories: ['memory', 'memories'],
  story_summaries: ['story summary', 'story summaries'],
  conflict_decisions: ['conflict decision', 'conflict decisions'],
};

/** A bundle's play data in words ("2 adventures, 14 turns, 3 memories"), or "no play data". */
export function describePlayData(playRows: Record<string, number>): string {
  const parts = Object.entries(PLAY_DATA_WORDS)
    .map(([table, [one, many]]) => [playRows[table] ?? 0, one, many] as const)
    .filter(([count]) => count > 0)
    .map(([count, one, many]) => `${count} ${count === 1 ? one : many}`);
  return parts.length > 0 ? parts.join(', ') : 'no play data';
}

export interface ExportSummary {
  files: number;
  sources: number;
  /** Rows per play table. */
  playRows: Record<string, number>;
  embeddings: number;
  /** Paths not carried (not campaign content, or not a regular file), with the reason. */
  skipped: LeftOut[];
}

/** What an export reads: the campaign session's own config, index store and play database. */
export interface ExportSource {
  campaign: Campaign;
  store: KnowledgeStore;
  /** The play database, or undefined when the campaign was never played. */
  playDb: Db | undefined;
}

/**
 * Builds the bundle of a campaign in memory. It only reads: the index as the session keeps it (imported
 * with the writer's settings, so an export never re-imports under other ones), the files and play data.
 */
export function buildBundle(source: ExportSource, options: ExportOptions = {}): { bundle: CampaignBundle; summary: ExportSummary } {
  const { campaign, store } = source;
  const sources = new Map(store.listSources().map((s) => [s.path, s]));
  const embeddings: BundleDatabase | null = options.embeddings ? dumpDatabase(store.db, EMBEDDING_TABLES) : null;
  const { files: paths, skipped } = walkCampaign(campaign.root);
  const files: BundleFile[] = paths.map((relPath) => {
    const bytes = fs.readFileSync(path.join(campaign.root, ...relPath.split('/')));
    const source = sources.get(relPath);
    return { path: relPath, size: bytes.length, sha256: sha256(bytes), ...encodeFile(bytes), ...(source ? { source: sourceMeta(source) } : {}) };
  });
  const db = source.playDb;
  const play: BundleDatabase | null = db ? dumpDatabase(db, ordinaryTables(db), options.embeddings ? {} : DERIVED_PLAY_COLUMNS) : null;
  const bundle: CampaignBundle = {
    format: BUNDLE_FORMAT,
    version: BUNDLE_VERSION,
    exported_at: (options.now?.() ?? new Date()).toISOString(),
    campaign: { id: campaign.id, title: campaign.title },
    files,
    play,
    embeddings,
  };
  return {
    bundle,
    summary: {
      files: files.length,
      sources: files.filter((f) => f.source).length,
      playRows: Object.fromEntries((play?.tables ?? []).map((t) => [t.name, t.rows.length])),
      embeddings: embeddings?.tables.find((t) => t.name === 'embeddings')?.rows.length ?? 0,
      skipped,
    },
  };
}

/** Writes the campaign's bundle to `outFile` (atomically; an existing file only with `force`), only reading `source`. */
export function exportCampaignBundle(source: ExportSource, outFile: string, options: ExportOptions & { force?: boolean } = {}): ExportSummary & { file: string } {
  const out = path.resolve(outFile);
  if (!options.force && fs.existsSync(out)) throw new BundleError(out, 'already exists; choose another name or pass --force to replace it');
  const { bundle, summary } = buildBundle(source, options);
  try {
    (options.force ? replaceFile : createFile)(out, serializeBundle(bundle));
  } catch (error) {
    throw new BundleError(out, (error as NodeJS.ErrnoException).code === 'EEXIST' ? 'already exists; choose another name or pass --force to replace it' : `could not write the bundle (${writeFailure(error)})`);
  }
  return { ...summary, file: out };
}

/** One member per line keeps large bundles diffable without the cost of indenting every row. */
export function serializeBundle(bundle: CampaignBundle): string {
  return `${JSON.stringify(bundle, null, 1)}\n`;
}

// --- Reading and checking -----------------------------------------------------------------------------

interface CheckedFile {
  path: string;
  bytes: Buffer;
}

/**
 * Parses and checks a whole bundle without writing anything: JSON, format and version, shape, every path,
 * duplicates, sizes and hashes. Throws `BundleError` with the first reason it cannot be restored. A
 * well-formed member that is not campaign content is returned in `left` with the reason, never in `files`.
 */
export function readBundle(file: string, text: string, limits: BundleLimits = DEFAULT_BUNDLE_LIMITS): { bundle: CampaignBundle; files: CheckedFile[]; left: LeftOut[] } {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new BundleError(file, `not valid JSON, the bundle is truncated or corrupt (${error instanceof Error ? error.message : String(error)})`);
  }
  const head = data as { format?: unknown; version?: unknown } | null;
  if (head === null || typeof head !== 'object' || head.format !== BUNDLE_FORMAT) {
    throw new BundleError(file, `not a campaign bundle (expected format '${BUNDLE_FORMAT}')`);
  }
  if (head.version !== BUNDLE_VERSION) {
    const newer = typeof head.version === 'number' && head.version > BUNDLE_VERSION;
    throw new BundleError(
      file,
      `bundle version ${JSON.stringify(head.version)} is ${newer ? 'newer than this build reads' : 'not one this build reads'} (it reads version ${BUNDLE_VERSION})`,
    );
  }
  const members = (data as { files?: unknown }).files;
  if (Array.isArray(members) && members.length > limits.maxFiles) {
    throw new BundleError(file, `holds ${members.length} files, more than the ${limits.maxFiles} one bundle may hold; nothing was written`);
  }
  const parsed = bundleSchema().safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new BundleError(file, `invalid bundle: ${issue.path.join('.') || 'top level'}: ${issue.message}`);
  }
  const bundle = parsed.data;

  const seen = new Map<string, string>();
  const files: CheckedFile[] = [];
  const left: LeftOut[] = [];
  let total = 0;
  for (const member of bundle.files) {
    const unsafe = unsafeRelativePath(member.path);
    if (unsafe) throw new BundleError(file, `file path ${JSON.stringify(member.path)} ${unsafe}`);
    // Case and Unicode form differ between file systems; two members that could land on one file are refused.
    const folded = member.path.normalize('NFC').toLowerCase();
    const earlier = seen.get(folded);
    if (earlier !== undefined) throw new BundleError(file, `file path ${JSON.stringify(member.path)} is duplicated (same as ${JSON.stringify(earlier)})`);
    seen.set(folded, member.path);
    if (member.size > limits.maxMemberBytes) throw new BundleError(file, `file ${member.path} is ${member.size} bytes, above the ${limits.maxMemberBytes}-byte limit per member`);
    const bytes = member.encoding === 'utf8' ? Buffer.from(member.content, 'utf8') : decodeBase64(file, member.path, member.content);
    if (bytes.length !== member.size) throw new BundleError(file, `file ${member.path} has ${bytes.length} bytes, the bundle says ${member.size}`);
    if (sha256(bytes) !== member.sha256) throw new BundleError(file, `file ${member.path} does not match its sha256: the bundle is corrupt`);
    total += bytes.length;
    if (total > limits.maxBundleBytes) throw new BundleError(file, `files total more than the ${limits.maxBundleBytes}-byte limit`);
    const notContent = notCampaignContent(member.path);
    if (notContent) left.push({ path: member.path, reason: notContent });
    else files.push({ path: member.path, bytes });
  }
  for (const folded of seen.keys()) {
    // A file cannot also be a folder of another member.
    for (let cut = folded.lastIndexOf('/'); cut > 0; cut = folded.lastIndexOf('/', cut - 1)) {
      const parent = seen.get(folded.slice(0, cut));
      if (parent !== undefined) throw new BundleError(file, `file path ${JSON.stringify(parent)} is both a file and a folder`);
    }
  }
  if (!seen.has(CAMPAIGN_FILE)) throw new BundleError(file, `the bundle has no ${CAMPAIGN_FILE}`);
  checkDatabase(file, bundle.play, 'play', limits);
  checkDatabase(file, bundle.embeddings, 'embedding', limits);
  return { bundle, files, left };
}

function decodeBase64(file: string, member: string, content: string): Buffer {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(content) || content.length % 4 !== 0) throw new BundleError(file, `file ${member} is not valid base64`);
  return Buffer.from(content, 'base64');
}

function checkDatabase(file: string, db: BundleDatabase | null, what: string, limits: BundleLimits): void {
  if (!db) return;
  const names = new Set<string>();
  for (const table of db.tables) {
    if (names.has(table.name)) throw new BundleError(file, `${what} table '${table.name}' appears twice`);
    names.add(table.name);
    if (new Set(table.columns).size !== table.columns.length) throw new BundleError(file, `${what} table '${table.name}' repeats a column`);
    let bytes = 0;
    for (const [index, row] of table.rows.entries()) {
      if (row.length !== table.columns.length) throw new BundleError(file, `${what} table '${table.name}' row ${index} has ${row.length} values for ${table.columns.length} columns`);
      for (const cell of row) bytes += cellBytes(cell);
    }
    if (bytes > limits.maxMemberBytes) throw new BundleError(file, `${what} table '${table.name}' holds about ${bytes} bytes, above the ${limits.maxMemberBytes}-byte limit per member`);
  }
}

// --- Import -------------------------------------------------------------------------------------------

/** How far a restore got: files written, then files indexed. */
export interface BundleImportProgress {
  step: 'writing' | 'indexing';
  done: number;
  total: number;
}

export interface ImportBundleOptions {
  limits?: BundleLimits;
  onProgress?: (progress: BundleImportProgress) => void;
  /**
   * A new id and title for the restored copy (given the bundle's), or undefined to keep them: a copy
   * restored beside its original must not show up as a second, identical campaign.
   */
  renameAs?: (campaign: { id: string; title: string }) => { id: string; title: string } | undefined;
}

/** Gives the restored copy its own id and title: in campaign.yaml (comments kept) and on every play row. */
function renameRestored(campaign: Campaign, to: { id: string; title: string }): Campaign {
  const yamlFile = path.join(campaign.root, CAMPAIGN_FILE);
  const doc = YAML.parseDocument(fs.readFileSync(yamlFile, 'utf8'));
  doc.set('id', to.id);
  doc.set('title', to.title);
  replaceFile(yamlFile, doc.toString());
  if (fs.existsSync(campaign.playPath)) {
    const db = openDatabase(campaign.playPath, PLAY_MIGRATIONS);
    try {
      const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((t) => t.name);
      db.transaction(() => {
        for (const table of tables) {
          const columns = db.prepare(`PRAGMA table_info("${table}")`).all() as { name: string }[];
          if (columns.some((c) => c.name === 'campaign_id')) db.prepare(`UPDATE "${table}" SET campaign_id = ?`).run(to.id);
        }
      })();
    } finally {
      db.close();
    }
  }
  return loadCampaign(campaign.root);
}

export interface ImportBundleSummary {
  target: string;
  campaignId: string;
  campaignTitle: string;
  files: number;
  /** The files restored (campaign-relative, in the bundle's order). */
  restored: string[];
  /** Members of the bundle that were not restored, with the reason: they are not campaign content. */
  notRestored: LeftOut[];
  playRows: Record<string, number>;
  embeddings: number;
  /** Leftover folders of earlier restores whose process is gone, removed before this one. */
  removedLeftovers: string[];
  /** The rebuilt index: sources per outcome (indexed, duplicate, error...). */
  index: ImportReport['counts'];
}

/** A restore works in a sibling folder `.<target>.importing-<random>`, renamed into place when it is done. */
const IMPORTING = '.importing-';
const RESTORE_FOLDER = /^\..*\.importing-[0-9a-f]{12}$/;
/** Inside a restore's folder until it is renamed into place: which process is writing it. */
const IMPORT_OWNER = 'import-owner';
/** A restore's folder with no owner yet is left alone this long: its process may be about to write it. */
const UNOWNED_GRACE_MS = 10 * 60_000;

/**
 * Removes the folders that restores in `parent` left when they were killed (an 890 MB one was seen): those
 * whose owner is gone, or that never got one and are older than a live restore's first moment. A live
 * restore's folder, and one on another machine, are never touched. Returns the names removed.
 */
function removeDeadRestores(parent: string): string[] {
  const removed: string[] = [];
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(parent, { withFileTypes: true });
  } catch {
    return removed;
  }
  for (const entry of entries) {
    if (!entry.isDirectory() || !RESTORE_FOLDER.test(entry.name)) continue;
    const dir = path.join(parent, entry.name);
    let text: string | undefined;
    try {
      text = fs.readFileSync(path.join(dir, DATA_DIR, IMPORT_OWNER), 'utf8').trim();
    } catch {
      text = undefined;
    }
    const owner = text === undefined ? undefined : parseProcessOwner(text);
    const dead = owner ? !processOwnerAlive(owner) : Date.now() - fs.statSync(dir).mtimeMs > UNOWNED_GRACE_MS;
    if (!dead) continue;
    try {
      fs.rmSync(dir, { recursive: true, force: true });
      removed.push(entry.name);
    } catch {
      // another restore removing it too, or not ours to remove: left for the writer
    }
  }
  return removed;
}

/** Restores a bundle into `targetDir`, which must not exist or be an empty folder. All or nothing. */
export async function importCampaignBundle(bundleFile: string, targetDir: string, options: ImportBundleOptions = {}): Promise<ImportBundleSummary> {
  const limits = options.limits ?? DEFAULT_BUNDLE_LIMITS;
  const file = path.resolve(bundleFile);
  let text: string;
  try {
    text = readFileBounded(file, limits.maxBundleBytes).toString('utf8');
  } catch (error) {
    if (!(error instanceof ReadRefusedError)) throw error;
    if (error.size !== undefined) throw new BundleError(file, `bundle is ${error.size} bytes, above the ${limits.maxBundleBytes}-byte limit`);
    throw new BundleError(file, `cannot read the bundle: ${error.message}`);
  }
  const { bundle, files, left } = readBundle(file, text, limits);

  const target = path.resolve(targetDir);
  if (fs.lstatSync(target, { throwIfNoEntry: false })?.isSymbolicLink()) {
    throw new BundleError(target, 'the target is a symbolic link; give a real new or empty folder to restore the campaign into');
  }
  if (fs.existsSync(target) && (!fs.statSync(target).isDirectory() || fs.readdirSync(target).length > 0)) {
    throw new BundleError(target, 'the target must be a new or empty folder; a bundle is never restored over existing files');
  }
  try {
    fs.mkdirSync(path.dirname(target), { recursive: true });
  } catch (error) {
    throw new BundleError(target, `cannot create the folder around it (${(error as NodeJS.ErrnoException).code === 'ENOTDIR' || (error as NodeJS.ErrnoException).code === 'EEXIST' ? 'a part of the path is a file, not a folder' : (error as Error).message})`);
  }
  const removedLeftovers = removeDeadRestores(path.dirname(target));
  const temp = path.join(path.dirname(target), `.${path.basename(target)}${IMPORTING}${randomBytes(6).toString('hex')}`);
  const owner = path.join(temp, DATA_DIR, IMPORT_OWNER);
  let counts: ImportReport['counts'];
  let restored: Campaign;
  try {
    fs.mkdirSync(path.dirname(owner), { recursive: true });
    createFile(owner, `${THIS_PROCESS}\n`);
    // The folder is the set: its files are written whole here, and it is renamed into place only when all are.
    for (const [index, member] of files.entries()) {
      const abs = path.join(temp, ...member.path.split('/'));
      try {
        fs.mkdirSync(path.dirname(abs), { recursive: true });
        createFile(abs, member.bytes);
      } catch (error) {
        throw new BundleError(file, `file ${JSON.stringify(shortPath(member.path))} cannot be restored: ${writeFailure(error)}; nothing was written`);
      }
      options.onProgress?.({ step: 'writing', done: index + 1, total: files.length });
    }
    let campaign = loadCampaign(temp);
    if (bundle.play) restoreDatabase(campaign.playPath, PLAY_MIGRATIONS, bundle.play, 'play', file, refuseBrokenStory(file));
    const renamed = options.renameAs?.(bundle.campaign);
    if (renamed) campaign = renameRestored(campaign, renamed);
    restored = campaign;
    if (bundle.embeddings) restoreDatabase(campaign.indexPath, INDEX_MIGRATIONS, bundle.embeddings, 'embedding', file);
    // Indexed inside the temporary folder, so a failure here also leaves nothing behind.
    const store = KnowledgeStore.open(campaign);
    let index: ImportReport;
    try {
      index = await importCampaign(campaign, store, {
        onProgress: (event) => {
          if (event.phase === 'index') options.onProgress?.({ step: 'indexing', done: event.done, total: event.total });
        },
      });
    } finally {
      store.close();
    }
    counts = index.counts;
    fs.rmSync(owner);
    if (fs.existsSync(target)) fs.rmdirSync(target);
    fs.renameSync(temp, target);
  } catch (error) {
    fs.rmSync(temp, { recursive: true, force: true });
    throw error;
  }
  return {
    target,
    campaignId: restored.id,
    campaignTitle: restored.title,
    files: files.length,
    restored: files.map((f) => f.path),
    notRestored: left,
    removedLeftovers,
    playRows: Object.fromEntries((bundle.play?.tables ?? []).map((t) => [t.name, t.rows.length])),
    embeddings: bundle.embeddings?.tables.find((t) => t.name === 'embeddings')?.rows.length ?? 0,
    index: counts,
  };
}

/** A restore as the writer reads it, on every surface: where it went, the files restored, what was not and why. */
export function bundleImportReport(summary: ImportBundleSummary, shownTarget: string): string[] {
  return [
    `Restored campaign ${summary.campaignId} into ${shownTarget}: ${summary.files} files.`,
    ...summary.restored.map((p) => `  ${p}`),
    `Play data: ${describePlayData(summary.playRows)}.`,
    ...summary.removedLeftovers.map((name) => `Removed ${name}, the unfinished folder of a restore that was stopped.`),
    ...(summary.notRestored.length > 0
      ? [`Not restored (${summary.notRestored.length}; a bundle restores only campaign content):`, ...summary.notRestored.map((l) => `  ${l.path}: ${l.reason}`)]
      : []),
  ];
}

/**
 * Creates the database at the bundle's schema version, restores its rows, migrates it to the newest, then
 * asks `check` of the result (it throws to refuse the bundle; the restore's folder is removed with it).
 */
function restoreDatabase(dbFile: string, migrations: readonly Migration[], data: BundleDatabase, what: string, bundleFile: string, check?: (db: Db) => void): void {
  const db = createAtVersion(dbFile, migrations, data.schema_version, what, bundleFile);
  try {
    restoreTables(db, data.tables, what, bundleFile);
    migrate(db, migrations);
    check?.(db);
  } finally {
    db.close();
  }
}

/** Refuses play data that cannot be read as a story (see `playDataProblem`), naming the adventure, the turn and why. */
function refuseBrokenStory(bundleFile: string): (db: Db) => void {
  return (db) => {
    const problem = playDataProblem(db);
    if (problem) throw new BundleError(bundleFile, `play data refused, ${describePlayProblem(problem)}; nothing was written`);
  };
}
