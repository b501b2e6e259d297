import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import Database from 'better-sqlite3';
import { REPO_ROOT } from '../../support/corpora';
import { readTree } from '../../support/interchange';

/** The built CLI, run as a writer runs it: `node dist/cli.js` (the suite's Node is the project's Node 24). */
export const BUILT_CLI = path.join(REPO_ROOT, 'dist', 'cli.js');

export function requireBuiltCli(): void {
  if (!fs.existsSync(BUILT_CLI)) throw new Error(`${BUILT_CLI} is missing: run 'npm run build' first (npm test does)`);
}

export interface Spawned {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `node dist/cli.js …`; the environment has no proxy or Ollama host, so traffic can only go where the test says. */
export function spawnCli(args: string[], options: { cwd?: string; node?: string; env?: NodeJS.ProcessEnv } = {}): Spawned {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, ...options.env };
  const child = spawn(options.node ?? process.execPath, [BUILT_CLI, ...args], { cwd: options.cwd ?? REPO_ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  return { child, stdout: () => out, stderr: () => err, exit };
}

export async function runBuiltCli(args: string[], options: { cwd?: string; node?: string; env?: NodeJS.ProcessEnv } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const spawned = spawnCli(args, options);
  spawned.child.stdin!.end();
  const { code } = await spawned.exit;
  return { code, stdout: spawned.stdout(), stderr: spawned.stderr() };
}

/** Resolves when `condition` holds, checking it every few milliseconds; fails after `timeoutMs` with `what`. */
/** SQLite's own verdict on a database a killed process was writing: 'ok' when nothing is torn. */
export function integrity(file: string): string {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.pragma('integrity_check', { simple: true }) as string;
  } finally {
    db.close();
  }
}

export async function until(condition: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A campaign's own files (everything but the derived data folder), byte for byte. */
export function campaignFiles(root: string): Map<string, Buffer> {
  return readTree(root, (rel) => rel.split('/')[0] === '.storyteller');
}

/** A loopback server that answers nothing useful and counts every request: anything reaching it is traffic. */
export class Tracker {
  readonly requests: string[] = [];
  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<Tracker> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const tracker = new Tracker(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      tracker.requests.push(`${req.method} ${req.url}`);
      res.writeHead(404).end();
    });
    return tracker;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Strings a terminal would obey: escape and bell characters, raw. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
export const RAW_TERMINAL_CONTROL = /[\u001b\u0007\u009b]/;
