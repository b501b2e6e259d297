import { parseArgs, type ParseArgsConfig } from 'node:util';

/** Exit codes shared by every command, so writers' CI can rely on them. */
export const EXIT = {
  ok: 0,
  /** The command ran and found problems (lint errors, a failed check). */
  findings: 1,
  usage: 2,
  failure: 3,
} as const;

export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  cwd: string;
  /** Interactive input for `play`; absent when stdin is not a terminal session. */
  stdin?: NodeJS.ReadableStream;
  /** Where API keys are read from; process.env when absent. */
  env?: NodeJS.ProcessEnv;
}

/** What `storyteller --help` lists about a command, and how to load the rest of it. */
export interface CommandEntry {
  name: string;
  summary: string;
  load(): Promise<Command>;
}

/** A command's options and work, loaded when it runs (or shows its own help). */
export interface Command {
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  run(args: ParsedArgs, io: CliIo): Promise<number>;
}

export interface ParsedArgs {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
  json: boolean;
}

export class UsageError extends Error {}

/** Options every command accepts. */
export const COMMON_OPTIONS = {
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const satisfies NonNullable<ParseArgsConfig['options']>;

export function parseCommandArgs(command: Pick<Command, 'options'>, argv: string[]): ParsedArgs {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...COMMON_OPTIONS, ...command.options },
      allowPositionals: true,
      strict: true,
    });
    return { values, positionals, json: values.json === true };
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** Writes one JSON document (for `--json`) or human text. */
export function emit(io: CliIo, args: ParsedArgs, data: unknown, human: () => string): void {
  io.stdout.write(args.json ? `${JSON.stringify(data, null, 2)}\n` : human().replace(/\n?$/, '\n'));
}

export function stringOption(args: ParsedArgs, name: string): string | undefined {
  const value = args.values[name];
  return typeof value === 'string' ? value : undefined;
}

/** A long import says how far it got every this many items; one smaller than this says nothing. */
export const PROGRESS_EVERY = 1000;

/** Progress of a long import on stderr (`storyteller import: writing 2000 of 5123 files…`), every PROGRESS_EVERY items. */
export function progressNotice(command: string, io: CliIo): (what: string, done: number, total: number) => void {
  return (what, done, total) => {
    if (done > 0 && done < total && done % PROGRESS_EVERY === 0) io.stderr.write(`storyteller ${command}: ${what} ${done} of ${total} files…\n`);
  };
}
