import { withFileLock, type LockWaitOptions } from '../files';
import type { Db } from './sqlite';

/**
 * One index run at a time per index file, across processes (two `storyteller index`, the CLI beside the
 * extension) and within one: the second run waits for the first and then does its own, instead of failing
 * with "database is locked" halfway. The lock is a file beside the index (see withFileLock for how a dead
 * or remote holder is told apart).
 */

/** Runs `work` holding the index lock of `db`'s file; an in-memory index needs none. */
export async function withIndexLock<T>(db: Db, work: () => Promise<T>, options: LockWaitOptions = {}): Promise<T> {
  return db.memory ? work() : withFileLock(`${db.name}.lock`, work, options);
}
