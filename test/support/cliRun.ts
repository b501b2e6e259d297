import { PassThrough, Readable } from 'node:stream';
import { runCli } from '../../src/cli/run';

/** Runs the real CLI entry with captured output, exactly as `storyteller …` would in `cwd`. */
export async function runCaptured(argv: string[], cwd: string, input?: string, env?: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => (out += c.toString()));
  stderr.on('data', (c: Buffer) => (err += c.toString()));
  const stdin = input === undefined ? undefined : Readable.from([input]);
  const code = await runCli(argv, { stdout, stderr, cwd, stdin, ...(env ? { env } : {}) });
  return { code, stdout: out, stderr: err };
}
