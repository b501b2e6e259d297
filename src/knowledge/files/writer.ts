import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { withFileLock, type LockWaitOptions } from './fileLock';
import { THIS_PROCESS, parseProcessOwner, processOwnerAlive } from './processOwner';

/**
 * The one writer of every file the product writes. A file is written whole to a temporary file beside its
 * target (same folder, so same file system), flushed to disk, then renamed over the target: a kill or a
 * power cut leaves the old content or the new, never an empty or half-written file. A file that must not
 * replace one (create-only) is hard-linked into place, which fails if the name is taken, as `wx` does.
 *
 * A set of files (a lorebook's entries with campaign.yaml, a set of proposals) is all or nothing by a
 * journal in the campaign's data folder: every new content is first staged beside its target, then the
 * journal is marked committed (one atomic rename), then the staged files are moved into place and the
 * journal removed. A run killed before the commit left nothing in place: the next run removes its staged
 * files. A run killed after it is rolled forward by the next run (`finishInterruptedWrites`, run on
 * opening a campaign and before every set): the rest of its files are moved into place, so the set ends
 * whole. A file changed by hand since is never written over by a roll forward.
 */

/** A file of a set: where (relative to the campaign, `/`-separated), what, and what it must be now. */
export interface SetFile {
  path: string;
  data: string | Uint8Array;
  /** The file must not exist: never written over one that appeared meanwhile. */
  create?: boolean;
  /** For a replaced file: the content it must still have, or the set is refused (someone changed it). */
  expect?: string | Uint8Array;
}

/** A set refused because a file changed (or appeared) while it was prepared; nothing of it was written. */
export class WriteConflictError extends Error {
  constructor(
    readonly file: string,
    reason: string,
  ) {
    super(`${file} ${reason}`);
  }
}

/** What finishing interrupted sets did: files moved into place, and files left as they were with why. */
export interface FinishedWrites {
  finished: string[];
  skipped: string[];
}

const TEMP_SUFFIX = '.storyteller-tmp';
const TEMP_NAME = /^\..*\.[0-9a-f]{12}\.storyteller-tmp$/;
const JOURNALS = 'writes';
const WRITE_LOCK = 'write.lock';
/** Where link() cannot make a file (FAT, some network shares): create-only falls back to a check, then a rename. */
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV']);

/** A path cut to its first and last characters, for a message a long one would drown. */
export function shortPath(file: string, keep = 40): string {
  const chars = Array.from(file);
  return chars.length <= keep * 2 + 1 ? file : `${chars.slice(0, keep).join('')}…${chars.slice(-keep).join('')}`;
}

const FAILURES: Record<string, string> = {
  ENAMETOOLONG: 'a name or the whole path is too long for this file system',
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is used up',
  EROFS: 'the file system is read-only',
  EACCES: 'permission denied',
  EPERM: 'not permitted',
  ENOTDIR: 'a part of the path is a file, not a folder',
  EISDIR: 'a folder is in the way',
};

/** Why a write failed, in a line: the system's reason, with any path in it shortened. */
export function writeFailure(error: unknown): string {
  const known = FAILURES[code(error) ?? ''];
  if (known) return `${known} (${code(error)})`;
  return (error instanceof Error ? error.message : String(error)).replace(/'([^']{100,})'/g, (_, p: string) => `'${shortPath(p)}'`);
}

const sha256 = (data: string | Uint8Array): string => createHash('sha256').update(data).digest('hex');
const code = (error: unknown): string | undefined => (error as NodeJS.ErrnoException).code;

/** A hidden name beside the target, ending in no source kind, so nothing indexes or exports it; short enough for any file system. */
function tempBeside(target: string): string {
  return path.join(path.dirname(target), `.${Array.from(path.basename(target)).slice(0, 40).join('')}.${randomBytes(6).toString('hex')}${TEMP_SUFFIX}`);
}

