import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { CAMPAIGN_FILE, DATA_DIR, pathInside, readFailureReason, type Campaign } from '../campaign';
import { MIN_PASSAGE_TOKENS, type DocumentKind, type ParsedDocument } from './chunker';
import { classifySource, isUnder, type Classification } from '../campaign';
import { decodeSource, DEFAULT_SIZE_CAP_BYTES, oversizeIssue } from '../campaign';
import { regexKeyIssues, splitFrontMatter, triggersOf, type FrontMatter } from '../campaign';
import { withIndexLock } from './indexLock';
import { inThreadParser, type Parser } from './parsePool';
import { normalizeForIndex } from './indexText';
import type { KnowledgeStore, SourceStat } from './store';
import { CHUNKING_VERSION, PARSER_VERSION, type PassageRecord, type SemanticState, type SourceIssue, type SourceRecord } from '../campaign';

export const SOURCE_EXTENSIONS: Record<string, DocumentKind> = { '.md': 'markdown', '.markdown': 'markdown', '.txt': 'text' };

/** Folders that are never a campaign's knowledge, wherever they appear. */
const SKIPPED_FOLDERS = new Set([DATA_DIR, 'node_modules']);

export type FileOutcomeKind = 'indexed' | 'unchanged' | 'reclassified' | 'duplicate' | 'error' | 'removed' | 'vanished';

export interface FileOutcome {
  path: string;
  sourceId: string;
  outcome: FileOutcomeKind;
  issues: SourceIssue[];
  /** Path of the source that already holds this content. */
  duplicateOf?: string;
  passages?: number;
}

export interface ImportReport {
  campaignId: string;
  files: FileOutcome[];
  counts: Record<FileOutcomeKind, number>;
  /** Passages written in this run. */
  passages: number;
  /** Bytes of the files that were parsed in this run. */
  parsedBytes: number;
  durationMs: number;
}

export interface ImportProgress {
  phase: 'scan' | 'index' | 'done';
  done: number;
  total: number;
  path?: string;
}

export interface ImportOptions {
  /** Where parsing happens; in-thread by default. The extension passes a worker parser. */
  parser?: Parser;
  onProgress?: (event: ImportProgress) => void;
  /** Semantic state given to a newly indexed source; the embedding indexer moves it on. Default 'off'. */
  initialSemanticState?: SemanticState;
  /** Called when another index run holds this index, with who holds it (`process 4242 on atlas`); this run waits for it. */
  onLockWait?: (holder: string) => void;
  /**
   * Parses in flight or parsed and not yet written, at most (default 16): deep enough that one large file
   * at the head of the path order does not leave a worker idle while it is parsed.
   */
  concurrency?: number;
  now?: () => Date;
  /** Stops the run between files (it rejects with the signal's reason); each file written stays whole. */
  signal?: AbortSignal;
  /** Reads a source's bytes; the disk by default, synchronously (tests count reads through it). */
  readFile?: (absPath: string) => Promise<Uint8Array>;
}

/**
 * A file modified this close to the moment it was stat'ed may be modified again within the same mtime tick
 * (coarse on some file systems: 1–2 s) with the same size, unseen by size + mtime. Such a file's mtime is
 * recorded as unsettled, so the next run reads and hashes it instead of trusting its stat.
 */
const SETTLE_MS = 2_000;
const UNSETTLED_MTIME = -1;

/** Work an import does at most before it lets the event loop in (see `importAll`). */
const YIELD_MS = 5;
/** Text handed to parsers and not yet written, at most: bounds memory when the files ahead are large. */
const MAX_PARSING_BYTES = 16 * 1024 * 1024;

/**
 * A full import commits its work every BATCH_MS, or sooner once it wrote BATCH_FILES files or a
 * BATCH_GROWTH share of the files it already wrote, whichever is more, rather than once per file (each
 * commit flushes an FTS5 segment and appends a WAL commit); a run killed midway keeps everything up to its
 * last commit for the next run to build on. A commit also rewrites every page its files touched in the
 * indexes keyed by hashes and ids, which are spread all over those indexes, so with a fixed number of files
 * per commit that work grew with the square of the campaign (SRD x30: 62 commits, 4.2 times the pages the
 * floor writes and reads); batches that grow with what is written keep it in proportion.
 */
const BATCH_FILES = 500;
const BATCH_GROWTH = 0.25;
const BATCH_MS = 1_000;

/** A file found under the campaign, or refused before it is read (a symlink leading outside). */
export interface ScannedFile {
  relPath: string;
  absPath: string;
  refused?: SourceIssue;
  /**
   * The campaign path of the file this path reaches through a symlink (its own, or a folder's above it), when
   * that file is a source under its own name too: this path is only a second name for it, never its holder.
   */
  secondNameOf?: string;
}

/**
 * A file found at `relPath`; `realPath`, where a symlink on the way led, makes it a second name for the file
 * there when that file is a source under its own name.
 */
function scannedAt(campaign: Campaign, realRoot: string, relPath: string, absPath: string, realPath: string | undefined): ScannedFile {
  const own = realPath === undefined ? undefined : pathInside(realRoot, realPath);
  return own !== undefined && own !== relPath && isCandidateSource(campaign, own) ? { relPath, absPath, secondNameOf: own } : { relPath, absPath };
}

/** Stable across runs and machines: the same campaign and path always name the same source. */
export function sourceIdFor(campaignId: string, relPath: string): string {
  return createHash('sha256').update(`${campaignId}\0${relPath}`).digest('hex').slice(0, 24);
}

