import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { runCli } from '../../src/cli/run';
import { openSession, type CampaignSession } from '../../src/session';

/** Runs the CLI in-process with captured output, as a writer's shell would see it. */
export async function runCliCaptured(argv: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const sink = (append: (s: string) => void): Writable =>
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        append(chunk.toString());
        done();
      },
    });
  const code = await runCli(argv, { stdout: sink((s) => (stdout += s)), stderr: sink((s) => (stderr += s)), cwd });
  return { code, stdout, stderr };
}

/** Every path below `dir` (POSIX, sorted), files and folders alike. */
export function listTree(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true }) as string[]).map((p) => p.split(path.sep).join('/')).sort();
}

/** Every file below `dir` with its bytes, skipping the data folder. */
export function readTree(dir: string, skip: (relPath: string) => boolean = () => false): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const rel of listTree(dir)) {
    if (skip(rel)) continue;
    const abs = path.join(dir, ...rel.split('/'));
    if (fs.statSync(abs).isFile()) out.set(rel, fs.readFileSync(abs));
  }
  return out;
}

/** Runs `run` over the campaign's session with its index brought up to date first, then closes the session. */
export async function withIndexedSession<T>(root: string, run: (session: CampaignSession) => T): Promise<Awaited<T>> {
  const session = openSession(root);
  try {
    await session.reindex();
    return await run(session);
  } finally {
    await session.close();
  }
}
