import fs from 'node:fs';
import { THIS_PROCESS, describeProcessOwner, onAnotherHost, parseProcessOwner, processOwnerAlive } from './processOwner';

/**
 * One holder at a time of a lock file, across processes and within one: a second caller waits for the first
 * and then runs, instead of failing halfway. The lock file names its owner (process id, host name, and where
 * the system tells them, when that process started and which boot of the machine it ran in); a lock left by
 * a process that died (kill -9, a crash before a restart) is taken over, even when its process id now belongs
 * to another process. A lock held on another machine (a campaign on a network share) cannot be checked from
 * here: its holder renews the file's time while it runs, and only a lock not renewed for STALE_REMOTE_MS is
 * taken over.
 */

const POLL_MS = 100;
/** A lock file still empty (or unreadable) after this long was left by a process that died between creating and writing it. */
const EMPTY_LOCK_GRACE_MS = 10_000;
/** How often a holder renews its lock file's modification time. */
const RENEW_MS = 10_000;
/**
 * A lock from another machine whose time has not moved for this long (by this machine's clock, so the two
 * clocks need not agree) was left by a run that died there; generous, as one long file can hold a holder's
 * thread for a minute or more.
 */
const STALE_REMOTE_MS = 5 * 60_000;

const inProcess = new Map<string, Promise<unknown>>();

export interface LockWaitOptions {
  /** Called once when another process holds the lock, with who it is (`process 4242`, `process 4242 on atlas`). */
  onWait?: (holder: string) => void;
  /** Stops waiting (rejecting with the signal's reason). */
  signal?: AbortSignal;
  /** How long a lock from another machine may go unrenewed before it is taken over; STALE_REMOTE_MS by default. */
  staleRemoteMs?: number;
}

/** A lock file's time as last seen, and when (by this machine's clock) it was first seen at that time. */
interface Renewal {
  mtimeMs: number;
  seenAt: number;
}

/** Who holds the lock file while they live, or undefined when there is none (or it died). */
function liveHolder(lockFile: string, renewal: { last?: Renewal }, staleRemoteMs: number): string | 'unknown' | undefined {
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
  if (onAnotherHost(owner)) {
    if (renewal.last?.mtimeMs !== stat.mtimeMs) renewal.last = { mtimeMs: stat.mtimeMs, seenAt: Date.now() };
    else if (Date.now() - renewal.last.seenAt >= staleRemoteMs) return undefined;
    return describeProcessOwner(owner);
  }
  return processOwnerAlive(owner) ? describeProcessOwner(owner) : undefined;
}

async function acquireFile(lockFile: string, options: LockWaitOptions): Promise<void> {
  let told = false;
  const renewal: { last?: Renewal } = {};
  for (;;) {
    options.signal?.throwIfAborted();
    try {
      fs.writeFileSync(lockFile, `${THIS_PROCESS}\n`, { flag: 'wx' });
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = liveHolder(lockFile, renewal, options.staleRemoteMs ?? STALE_REMOTE_MS);
    if (holder === undefined) {
      fs.rmSync(lockFile, { force: true });
      continue;
    }
    if (!told && holder !== 'unknown') {
      told = true;
      options.onWait?.(holder);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** Tells a waiter on another machine that this run is alive: the lock file's time moves. */
function renewFile(lockFile: string): void {
  try {
    const now = new Date();
    fs.utimesSync(lockFile, now, now);
  } catch {
    // gone: released, or taken over
  }
}

function releaseFile(lockFile: string): void {
  try {
    if (fs.readFileSync(lockFile, 'utf8').trim() === THIS_PROCESS) fs.rmSync(lockFile, { force: true });
  } catch {
    // already gone
  }
}

/** Runs `work` holding `lockFile`, waiting for any other holder in this process or another. */
export async function withFileLock<T>(lockFile: string, work: () => Promise<T>, options: LockWaitOptions = {}): Promise<T> {
  const previous = inProcess.get(lockFile) ?? Promise.resolve();
  const run = previous
    .catch(() => undefined)
    .then(async () => {
      await acquireFile(lockFile, options);
      const renew = setInterval(() => renewFile(lockFile), RENEW_MS);
      renew.unref();
      try {
        return await work();
      } finally {
        clearInterval(renew);
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