function passageIdFor(sourceId: string, index: number): string {
  return `${sourceId}:${index}`;
}

export function documentKind(relPath: string): DocumentKind | undefined {
  return SOURCE_EXTENSIONS[path.extname(relPath).toLowerCase()];
}

/** Whether a campaign-relative path could be a source at all (extension, dotfiles, ignore prefixes). */
export function isCandidateSource(campaign: Pick<Campaign, 'ignore'>, relPath: string): boolean {
  const segments = relPath.split('/');
  if (segments.some((s) => s.startsWith('.') || SKIPPED_FOLDERS.has(s))) return false;
  if (relPath === CAMPAIGN_FILE) return false;
  if (campaign.ignore.some((prefix) => isUnder(relPath, prefix))) return false;
  return documentKind(relPath) !== undefined;
}

/** Path order by segment, so `Monsters/x.md` comes before `Monsters (Alt)/x.md` and holds the content. */
export function comparePaths(a: string, b: string): number {
  const sa = a.split('/');
  const sb = b.split('/');
  for (let i = 0; i < Math.min(sa.length, sb.length); i++) {
    if (sa[i] !== sb[i]) return sa[i]! < sb[i]! ? -1 : 1;
  }
  return sa.length - sb.length;
}

/** Every candidate source under the campaign, in path order. Symlinks leading outside are refused, not followed. */
export async function scanCampaign(campaign: Campaign): Promise<ScannedFile[]> {
  const realRoot = await fs.promises.realpath(campaign.root);
  const found: ScannedFile[] = [];
  const visitedDirs = new Set<string>([realRoot]);
  /** `realDir`: where `absDir` really is, when a symlinked folder on the way led there; else undefined. */
  const walk = async (absDir: string, relDir: string, realDir: string | undefined): Promise<void> => {
    let entries: fs.Dirent[];
    try {
      entries = await fs.promises.readdir(absDir, { withFileTypes: true });
    } catch (error) {
      // A folder removed mid-scan simply has no files; one that cannot be read is named, or its files would vanish unexplained.
      if (relDir && !isMissing(error)) {
        const message = `folder cannot be read: ${readFailureReason(error as NodeJS.ErrnoException)}; none of its files are indexed`;
        found.push({ relPath: relDir, absPath: absDir, refused: { severity: 'error', code: 'unreadable', message } });
      }
      return;
    }
    for (const entry of entries) {
      const relPath = relDir ? `${relDir}/${entry.name}` : entry.name;
      const absPath = path.join(absDir, entry.name);
      if (entry.name.startsWith('.') || SKIPPED_FOLDERS.has(entry.name)) continue;
      if (campaign.ignore.some((prefix) => isUnder(relPath, prefix))) continue;
      // A name whose bytes are not UTF-8 (written by an older system, unpacked from an old zip) comes back with
      // replacement characters and names no file: said so, instead of "disappeared".
      if (entry.name.includes('\uFFFD') && !fs.existsSync(absPath)) {
        if (entry.isDirectory() || documentKind(relPath)) found.push({ relPath, absPath, refused: { severity: 'error', code: 'name-encoding', message: NAME_ENCODING_MESSAGE } });
        continue;
      }
      if (entry.isSymbolicLink()) {
        let target: string;
        let stat: fs.Stats;
        try {
          target = await fs.promises.realpath(absPath);
          stat = await fs.promises.stat(target);
        } catch (error) {
          if (documentKind(relPath)) {
            const message =
              (error as NodeJS.ErrnoException).code === 'ELOOP'
                ? 'symlink loops back on itself (following it leads to it again); refused'
                : 'symlink leads nowhere (its target does not exist)';
            found.push({ relPath, absPath, refused: { severity: 'error', code: 'symlink-broken', message } });
          }
          continue;
        }
        if (pathInside(realRoot, target) === undefined) {
          if (stat.isDirectory() || documentKind(relPath)) {
            found.push({
              relPath,
              absPath,
              refused: symlinkOutsideIssue(target),
            });
          }
          continue;
        }
        if (stat.isDirectory()) {
          if (!visitedDirs.has(target)) {
            visitedDirs.add(target);
            await walk(absPath, relPath, target);
          }
        } else if (stat.isFile() && isCandidateSource(campaign, relPath)) {
          found.push(scannedAt(campaign, realRoot, relPath, absPath, target));
        }
        continue;
      }
      if (entry.isDirectory()) {
        await walk(absPath, relPath, realDir && path.join(realDir, entry.name));
      } else if (entry.isFile() && isCandidateSource(campaign, relPath)) {
        found.push(scannedAt(campaign, realRoot, relPath, absPath, realDir && path.join(realDir, entry.name)));
      }
    }
  };
  await walk(campaign.root, '', undefined);
  return found.sort((a, b) => comparePaths(a.relPath, b.relPath));
}

/** One file as the scan would have found it: refused when it (or a folder above it) leads outside the campaign. */
function scanOne(campaign: Campaign, relPath: string, absPath: string): ScannedFile {
  let realRoot: string;
  let target: string;
  try {
    // Synchronous, like the stats of a run: a save waits on no thread pool round trip (writes never run on the UI's thread).
    realRoot = fs.realpathSync(campaign.root);
    target = fs.realpathSync(absPath);
  } catch {
    return { relPath, absPath }; // gone or broken: reading it reports that
  }
  if (pathInside(realRoot, target) === undefined) return { relPath, absPath, refused: symlinkOutsideIssue(target) };
  return scannedAt(campaign, realRoot, relPath, absPath, target);
}

