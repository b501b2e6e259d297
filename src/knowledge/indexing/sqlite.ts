import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';

export type Db = Database.Database;

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
  if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db, migrations);
  return db;
}

export function migrate(db: Db, migrations: readonly Migration[]): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  const newest = migrations.reduce((max, m) => Math.max(max, m.version), 0);
  if (current > newest) {
    throw new Error(`database schema version ${current} is newer than this build understands (${newest}); update the extension`);
  }
  for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
    if (migration.version <= current) continue;
    db.transaction(() => {
      migration.up(db);
      db.pragma(`user_version = ${migration.version}`);
    })();
  }
}
