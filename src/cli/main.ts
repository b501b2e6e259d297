import { runCli } from './run';

runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd(), stdin: process.stdin }).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`storyteller: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 3;
  },
);
