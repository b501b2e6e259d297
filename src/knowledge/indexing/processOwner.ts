import fs from 'node:fs';

/**
 * Which process owns something in a database file (the index lock, a turn being generated), told apart from
 * a later process that got the same id. `started` and `boot` are known on Linux (from /proc); elsewhere
 * the process id alone decides.
 */
export interface ProcessOwner {
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

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** This process as an owner, in the form `parseProcessOwner` reads. */
export const THIS_PROCESS = JSON.stringify({ pid: process.pid, started: processStart(process.pid), boot: currentBoot() } satisfies ProcessOwner);

/** The owner a text names: `THIS_PROCESS`'s form, or a bare process id (what older builds wrote). */
export function parseProcessOwner(text: string): ProcessOwner | undefined {
  if (/^\d+$/.test(text)) return { pid: Number(text) };
  try {
    const owner = JSON.parse(text) as Partial<ProcessOwner>;
    return Number.isInteger(owner.pid) ? (owner as ProcessOwner) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the owner is still running: its id alive, in this boot of the machine, and not since given to another process. */
export function processOwnerAlive(owner: ProcessOwner): boolean {
  const boot = currentBoot();
  if (owner.boot && boot && owner.boot !== boot) return false;
  if (!processAlive(owner.pid)) return false;
  const started = owner.started && processStart(owner.pid);
  return !started || started === owner.started;
}
