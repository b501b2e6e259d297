import { enableCompileCache } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { unsupportedNode } from './runtime';

// Checked before the commands are loaded: on an older Node.js the database library crashes the process
// instead of failing with a message.
const runtimeProblem = unsupportedNode(process.versions.node);

// A reader that stops early (`storyteller search … | head`) closes the pipe: the rest of the output is not
// wanted, which is no failure to report with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit(process.exitCode ?? 0);
  });
}
if (runtimeProblem) {
  process.stderr.write(`storyteller: ${runtimeProblem}\n`);
  process.exitCode = 3;
} else {
  // The commands' bundle (dist/cli-run.js, megabytes of code) is compiled once and reused from a cache
  // that belongs to this user, never inside a campaign; Node's own NODE_COMPILE_CACHE names another place.
  enableCompileCache(process.env.NODE_COMPILE_CACHE ?? path.join(os.homedir(), '.cache', 'storyteller', 'compile-cache'));
  void import('./run').then(({ runCli, terminalSafe }) =>
    runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd(), stdin: process.stdin }).then(
      (code) => {
        process.exitCode = code;
      },
      (error: unknown) => {
        process.stderr.write(terminalSafe(`storyteller: ${error instanceof Error ? error.message : String(error)}\n`));
        process.exitCode = 3;
      },
    ),
  );
}
