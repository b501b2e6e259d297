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
