import fs from 'node:fs';
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

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Who holds a lock. `started` and `boot` are known on Linux (from /proc); elsewhere the process id alone decides. */
interface LockOwner {
  pid: number;
  /** When the process started, in clock ticks since boot: a reused process id has another. */
  started?: string;
  /** The machine's boot id: after a restart every process id may name something else. */
  boot?: string;
}

function readProc(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function processStart(pid: number): string | undefined {
  const stat = readProc(`/proc/${pid}/stat`);
  // Field 22 (starttime); the fields are counted after the command name, which may hold spaces and parentheses.
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

function currentBoot(): string | undefined {
  return readProc('/proc/sys/kernel/random/boot_id')?.trim();
}

/** This process as a lock owner, written once into every lock file it takes. */
const ownLockText = (() => {
  const owner: LockOwner = { pid: process.pid, started: processStart(process.pid), boot: currentBoot() };
  return `${JSON.stringify(owner)}\n`;
})();

/** The owner a lock file names: this format, or an older run's bare process id. */
function parseOwner(text: string): LockOwner | undefined {
  if (/^\d+$/.test(text)) return { pid: Number(text) };
  try {
    const owner = JSON.parse(text) as Partial<LockOwner>;
    return Number.isInteger(owner.pid) ? (owner as LockOwner) : undefined;
  } catch {
    return undefined;
  }
}

function ownerAlive(owner: LockOwner): boolean {
  const boot = currentBoot();
  if (owner.boot && boot && owner.boot !== boot) return false;
  if (!processAlive(owner.pid)) return false;
  const started = owner.started && processStart(owner.pid);
  return !started || started === owner.started;
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
  const owner = parseOwner(text);
  // Empty or half-written: its writer may still be finishing the write, or died between creating and writing it.
  if (!owner) return Date.now() - stat.mtimeMs < EMPTY_LOCK_GRACE_MS ? 'unknown' : undefined;
  return ownerAlive(owner) ? owner.pid : undefined;
}

async function acquireFile(lockFile: string, options: LockWaitOptions): Promise<void> {
  let told = false;
  for (;;) {
    options.signal?.throwIfAborted();
    try {
      fs.writeFileSync(lockFile, ownLockText, { flag: 'wx' });
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
    if (fs.readFileSync(lockFile, 'utf8') === ownLockText) fs.rmSync(lockFile, { force: true });
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
