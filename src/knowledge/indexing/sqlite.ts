import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';

export type Db = Database.Database;

/** A database's statements compiled once each, by their SQL: a store runs the same few again and again. */
export function statementCache(db: Db): (sql: string) => Database.Statement {
  const compiled = new Map<string, Database.Statement>();
  return (sql) => {
    let statement = compiled.get(sql);
    if (!statement) compiled.set(sql, (statement = db.prepare(sql)));
    return statement;
  };
}

const connectionStatements = new WeakMap<Db, (sql: string) => Database.Statement>();
/** The connection's statement for `sql`, compiled once per connection: for helpers handed a bare connection that every turn calls. */
export function cachedStatement(db: Db, sql: string): Database.Statement {
  let cache = connectionStatements.get(db);
  if (!cache) connectionStatements.set(db, (cache = statementCache(db)));
  return cache(sql);
}

export interface Migration {
  version: number;
  description: string;
  up(db: Db): void;
}

export class Fts5UnavailableError extends Error {
  constructor(cause: unknown) {
    super(
      `SQLite FTS5 is not available in this build of better-sqlite3 (${String(cause)}). ` +
        'Knowledge search needs FTS5: reinstall the extension so its bundled better-sqlite3 is used.',
    );
  }
}

/** Fails with a clear message when FTS5 is missing, instead of a cryptic error at first search. */
export function assertFts5(db: Db): void {
  try {
    db.exec('CREATE VIRTUAL TABLE temp.fts5_probe USING fts5(x); DROP TABLE temp.fts5_probe;');
  } catch (error) {
    throw new Fts5UnavailableError(error);
  }
}

/**
 * How hard a commit waits for the disk. Play data is what the writer played and waits for every commit
 * (`full`); the index is derived and rebuildable, so it may lose the last commits on power loss (`normal`,
 * still never corrupt under WAL) in exchange for not syncing once per imported file.
 */
export type Durability = 'full' | 'normal';

/**
 * Opens a database file and brings it to the newest schema, one transaction per migration, so a crash
 * mid-upgrade leaves the previous version intact. `user_version` records the schema version.
 */
export function openDatabase(file: string, migrations: readonly Migration[], durability: Durability = 'full'): Db {
  let db: Db | undefined;
  try {
    if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
    db = new Database(file);
    // First: switching a new file to WAL takes a lock, which another process opening it may hold for a moment.
    db.pragma('busy_timeout = 5000');
    switchToWal(db);
    db.pragma(`synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
    db.pragma('foreign_keys = ON');
    migrate(db, migrations);
    return db;
  } catch (error) {
    db?.close();
    throw openFailure(file, error);
  }
}

/**
 * Two processes opening a new index file at once can each hold the lock the other's switch to WAL needs:
 * SQLite answers SQLITE_BUSY at once there, without waiting out the busy timeout (that would deadlock),
 * so the switch is tried again after a pause, for up to a second.
 */
function switchToWal(db: Db): void {
  for (let attempt = 1; ; attempt++) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if (!/^SQLITE_BUSY/.test(String((error as { code?: unknown }).code)) || attempt === 50) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
}

/** Codes of a file or folder this process may not write: a read-only share or disc, another user's campaign. */
const NOT_WRITABLE = /^(EACCES|EPERM|EROFS|SQLITE_READONLY|SQLITE_CANTOPEN|SQLITE_PERM)/;

/** An open that failed, with the file named: SQLite's own words ("attempt to write a readonly database") name none. */
function openFailure(file: string, error: unknown): Error {
  const code = (error as { code?: unknown }).code;
  const reason = error instanceof Error ? error.message : String(error);
  if (typeof code === 'string' && NOT_WRITABLE.test(code)) {
    return new DatabaseOpenError(`${file}: cannot be written (${reason}); the campaign's ${path.basename(path.dirname(file))} folder must be writable by you — a read-only copy cannot hold the index or play data`, code);
  }
  return new DatabaseOpenError(`${file}: ${reason}`, typeof code === 'string' ? code : undefined);
}

export class DatabaseOpenError extends Error {
  constructor(
    message: string,
    /** SQLite's or the system's code (`SQLITE_NOTADB`, `EACCES` …). */
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/** The file is damaged or not SQLite at all (a half-copied file, a sync conflict's copy, a disk error). */
export function isDamagedDatabase(error: unknown): boolean {
  return error instanceof DatabaseOpenError && /^SQLITE_(NOTADB|CORRUPT)/.test(error.code ?? '');
}

/**
 * Brings `db` to the newest of `migrations`. Two processes may open a new file at the same moment (two
 * `storyteller index` runs, the CLI beside the extension): each migration takes the write lock first
 * (BEGIN IMMEDIATE) and reads the version again under it, so one that the other applied meanwhile is skipped,
 * not run twice ("table sources already exists").
 */
export function migrate(db: Db, migrations: readonly Migration[]): void {
  const version = (): number => db.pragma('user_version', { simple: true }) as number;
  const current = version();
  const newest = migrations.reduce((max, m) => Math.max(max, m.version), 0);
  if (current > newest) {
    throw new Error(`database schema version ${current} is newer than this build understands (${newest}); update the extension`);
  }
  for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
    // Read first without the lock: a file another process just finished migrating needs no write lock here.
    if (migration.version <= current || migration.version <= version()) continue;
    db.transaction(() => {
      if (migration.version <= version()) return;
      migration.up(db);
      db.pragma(`user_version = ${migration.version}`);
    }).immediate();
  }
}