const NAME_ENCODING_MESSAGE = 'its name is not valid UTF-8 (saved by a system using another encoding), so it cannot be opened by that name; rename it';

function symlinkOutsideIssue(target: string): SourceIssue {
  return {
    severity: 'error',
    code: 'symlink-outside',
    message: `symlink points outside the campaign (to ${target}); refused — copy the file into the campaign instead`,
  };
}

/** What is known about a file after the cheap checks, before parsing. */
type Prepared = { kind: 'done'; outcome: FileOutcome } | PreparedParse;

interface PreparedParse {
  kind: 'parse';
  file: ScannedFile;
  text: string;
  sha256: string;
  size: number;
  /** The mtime to record: the file's, or UNSETTLED_MTIME when it was modified just before it was read. */
  mtimeMs: number;
  /** The mtime seen when it was read, to notice an edit made while it was parsed. */
  readMtimeMs: number;
  meta: FrontMatter;
  classification: Classification;
  issues: SourceIssue[];
  docKind: DocumentKind;
}

/** A file's I/O done ahead of `prepare`. */
type Loaded =
  | { kind: 'refused'; issue: SourceIssue }
  | { kind: 'oversize'; stat: fs.Stats }
  | { kind: 'missing' }
  | { kind: 'unreadable'; error: NodeJS.ErrnoException }
  | { kind: 'unchanged-stat'; existing: SourceStat }
  | { kind: 'read'; bytes: Uint8Array; mtimeMs: number; settled: boolean };

/** Content already claimed in this run, by hash, so a run sees its own earlier files as holders. */
type Claims = Map<string, { id: string; path: string }>;

class ImportRun {
  readonly parser: Parser;
  readonly now: () => Date;
  readonly sizeCap: number;
  readonly readFile: (absPath: string) => Promise<Uint8Array>;
  parsedBytes = 0;
  /**
   * Sources that hold text a source earlier in path order now has too: processed again at the end, so they
   * give it up. The first copy in path order holds repeated text, as in a clean index, whatever the order
   * of edits was.
   */
  readonly displaced = new Set<string>();

  constructor(
    readonly campaign: Campaign,
    readonly store: KnowledgeStore,
    readonly options: ImportOptions,
  ) {
    this.parser = options.parser ?? inThreadParser();
    this.now = options.now ?? (() => new Date());
    this.sizeCap = campaign.sizeCapBytes ?? DEFAULT_SIZE_CAP_BYTES;
    // Synchronous, as the stats: a promised read is four thread-pool round trips (open, fstat, read, close),
    // measured at 1.4 s of a fresh index's 6 s CPU on the SRD x10, against a fraction for readFileSync.
    this.readFile = options.readFile ?? ((absPath) => Promise.resolve(fs.readFileSync(absPath)));
  }

  /** `existing`: the source at this path as the index holds it, read once by the caller (it keeps its import date). */
  private baseRecord(
    relPath: string,
    meta: FrontMatter,
    classification: Classification,
    existing: SourceRecord | undefined,
  ): Omit<SourceRecord, 'sha256' | 'size' | 'mtimeMs' | 'lexicalState' | 'issues'> {
    const id = sourceIdFor(this.campaign.id, relPath);
    const now = this.now().toISOString();
    return {
      id,
      campaignId: this.campaign.id,
      path: relPath,
      title: meta.title ?? path.basename(relPath, path.extname(relPath)),
      class: classification.class,
      classOrigin: classification.origin,
      enabled: meta.enabled ?? true,
      visibility: meta.visibility ?? 'normal',
      alwaysInclude: meta.always_include ?? false,
      priority: meta.priority ?? 'normal',
      scope: meta.scope ?? null,
      tags: meta.tags ?? [],
      entities: meta.entities ?? [],
      notes: meta.notes ?? null,
      importedAt: existing?.importedAt ?? now,
      updatedAt: now,
      parserVersion: PARSER_VERSION,
      chunkingVersion: CHUNKING_VERSION,
      semanticState: 'off',
      duplicateOf: null,
    };
  }

  /** An 'error' row keeps the file visible with its reasons; it has no passages, so nothing of it is retrieved. */
  private writeError(relPath: string, issues: SourceIssue[], facts: { sha256: string; size: number; mtimeMs: number; content: string; meta?: FrontMatter }): FileOutcome {
    const meta = facts.meta ?? {};
    const record: SourceRecord = {
      ...this.baseRecord(relPath, meta, classifySource(this.campaign, relPath, meta), this.store.getSource(sourceIdFor(this.campaign.id, relPath))),
      sha256: facts.sha256,
      size: facts.size,
      mtimeMs: facts.mtimeMs,
      lexicalState: 'error',
      issues,
    };
    this.store.writeSource(record, facts.content, [], null, []);
    return { path: relPath, sourceId: record.id, outcome: 'error', issues };
  }

  private vanished(relPath: string): FileOutcome {
    const id = sourceIdFor(this.campaign.id, relPath);
    this.store.deleteSource(id);
    return {
      path: relPath,
      sourceId: id,
      outcome: 'vanished',
      issues: [{ severity: 'warning', code: 'vanished', message: 'file disappeared while it was being imported; its source was removed' }],
    };
  }

