import fs from 'node:fs';
import { THIS_PROCESS, parseProcessOwner, processOwnerAlive } from './processOwner';
import type { Db } from './sqlite';

/**
 * One index run at a time per index file, across processes (two `storyteller index`, the CLI beside the
 * extension) and within one: the second run waits for the first and then does its own, instead of failing
 * with "database is locked" halfway. Across processes the lock is a file beside the index naming its
 * owner (process id, and where the system tells them, when that process started and which boot of the
 * machine it ran in); a lock left by a process that died (kill -9, a crash before a restart) is taken over,
 * even when its process id now belongs to another process.
 */

const POLL_MS = 100;
/** A lock file still empty (or unreadable) after this long was left by a process that died between creating and writing it. */
const EMPTY_LOCK_GRACE_MS = 10_000;

const inProcess = new Map<string, Promise<unknown>>();

export interface LockWaitOptions {
  /** Called once when another process holds the lock, with its process id. */
  onWait?: (holderPid: number) => void;
  /** Stops waiting (rejecting with the signal's reason). */
  signal?: AbortSignal;
}

/** The live process holding the lock file, or undefined when there is none (or it died). */
function liveHolder(lockFile: string): number | 'unknown' | undefined {
  let text: string;
  let stat: fs.Stats;
  try {
    stat = fs.statSync(lockFile);
    text = fs.readFileSync(lockFile, 'utf8').trim();
  } catch {
    return undefined;
  }
  const owner = parseProcessOwner(text);
  // Empty or half-written: its writer may still be finishing the write, or died between creating and writing it.
  if (!owner) return Date.now() - stat.mtimeMs < EMPTY_LOCK_GRACE_MS ? 'unknown' : undefined;
  return processOwnerAlive(owner) ? owner.pid : undefined;
}

async function acquireFile(lockFile: string, options: LockWaitOptions): Promise<void> {
  let told = false;
  for (;;) {
    options.signal?.throwIfAborted();
    try {
      fs.writeFileSync(lockFile, `${THIS_PROCESS}\n`, { flag: 'wx' });
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = liveHolder(lockFile);
    if (holder === undefined) {
      fs.rmSync(lockFile, { force: true });
      continue;
    }
    if (!told && typeof holder === 'number') {
      told = true;
      options.onWait?.(holder);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

function releaseFile(lockFile: string): void {
  try {
    if (fs.readFileSync(lockFile, 'utf8').trim() === THIS_PROCESS) fs.rmSync(lockFile, { force: true });
  } catch {
    // already gone
  }
}

/** Runs `work` holding the index lock of `db`'s file; an in-memory index needs none. */
export async function withIndexLock<T>(db: Db, work: () => Promise<T>, options: LockWaitOptions = {}): Promise<T> {
  if (db.memory) return work();
  const lockFile = `${db.name}.lock`;
  const previous = inProcess.get(lockFile) ?? Promise.resolve();
  const run = previous
    .catch(() => undefined)
    .then(async () => {
      await acquireFile(lockFile, options);
      try {
        return await work();
      } finally {
        releaseFile(lockFile);
      }
    });
  inProcess.set(lockFile, run);
  try {
    return await run;
  } finally {
    if (inProcess.get(lockFile) === run) inProcess.delete(lockFile);
  }
}
