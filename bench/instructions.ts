import { spawn } from 'node:child_process';
import { REPO_ROOT } from '../test/support/corpora';

/**
 * Instructions a whole `node <args>` process runs, every thread, counted by valgrind's callgrind: a figure the
 * machine's load cannot move (CPU time on a shared 2-core machine swings by half between two runs of the same
 * code). Callgrind runs the process some 50 times slower, so the bench counts only when asked (--instructions).
 */
export function countInstructions(args: readonly string[], input = '', ok: readonly number[] = [0]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn('valgrind', ['--tool=callgrind', '--callgrind-out-file=/dev/null', '--smc-check=all-non-file', process.execPath, ...args], {
      cwd: REPO_ROOT,
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', (error) => reject(new Error(`valgrind could not start (${error.message}): install Debian's valgrind to count instructions`)));
    child.on('close', (code) => {
      const collected = /Collected : (\d+)/.exec(stderr)?.[1];
      if (code === null || !ok.includes(code) || collected === undefined) return reject(new Error(`valgrind node ${args.join(' ')} exited ${code}: ${stderr.slice(-2000)}`));
      resolve(Number(collected));
    });
    child.stdin.end(input);
  });
}