  /**
   * The file's stat and, unless size and mtime show it unchanged since it was indexed, its bytes: the I/O
   * `prepare` decides on.
   */
  async load(file: ScannedFile, force = false): Promise<Loaded> {
    if (file.refused) return { kind: 'refused', issue: file.refused };
    try {
      // Synchronous: a stat is microseconds, and 10,000 promise round trips cost more than the stats
      // themselves (imports run on the CLI's thread or the extension's writer thread, never the UI's).
      const stat = fs.statSync(file.absPath);
      const statAt = Date.now();
      // Refused by its size alone: a huge file is never read into memory.
      if (stat.size > this.sizeCap) return { kind: 'oversize', stat };
      // A second name is always read: whether its record names the right holder is decided on its text.
      const unchanged = force || file.secondNameOf ? undefined : this.unchangedByStat(file.relPath, stat);
      if (unchanged) return { kind: 'unchanged-stat', existing: unchanged };
      const bytes = await this.readFile(file.absPath);
      return { kind: 'read', bytes, mtimeMs: stat.mtimeMs, settled: statAt - stat.mtimeMs >= SETTLE_MS };
    } catch (error) {
      if (isMissing(error)) return { kind: 'missing' };
      return { kind: 'unreadable', error: error as NodeJS.ErrnoException };
    }
  }

  /**
   * Sources as the index held them when a full run began, by path, each taken once by `unchangedByStat`:
   * one query for the library instead of one per file.
   */
  indexedAtStart: Map<string, SourceStat> | undefined;

  /** The indexed source when it has this file's size and settled mtime and nothing else could have moved it. */
  unchangedByStat(relPath: string, stat: fs.Stats): SourceStat | undefined {
    if (stat.size > this.sizeCap) return undefined;
    // Found by path, not by id: an unchanged file costs no hashing of its path.
    const listed = this.indexedAtStart?.get(relPath);
    this.indexedAtStart?.delete(relPath);
    const existing = listed ?? this.store.getSourceByPath(relPath);
    if (!existing || (existing.lexicalState !== 'ready' && existing.lexicalState !== 'duplicate')) return undefined;
    if (existing.parserVersion !== PARSER_VERSION || existing.chunkingVersion !== CHUNKING_VERSION) return undefined;
    if (existing.mtimeMs === UNSETTLED_MTIME || existing.mtimeMs !== Math.trunc(stat.mtimeMs) || existing.size !== stat.size) return undefined;
    // A class from front matter is in the unchanged file; one from folder rules follows campaign.yaml.
    if (existing.classOrigin.kind === 'front-matter') return existing;
    const classification = classifySource(this.campaign, relPath, {});
    const same = existing.class === classification.class && JSON.stringify(existing.classOrigin) === JSON.stringify(classification.origin);
    return same ? existing : undefined;
  }

  /** Everything up to parsing: cheap, and run in path order so duplicate detection is deterministic. */
  prepare(file: ScannedFile, loaded: Loaded, claims: Claims, force = false): Prepared {
    const relPath = file.relPath;
    switch (loaded.kind) {
      case 'refused':
        return { kind: 'done', outcome: this.writeError(relPath, [loaded.issue], { sha256: '', size: 0, mtimeMs: 0, content: '' }) };
      case 'oversize':
        return {
          kind: 'done',
          outcome: this.writeError(relPath, [oversizeIssue(loaded.stat.size, this.sizeCap)], { sha256: '', size: loaded.stat.size, mtimeMs: loaded.stat.mtimeMs, content: '' }),
        };
      case 'missing':
        return { kind: 'done', outcome: this.vanished(relPath) };
      case 'unreadable': {
        const issue: SourceIssue = { severity: 'error', code: 'unreadable', message: `file cannot be read: ${readFailureReason(loaded.error)}` };
        return { kind: 'done', outcome: this.writeError(relPath, [issue], { sha256: '', size: 0, mtimeMs: 0, content: '' }) };
      }
      case 'unchanged-stat': {
        const existing = loaded.existing;
        // Holders that changed this run are dealt with by restoreOrphanedDuplicates afterwards.
        if (existing.lexicalState === 'ready') claims.set(existing.sha256, { id: existing.id, path: relPath });
        return { kind: 'done', outcome: { path: relPath, sourceId: existing.id, outcome: 'unchanged', issues: existing.issues } };
      }
      case 'read':
        return this.prepareRead(file, loaded, claims, force);
    }
  }