function writeDurably(file: string, data: string | Uint8Array, mode?: number): void {
  const fd = fs.openSync(file, 'wx', mode ?? 0o666);
  try {
    fs.writeFileSync(fd, data);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Makes a rename in `dir` durable; systems that cannot open a folder (Windows) make it durable themselves. */
function syncFolder(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
  } catch {
    // not supported here
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

function modeOf(file: string): number | undefined {
  try {
    return fs.statSync(file).mode & 0o777;
  } catch {
    return undefined;
  }
}

/** Moves a staged file to a name that must be free; EEXIST if it is taken. */
function placeNew(temp: string, target: string): void {
  try {
    fs.linkSync(temp, target);
  } catch (error) {
    if (!NO_HARD_LINKS.has(code(error) ?? '')) throw error;
    if (fs.lstatSync(target, { throwIfNoEntry: false })) throw Object.assign(new Error(`EEXIST: file already exists, '${target}'`), { code: 'EEXIST' });
    fs.renameSync(temp, target);
    return;
  }
  fs.rmSync(temp, { force: true });
}

function writeVia(target: string, data: string | Uint8Array, place: (temp: string) => void): void {
  const temp = tempBeside(target);
  try {
    writeDurably(temp, data, modeOf(target));
    place(temp);
  } catch (error) {
    fs.rmSync(temp, { force: true });
    throw error;
  }
  syncFolder(path.dirname(target));
}

/** Writes `target` whole, replacing what is there: a kill leaves the old content or the new. */
export function replaceFile(target: string, data: string | Uint8Array): void {
  writeVia(target, data, (temp) => fs.renameSync(temp, target));
}

/** Writes `target` whole only if it does not exist (throws EEXIST otherwise): a kill leaves no file or the whole one. */
export function createFile(target: string, data: string | Uint8Array): void {
  writeVia(target, data, (temp) => placeNew(temp, target));
}

/** Runs `work` as the only writer of the campaign whose data folder is `dataDir` (a read, check and write of its files). */
export function withWriteLock<T>(dataDir: string, work: () => Promise<T>, options: LockWaitOptions = {}): Promise<T> {
  fs.mkdirSync(dataDir, { recursive: true });
  return withFileLock(path.join(dataDir, WRITE_LOCK), work, options);
}

interface JournalFile {
  path: string;
  temp: string;
  create: boolean;
  /** sha256 of the content a replaced file had when the set was committed. */
  before?: string;
  after: string;
}

interface Journal {
  owner: string;
  state: 'staging' | 'commit';
  files: JournalFile[];
  /** Folders the set created, outermost first: removed again (when empty) if it is undone. */
  folders: string[];
}

const inside = (root: string, rel: string): string | undefined => {
  const abs = path.resolve(root, ...rel.split('/'));
  const back = path.relative(root, abs);
  return back === '' || back.startsWith('..') || path.isAbsolute(back) ? undefined : abs;
};

function readJournal(file: string): Journal | undefined {
  try {
    const data = JSON.parse(fs.readFileSync(file, 'utf8')) as Journal;
    return typeof data.owner === 'string' && (data.state === 'staging' || data.state === 'commit') && Array.isArray(data.files) && Array.isArray(data.folders) ? data : undefined;
  } catch {
    return undefined;
  }
}

function readIfThere(file: string): Buffer | undefined {
  try {
    return fs.readFileSync(file);
  } catch {
    return undefined;
  }
}

const contentHash = (file: string): string | undefined => {
  const bytes = readIfThere(file);
  return bytes && sha256(bytes);
};

/** Undoes a set that never committed: its staged files and the (now empty) folders it made go. */
function undo(root: string, journal: Journal): void {
  for (const f of journal.files) {
    const temp = inside(root, f.temp);
    if (temp && TEMP_NAME.test(path.basename(temp))) fs.rmSync(temp, { force: true });
  }
  for (const folder of [...journal.folders].reverse()) {
    const abs = inside(root, folder);
    try {
      if (abs) fs.rmdirSync(abs);
    } catch {
      // not empty (someone wrote there) or gone
    }
  }
}

/** Moves a committed set's remaining files into place; a file changed by hand since is left as it is. */
function rollForward(root: string, journal: Journal, done: FinishedWrites): void {
  for (const f of journal.files) {
    const target = inside(root, f.path);
    const temp = inside(root, f.temp);
    // Only names this writer makes, beside their own target: a journal is data, never a way to move other files.
    if (!target || !temp || path.dirname(temp) !== path.dirname(target) || !TEMP_NAME.test(path.basename(temp))) continue;
    if (!fs.existsSync(temp)) continue;
    const now = contentHash(target);
    try {
      if (f.create && now === undefined) placeNew(temp, target);
      else if (!f.create && now === f.before) fs.renameSync(temp, target);
      else {
        if (now !== f.after) done.skipped.push(`${f.path}: changed since it was to be written; left as it is`);
        fs.rmSync(temp, { force: true });
        continue;
      }
      syncFolder(path.dirname(target));
      done.finished.push(f.path);
    } catch (error) {
      done.skipped.push(`${f.path}: ${(error as Error).message}`);
      fs.rmSync(temp, { force: true });
    }
  }
}

/**
 * Finishes the sets a killed run left in the campaign at `root` (journals in `dataDir`): rolled forward if
 * committed, else undone. A set whose process still runs (here or on another machine) is left to it.
 */
export function finishInterruptedWrites(root: string, dataDir: string): FinishedWrites {
  const done: FinishedWrites = { finished: [], skipped: [] };
  const dir = path.join(dataDir, JOURNALS);
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((n) => n.endsWith('.json'));
  } catch {
    return done;
  }
  for (const name of names) {
    const file = path.join(dir, name);
    const journal = readJournal(file);
    const owner = journal && parseProcessOwner(journal.owner);
    if (owner && processOwnerAlive(owner)) continue;
    // Unreadable: cut by a kill while it was first written (before anything was staged), or being written by the process its name gives.
    if (!journal && processOwnerAlive({ pid: Number(name.split('.')[0]) })) continue;
    if (journal?.state === 'commit') rollForward(root, journal, done);
    else if (journal) undo(root, journal);
    // The commit's own temporary file, if the kill cut that rename.
    for (const temp of fs.readdirSync(dir).filter((n) => n.startsWith(`.${name}.`) && n.endsWith(TEMP_SUFFIX))) fs.rmSync(path.join(dir, temp), { force: true });
    fs.rmSync(file, { force: true });
  }
  return done;
}

/** Folders above `abs` up to `root` that do not exist yet, outermost first. */
function missingFolders(root: string, abs: string): string[] {
  const missing: string[] = [];
  for (let dir = path.dirname(abs); dir !== root && dir.startsWith(root) && !fs.existsSync(dir); dir = path.dirname(dir)) missing.unshift(dir);
  return missing;
}

/**
 * Writes a set of files of the campaign at `root` all or nothing (see the top of this file), after
 * finishing any set a killed run left. Throws WriteConflictError, having written nothing, when a file to
 * create exists or a file to replace no longer holds `expect`.
 */
export function writeFileSet(root: string, dataDir: string, files: readonly SetFile[], onStaged?: (done: number, total: number) => void): void {
  finishInterruptedWrites(root, dataDir);
  const rel = (abs: string) => path.relative(root, abs).split(path.sep).join('/');
  const planned = files.map((f) => {
    const target = inside(root, f.path);
    if (!target) throw new WriteConflictError(f.path, 'is not inside the campaign');
    // What a replaced file holds now, to put back if the set is undone in this process.
    const expect = f.create ? undefined : (f.expect ?? readIfThere(target));
    return { ...f, expect, target, temp: tempBeside(target) };
  });
  const folders = [...new Set(planned.flatMap((f) => missingFolders(root, f.target)))].sort((a, b) => a.length - b.length);
  const journal: Journal = {
    owner: THIS_PROCESS,
    state: 'staging',
    folders: folders.map(rel),
    files: planned.map((f) => ({ path: f.path, temp: rel(f.temp), create: f.create === true, ...(f.expect !== undefined ? { before: sha256(f.expect) } : {}), after: sha256(f.data) })),
  };
  const journalFile = path.join(dataDir, JOURNALS, `${process.pid}.${randomBytes(8).toString('hex')}.json`);
  fs.mkdirSync(path.dirname(journalFile), { recursive: true });
  // Written in place: cut by a kill, it is unreadable and nothing was staged yet; the commit replaces it whole.
  writeDurably(journalFile, JSON.stringify(journal));
  syncFolder(path.dirname(journalFile));
  const applied: typeof planned = [];
  try {
    for (const folder of folders) fs.mkdirSync(folder, { recursive: true });
    for (const [i, f] of planned.entries()) {
      writeDurably(f.temp, f.data, modeOf(f.target));
      onStaged?.(i + 1, planned.length);
    }
    for (const f of planned) {
      if (f.create && fs.lstatSync(f.target, { throwIfNoEntry: false })) throw new WriteConflictError(f.path, 'exists already: it appeared while this was being written');
      if (!f.create && f.expect !== undefined && contentHash(f.target) !== sha256(f.expect)) throw new WriteConflictError(f.path, 'changed while this was being written');
    }
    replaceFile(journalFile, JSON.stringify({ ...journal, state: 'commit' }));
    for (const f of planned) {
      if (f.create) placeNew(f.temp, f.target);
      else fs.renameSync(f.temp, f.target);
      applied.push(f);
    }
  } catch (error) {
    // Undone in this process too: what was put in place goes back as it was.
    for (const f of applied) {
      if (f.create) fs.rmSync(f.target, { force: true });
      else if (f.expect !== undefined) replaceFile(f.target, f.expect);
    }
    undo(root, journal);
    fs.rmSync(journalFile, { force: true });
    if (code(error) === 'EEXIST') throw new WriteConflictError(rel(planned.find((f) => !applied.includes(f))?.target ?? root), 'exists already: it appeared while this was being written');
    throw error;
  }
  for (const dir of new Set(planned.map((f) => path.dirname(f.target)))) syncFolder(dir);
  fs.rmSync(journalFile, { force: true });
}
