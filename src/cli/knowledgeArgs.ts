import path from 'node:path';
import { CampaignError, type Campaign } from '../knowledge/campaign';
import { locateCampaign } from '../knowledge/indexing';
import { inThreadParser, workerParser, type Parser } from '../knowledge/indexing';
import { UsageError, stringOption, type ParsedArgs } from './command';
import { oneLine } from './terminalText';

/** The campaign a knowledge command works on: the folder given (or cwd), or the nearest campaign above it. */
export function campaignFromArgs(args: ParsedArgs, cwd: string, positional: string | undefined): Campaign {
  const start = path.resolve(cwd, stringOption(args, 'campaign') ?? positional ?? '.');
  try {
    return locateCampaign(start);
  } catch (error) {
    if (error instanceof CampaignError && !error.line && /no campaign\.yaml/.test(error.message)) {
      throw new UsageError(`${error.message}; to make this folder a campaign, run 'storyteller init ${JSON.stringify(start)}'`);
    }
    throw error;
  }
}

/**
 * `--workers 0` (the default) parses on the CLI's own thread; 1 or 2 on worker threads. Measured on the SRD
 * (`npm run bench`), two workers cost about a fifth more CPU and nearly twice the peak memory and did not
 * finish sooner on a busy two-core machine, so they are there for a machine with cores to spare.
 */
export const WORKERS_OPTION = { workers: { type: 'string', default: '0' } } as const;

export function parserFromArgs(args: ParsedArgs): Parser {
  const raw = stringOption(args, 'workers') ?? '0';
  const workers = Number(raw);
  if (!Number.isInteger(workers) || workers < 0) throw new UsageError(`--workers must be 0, 1 or 2, not '${raw}'`);
  return workers === 0 ? inThreadParser() : workerParser({ size: workers });
}

/** `path:line` as editors and terminals link it. */
export function location(file: string, line: number | undefined): string {
  return line ? `${oneLine(file)}:${line}` : oneLine(file);
}