  private prepareRead(file: ScannedFile, loaded: Extract<Loaded, { kind: 'read' }>, claims: Claims, force: boolean): Prepared {
    const relPath = file.relPath;
    const id = sourceIdFor(this.campaign.id, relPath);
    const bytes = loaded.bytes;
    const facts = { size: bytes.length, mtimeMs: loaded.settled ? loaded.mtimeMs : UNSETTLED_MTIME };
    const decoded = decodeSource(bytes, this.sizeCap);
    if (!decoded.ok) {
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      return { kind: 'done', outcome: this.writeError(relPath, [decoded.issue], { ...facts, sha256, content: '' }) };
    }
    const text = decoded.text;
    const sha256 = createHash('sha256').update(normalizeForIndex(text)).digest('hex');
    const split = splitFrontMatter(text);
    const issues = [...decoded.issues, ...split.issues, ...regexKeyIssues(split.meta)];
    if (split.issues.some((i) => i.severity === 'error')) {
      return { kind: 'done', outcome: this.writeError(relPath, issues, { ...facts, sha256, content: text, meta: split.meta }) };
    }
    const classification = classifySource(this.campaign, relPath, split.meta);
    // A symlink's second name for a source leaves its text to it, whatever the two names' path order.
    const namedHolder = file.secondNameOf === undefined ? undefined : { id: sourceIdFor(this.campaign.id, file.secondNameOf), path: file.secondNameOf };
    const stored = this.store.getSource(id);
    // What the index holds for this path still stands only if a second name already leaves its text to that holder.
    const existing = namedHolder && stored?.duplicateOf !== namedHolder.id ? undefined : stored;

    if (
      !force &&
      (existing?.lexicalState === 'ready' || existing?.lexicalState === 'duplicate') &&
      existing.sha256 === sha256 &&
      existing.parserVersion === PARSER_VERSION &&
      existing.chunkingVersion === CHUNKING_VERSION
    ) {
      // Holders that changed this run are dealt with by restoreOrphanedDuplicates afterwards.
      if (existing.lexicalState === 'ready') claims.set(sha256, { id, path: relPath });
      if (existing.class === classification.class && JSON.stringify(existing.classOrigin) === JSON.stringify(classification.origin)) {
        // Touched, or read while unsettled: recording what the disk says now lets the next run skip it by stat.
        if (existing.size !== facts.size || existing.mtimeMs !== Math.trunc(facts.mtimeMs)) this.store.recordFileStat(id, facts.size, facts.mtimeMs);
        return { kind: 'done', outcome: { path: relPath, sourceId: id, outcome: 'unchanged', issues: existing.issues } };
      }
      // Same text, new folder rule: the passages stay, only their class moves.
      const record: SourceRecord = { ...existing, ...facts, class: classification.class, classOrigin: classification.origin, updatedAt: this.now().toISOString() };
      this.store.writeSource(record, text, this.store.listPassages(id).map((p) => ({ ...p, class: classification.class })));
      return { kind: 'done', outcome: { path: relPath, sourceId: id, outcome: 'reclassified', issues: existing.issues } };
    }

    const holder = namedHolder ?? claims.get(sha256) ?? this.store.findByHash(sha256, id);
    if (holder && holder.id !== id && !namedHolder && comparePaths(holder.path, relPath) > 0) this.displaced.add(holder.id);
    else if (holder && holder.id !== id) {
      const issue: SourceIssue = {
        severity: 'warning',
        code: 'duplicate',
        message: namedHolder
          ? `the same file as ${holder.path} (reached through a symlink), indexed under that name; not indexed twice`
          : `same content as ${holder.path}, which is already indexed; not indexed twice`,
      };
      const record: SourceRecord = {
        ...this.baseRecord(relPath, split.meta, classification, stored),
        ...facts,
        sha256,
        lexicalState: 'duplicate',
        duplicateOf: holder.id,
        issues: [...issues, issue],
      };
      this.store.writeSource(record, text, [], null, []);
      return { kind: 'done', outcome: { path: relPath, sourceId: id, outcome: 'duplicate', issues: record.issues, duplicateOf: holder.path } };
    }
    claims.set(sha256, { id, path: relPath });
    return {
      kind: 'parse',
      file,
      text,
      sha256,
      ...facts,
      readMtimeMs: loaded.mtimeMs,
      meta: split.meta,
      classification,
      issues,
      docKind: documentKind(relPath) ?? 'markdown',
    };
  }

  /** Starts parsing; the result is written later, in path order, by `finish`. */
  parse(prepared: PreparedParse): Promise<ParsedDocument | Error> {
    return this.parser.parse(prepared.text, prepared.docKind).catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
  }

  /**
   * Checks the file did not move underneath us, leaves out passages another source already holds, and writes
   * the source with its passages in one transaction. Called in path order, so which source holds a repeated
   * passage never depends on which parse finished first.
   */
  async finish(prepared: PreparedParse, parsing: Promise<ParsedDocument | Error>): Promise<FileOutcome | 'changed'> {
    const relPath = prepared.file.relPath;
    const document = await parsing;
    if (document instanceof Error) {
      const issue: SourceIssue = { severity: 'error', code: 'parse', message: `file could not be parsed: ${document.message}` };
      return this.writeError(relPath, [...prepared.issues, issue], { ...prepared, content: prepared.text, meta: prepared.meta });
    }
    this.parsedBytes += prepared.size;
    const after = fs.statSync(prepared.file.absPath, { throwIfNoEntry: false });
    if (!after) return this.vanished(relPath);
    if (after.mtimeMs !== prepared.readMtimeMs || after.size !== prepared.size) return 'changed';

    const existing = this.store.getSource(sourceIdFor(this.campaign.id, relPath));
    const base = this.baseRecord(relPath, prepared.meta, prepared.classification, existing);
    const issues = [...prepared.issues];
    if (document.passages.length === 0 && !issues.some((i) => i.code === 'empty')) {
      issues.push({ severity: 'warning', code: 'no-text', message: 'file has no text to index (only headings, markup or front matter)' });
    }
    const all: PassageRecord[] = document.passages.map((draft, index) => ({
      ...draft,
      id: passageIdFor(base.id, index),
      sourceId: base.id,
      campaignId: base.campaignId,
      index,
      class: base.class,
    }));
    const repeated = this.repeatedPassages(base.id, relPath, all);
    const kept = all.filter((p) => !repeated.has(p.index));
    const firstHolder = [...repeated.values()][0];
    const wholeDuplicate = firstHolder !== undefined && kept.length === 0;
    if (firstHolder) {
      const holders = [...new Set([...repeated.values()].map((h) => h.path))];
      const named = holders.slice(0, 3).join(', ') + (holders.length > 3 ? ` and ${holders.length - 3} more` : '');
      issues.push({
        severity: 'warning',
        code: 'duplicate',
        message: wholeDuplicate
          ? `every passage repeats text already indexed from ${named}; not indexed twice`
          : `${repeated.size} of ${all.length} passages repeat text already indexed from ${named}; those are not indexed twice`,
      });
    }
    const record: SourceRecord = {
      ...base,
      title: prepared.meta.title ?? document.firstHeading ?? base.title,
      sha256: prepared.sha256,
      size: prepared.size,
      mtimeMs: prepared.mtimeMs,
      lexicalState: wholeDuplicate ? 'duplicate' : 'ready',
      duplicateOf: wholeDuplicate ? firstHolder.id : null,
      semanticState: existing && existing.semanticState !== 'off' ? 'pending' : (this.options.initialSemanticState ?? 'off'),
      issues,
    };
    this.store.atomically(() => {
      this.store.writeSource(record, prepared.text, kept, triggersOf(prepared.meta), prepared.meta.supersedes ?? []);
      // A source new to the index has none (its rows go with it when it is deleted).
      if (existing) this.store.statement('DELETE FROM duplicate_passages WHERE source_id = ?').run(record.id);
      const insert = this.store.statement('INSERT INTO duplicate_passages (source_id, idx, content_hash, holder_id) VALUES (?, ?, ?, ?)');
      for (const [index, holder] of repeated) insert.run(record.id, index, all[index]!.contentHash, holder.id);
    });
    return {
      path: relPath,
      sourceId: record.id,
      outcome: wholeDuplicate ? 'duplicate' : 'indexed',
      issues,
      passages: kept.length,
      ...(wholeDuplicate ? { duplicateOf: firstHolder.path } : {}),
    };
  }

