import { unsupportedNode } from './runtime';

// Checked before the commands are loaded: on an older Node.js the database library crashes the process
// instead of failing with a message.
const runtimeProblem = unsupportedNode(process.versions.node);
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
