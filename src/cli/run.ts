import { DamagedPlayError } from '../knowledge/indexing';
import { EXIT, UsageError, parseCommandArgs, type CliIo } from './command';
import { COMMANDS } from './commands';
import { terminalSafeStream } from './terminalText';

export { terminalSafe } from './terminalText';

function help(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'storyteller — campaign knowledge and story engine (same core as the VS Code extension)',
    '',
    'usage: storyteller <command> [options]   (every command takes --json)',
    '',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    "Run 'storyteller <command> --help' for a command's options.",
  ].join('\n');
}

export async function runCli(argv: string[], rawIo: CliIo): Promise<number> {
  // Everything any command prints passes through one filter: names and text come from files and models.
  const io: CliIo = { ...rawIo, stdout: terminalSafeStream(rawIo.stdout), stderr: terminalSafeStream(rawIo.stderr) };
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(`${help()}\n`);
    return name ? EXIT.ok : EXIT.usage;
  }
  const entry = COMMANDS.find((c) => c.name === name);
  if (!entry) {
    io.stderr.write(`storyteller: unknown command '${name}'\n\n${help()}\n`);
    return EXIT.usage;
  }
  const command = await entry.load();
  try {
    const args = parseCommandArgs(command, rest);
    if (args.values.help === true) {
      io.stdout.write(`usage: ${command.usage}\n\n${entry.summary}\n`);
      return EXIT.ok;
    }
    return await command.run(args, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`storyteller ${entry.name}: ${error.message}\nusage: ${command.usage}\n`);
      return EXIT.usage;
    }
    // Any command that reads play data may find it damaged by hand; that is the data's failure, not the command's.
    if (error instanceof DamagedPlayError) {
      io.stderr.write(`storyteller ${entry.name}: ${error.message}\n`);
      return EXIT.failure;
    }
    throw error;
  }
}