  /**
   * Substantial passages (at least MIN_PASSAGE_TOKENS) whose exact text another source already indexes.
   * Short ones ("Hit Points 10") are kept: the same few words under different headings are different facts.
   */
  private repeatedPassages(sourceId: string, relPath: string, passages: readonly PassageRecord[]): Map<number, { id: string; path: string }> {
    // `+p.campaign_id`: the campaign index would scan every passage per lookup (quadratic over an import);
    // the content-hash index finds the handful that share the text.
    // The holder's path by a subquery, not a join: a join's statement costs ~7 µs more even when no passage matches.
    const find = `SELECT p.source_id AS id, (SELECT s.path FROM sources s WHERE s.id = p.source_id) AS path FROM passages p
       WHERE p.content_hash = ? AND +p.campaign_id = ? AND p.source_id <> ?`;
    const repeated = new Map<number, { id: string; path: string }>();
    for (const p of passages) {
      if (p.tokenCount < MIN_PASSAGE_TOKENS) continue;
      const holder = this.store.firstMatch<{ id: string; path: string }>(find, 'path', p.contentHash, this.campaign.id, sourceId);
      if (holder && comparePaths(holder.path, relPath) > 0) this.displaced.add(holder.id);
      else if (holder) repeated.set(p.index, holder);
    }
    return repeated;
  }

  /** One file, start to end; a file edited while it was parsed is read again (a few times at most). */
  async processOne(file: ScannedFile, claims: Claims, force = false): Promise<FileOutcome> {
    for (let attempt = 0; ; attempt++) {
      const prepared = this.prepare(file, await this.load(file, force), claims, force);
      if (prepared.kind === 'done') return prepared.outcome;
      const outcome = await this.finish(prepared, this.parse(prepared));
      if (outcome !== 'changed') return outcome;
      claims.delete(prepared.sha256);
      if (attempt === 2) {
        return {
          path: file.relPath,
          sourceId: sourceIdFor(this.campaign.id, file.relPath),
          outcome: 'error',
          issues: [{ severity: 'error', code: 'unstable', message: 'file kept changing while it was being imported; it will be indexed on its next save' }],
        };
      }
    }
  }

  /**
   * Sources that left content out because another source held it are processed again when that holder no
   * longer holds it (edited or removed), so the text is indexed exactly once, never zero times. With
   * `changedIds` (one saved file) only the sources that left content to those are looked at, not the library.
   */
  async restoreOrphanedDuplicates(files: Map<string, ScannedFile>, claims: Claims, changedIds?: readonly string[]): Promise<FileOutcome[]> {
    const outcomes: FileOutcome[] = [];
    const reprocess = async (source: SourceRecord): Promise<void> => {
      const file = files.get(source.path) ?? scanOne(this.campaign, source.path, path.join(this.campaign.root, ...source.path.split('/')));
      claims.delete(source.sha256);
      outcomes.push(await this.processOne(file, claims, true));
    };
    // Displaced holders first: giving up their text may leave later duplicates pointing at nothing.
    while (this.displaced.size > 0) {
      const ids = [...this.displaced];
      this.displaced.clear();
      for (const id of ids) {
        const source = this.store.getSource(id);
        if (source) await reprocess(source);
      }
    }
    for (const source of this.orphanedSources(changedIds)) await reprocess(source);
    return outcomes;
  }

