import fs from 'node:fs';
import os from 'node:os';

/**
 * Which process owns something in a database file (the index lock, a turn being generated), told apart from
 * a later process that got the same id. `started` and `boot` are known on Linux (from /proc); elsewhere
 * the process id alone decides. `host` tells a process on another machine (a campaign on a network share
 * opened from two computers), which this machine cannot see at all.
 */
export interface ProcessOwner {
  pid: number;
  /** The machine's host name; absent in what older builds wrote (taken as this machine). */
  host?: string;
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
export const THIS_PROCESS = JSON.stringify({ pid: process.pid, host: os.hostname(), started: processStart(process.pid), boot: currentBoot() } satisfies ProcessOwner);

/** Whether the owner ran on another machine: its process id, start time and boot id say nothing here. */
export function onAnotherHost(owner: ProcessOwner): boolean {
  return owner.host !== undefined && owner.host !== os.hostname();
}

/** The owner in a writer's words: `process 4242`, or `process 4242 on atlas` for another machine. */
export function describeProcessOwner(owner: ProcessOwner): string {
  return onAnotherHost(owner) ? `process ${owner.pid} on ${owner.host}` : `process ${owner.pid}`;
}

/** The owner a text names: `THIS_PROCESS`'s form, or a bare process id (what older builds wrote). */
export function parseProcessOwner(text: string): ProcessOwner | undefined {
  if (/^\d+$/.test(text)) return { pid: Number(text) };
  try {
    const owner = JSON.parse(text) as Partial<ProcessOwner>;
    if (!Number.isInteger(owner.pid)) return undefined;
    // A host that is not a name is not this machine's.
    return typeof owner.host === 'string' || owner.host === undefined ? (owner as ProcessOwner) : { ...(owner as ProcessOwner), host: String(owner.host) };
  } catch {
    return undefined;
  }
}

/**
 * Whether the owner is still running: its id alive, in this boot of the machine, and not since given to
 * another process. A process on another machine is taken as running: nothing here can show it is not.
 */
export function processOwnerAlive(owner: ProcessOwner): boolean {
  if (onAnotherHost(owner)) return true;
  const boot = currentBoot();
  if (owner.boot && boot && owner.boot !== boot) return false;
  if (!processAlive(owner.pid)) return false;
  const started = owner.started && processStart(owner.pid);
  return !started || started === owner.started;
}