  /**
   * Sources, in path order, that left out text their holder no longer holds: a passage left out for a holder
   * that lost it, or a whole duplicate whose holder is gone, not ready, or holds other text now (unless every
   * passage it left out is still held). One query, so a run that changed nothing pays milliseconds for it,
   * not one lookup per duplicate in the library. With `changedIds`, only the sources that left text to those.
   */
  private orphanedSources(changedIds?: readonly string[]): SourceRecord[] {
    const leftOut = 'EXISTS (SELECT 1 FROM duplicate_passages d WHERE d.source_id = s.id)';
    const lostHolder = `EXISTS (SELECT 1 FROM duplicate_passages d WHERE d.source_id = s.id
      AND NOT EXISTS (SELECT 1 FROM passages p WHERE p.content_hash = d.content_hash AND p.source_id = d.holder_id))`;
    const changed = changedIds ? ' IN (SELECT value FROM json_each(@changed))' : undefined;
    // Only whole duplicates and sources that left passages out can be orphaned.
    const candidates = `SELECT id FROM sources WHERE ${changed ? `duplicate_of${changed}` : `campaign_id = @campaign AND lexical_state = 'duplicate'`}
      UNION SELECT source_id FROM duplicate_passages${changed ? ` WHERE holder_id${changed}` : ''}`;
    const rows = this.store
      .statement(
        `SELECT s.id FROM (${candidates}) c CROSS JOIN sources s ON s.id = c.id
         LEFT JOIN sources h ON h.id = s.duplicate_of AND h.lexical_state = 'ready'
         WHERE s.campaign_id = @campaign AND CASE
           WHEN s.lexical_state = 'duplicate' AND s.duplicate_of IS NOT NULL
             THEN h.id IS NULL OR (h.sha256 <> s.sha256 AND NOT (${leftOut} AND NOT ${lostHolder}))
           ELSE ${lostHolder} END`,
      )
      .all({ campaign: this.campaign.id, ...(changedIds ? { changed: JSON.stringify(changedIds) } : {}) }) as { id: string }[];
    return rows.flatMap((row) => this.store.getSource(row.id) ?? []).sort((a, b) => comparePaths(a.path, b.path));
  }
}

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}

function emptyCounts(): Record<FileOutcomeKind, number> {
  return { indexed: 0, unchanged: 0, reclassified: 0, duplicate: 0, error: 0, removed: 0, vanished: 0 };
}

function report(campaign: Campaign, files: FileOutcome[], parsedBytes: number, startedAt: number): ImportReport {
  const counts = emptyCounts();
  let passages = 0;
  for (const f of files) {
    counts[f.outcome]++;
    passages += f.passages ?? 0;
  }
  return { campaignId: campaign.id, files, counts, passages, parsedBytes, durationMs: performance.now() - startedAt };
}

/**
 * Brings the index in line with the campaign folder: new and changed files are parsed and written, unchanged
 * ones are skipped without parsing, removed ones are deleted, and every file that cannot be indexed keeps an
 * 'error' row saying why. One file's failure never stops or disturbs the others.
 */
export function importCampaign(campaign: Campaign, store: KnowledgeStore, options: ImportOptions = {}): Promise<ImportReport> {
  return withIndexLock(store.db, () => importCampaignUnlocked(campaign, store, options), { onWait: options.onLockWait, signal: options.signal });
}

/** `importCampaign` for a caller that already holds the index lock. */
export function importCampaignUnlocked(campaign: Campaign, store: KnowledgeStore, options: ImportOptions = {}): Promise<ImportReport> {
  return importAll(campaign, store, options);
}

async function importAll(campaign: Campaign, store: KnowledgeStore, options: ImportOptions): Promise<ImportReport> {
  const startedAt = performance.now();
  const run = new ImportRun(campaign, store, options);
  options.onProgress?.({ phase: 'scan', done: 0, total: 0 });
  const files = await scanCampaign(campaign);
  const byPath = new Map(files.map((f) => [f.relPath, f]));
  const outcomes: FileOutcome[] = [];
  const claims: Claims = new Map();
  const ahead = Math.max(1, options.concurrency ?? 16);
  // Parses run ahead on the parser's workers; writes happen in path order, each as soon as its parse is
  // back, so the SQLite work interleaves with the parsing instead of waiting for a full queue.
  const queue: { file: ScannedFile; prepared: Prepared; parsing?: Promise<ParsedDocument | Error>; parsed: boolean }[] = [];
  let done = 0;
  let parsing = 0;
  let parsingBytes = 0;
  let yieldedAt = performance.now();
  const settle = (outcome: FileOutcome): void => {
    outcomes.push(outcome);
    done++;
    batch.wrote();
    options.onProgress?.({ phase: 'index', done, total: files.length, path: outcome.path });
  };
  const writeHead = async (): Promise<void> => {
    options.signal?.throwIfAborted();
    const head = queue.shift()!;
    if (head.prepared.kind === 'done') return settle(head.prepared.outcome);
    parsing--;
    parsingBytes -= head.prepared.size;
    const outcome = await run.finish(head.prepared, head.parsing!);
    if (outcome !== 'changed') return settle(outcome);
    claims.delete(head.prepared.sha256);
    settle(await run.processOne(head.file, claims));
  };
  const headReady = (): boolean => queue.length > 0 && (queue[0]!.prepared.kind === 'done' || queue[0]!.parsed);
  const batch = new CommitBatch(store);
  try {
    run.indexedAtStart = new Map(store.listSourceStats().map((source) => [source.path, source]));
    // Removed files go first, so nothing found later is counted a duplicate of a file that no longer exists.
    for (const source of run.indexedAtStart.values()) {
      if (!byPath.has(source.path)) {
        store.deleteSource(source.id);
        outcomes.push({ path: source.path, sourceId: source.id, outcome: 'removed', issues: [] });
      }
    }
    for (let i = 0; i < files.length; i++) {
      // Reads and parses may all settle at once (synchronous reads, the in-thread parser): the event loop is
      // let in every few milliseconds, so a cancel message or a timer's abort still stops the run between files.
      // Letting it in at every file cost 7% more CPU on the SRD x10.
      if (performance.now() - yieldedAt >= YIELD_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        yieldedAt = performance.now();
      }
      options.signal?.throwIfAborted();
      const prepared = run.prepare(files[i]!, await run.load(files[i]!), claims);
      const entry: (typeof queue)[number] = { file: files[i]!, prepared, parsed: false };
      if (prepared.kind === 'parse') {
        parsing++;
        parsingBytes += prepared.size;
        entry.parsing = run.parse(prepared);
        void entry.parsing.then(() => (entry.parsed = true));
      }
      queue.push(entry);
      while (headReady() || parsing >= ahead || parsingBytes > MAX_PARSING_BYTES) await writeHead();
    }
    while (queue.length > 0) await writeHead();
    for (const outcome of await run.restoreOrphanedDuplicates(byPath, claims)) replaceOutcome(outcomes, outcome);
  } finally {
    // Every file written is whole; committing them (even when stopped) is what lets the next run skip them. A failed write rolls the batch back instead.
    batch.end();
  }
  options.onProgress?.({ phase: 'done', done, total: files.length });
  return report(campaign, outcomes, run.parsedBytes, startedAt);
}

/**
 * The import's own transactions, committed as BATCH_FILES and BATCH_MS say, and its writes in them
 * without a savepoint per file (`KnowledgeStore.atomically`): a write that fails rolls back what the batch
 * holds since its last commit, so no half-written source is ever committed; the files it held are indexed
 * again by the next run. When the caller already holds a transaction (a rebuild, which commits once at the
 * end and rolls back whole on a failure), the writes run in that one.
 */
class CommitBatch {
  private readonly owned: boolean;
  private files = 0;
  /** Files settled in this run, committed or not. */
  private written = 0;
  private startedAt = performance.now();

  constructor(private readonly store: KnowledgeStore) {
    this.owned = !store.db.inTransaction;
    if (this.owned) store.db.exec('BEGIN');
    store.beginBulk();
  }

  wrote(): void {
    if (!this.owned) return;
    this.written++;
    if (++this.files < Math.max(BATCH_FILES, this.written * BATCH_GROWTH) && performance.now() - this.startedAt < BATCH_MS) return;
    this.store.db.exec('COMMIT; BEGIN');
    this.files = 0;
    this.startedAt = performance.now();
  }

  end(): void {
    const failed = this.store.endBulk();
    if (this.owned && this.store.db.inTransaction) this.store.db.exec(failed ? 'ROLLBACK' : 'COMMIT');
  }
}

function replaceOutcome(outcomes: FileOutcome[], outcome: FileOutcome): void {
  const at = outcomes.findIndex((o) => o.path === outcome.path);
  if (at === -1) outcomes.push(outcome);
  else outcomes[at] = outcome;
}

/**
 * Indexes one file (the extension calls this when a file is saved, created or removed). A path that no
 * longer exists removes its source. Duplicates that depended on this file's old content are re-checked.
 * A file whose size and mtime show it unchanged is answered from its stat alone, without the index lock.
 */
export async function indexFile(campaign: Campaign, store: KnowledgeStore, relPath: string, options: ImportOptions = {}): Promise<ImportReport> {
  const startedAt = performance.now();
  const posix = relPath.split(path.sep).join('/');
  if (isCandidateSource(campaign, posix)) {
    const stat = fs.statSync(path.join(campaign.root, ...posix.split('/')), { throwIfNoEntry: false });
    const unchanged = stat?.isFile() ? new ImportRun(campaign, store, options).unchangedByStat(posix, stat) : undefined;
    if (unchanged) return report(campaign, [{ path: posix, sourceId: unchanged.id, outcome: 'unchanged', issues: unchanged.issues }], 0, startedAt);
  }
  return withIndexLock(store.db, () => indexFileUnlocked(campaign, store, posix, options), { onWait: options.onLockWait, signal: options.signal });
}

async function indexFileUnlocked(campaign: Campaign, store: KnowledgeStore, posix: string, options: ImportOptions): Promise<ImportReport> {
  const startedAt = performance.now();
  const run = new ImportRun(campaign, store, options);
  const absPath = path.join(campaign.root, ...posix.split('/'));
  const outcomes: FileOutcome[] = [];
  const exists = fs.existsSync(absPath);
  if (!exists || !isCandidateSource(campaign, posix)) {
    const id = sourceIdFor(campaign.id, posix);
    if (store.deleteSource(id)) outcomes.push({ path: posix, sourceId: id, outcome: 'removed', issues: [] });
  } else {
    outcomes.push(await run.processOne(scanOne(campaign, posix, absPath), new Map()));
  }
  const changed = outcomes.filter((o) => o.outcome !== 'unchanged').map((o) => o.sourceId);
  if (changed.length > 0 || run.displaced.size > 0) {
    for (const outcome of await run.restoreOrphanedDuplicates(new Map(), new Map(), changed)) replaceOutcome(outcomes, outcome);
  }
  return report(campaign, outcomes, run.parsedBytes, startedAt);
}
