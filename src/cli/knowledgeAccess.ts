import path from 'node:path';
import { CampaignError, findCampaignRoot, type Campaign } from '../knowledge/campaign';
import { calibratedModels } from '../knowledge/retrieval';
import { embedderFor } from '../models';
import type { SemanticSearchOptions } from '../knowledge/retrieval';
import type { KnowledgeStore, Parser } from '../knowledge/indexing';
import { defaultSettings, openSession, type CampaignSession, type StorytellerSettings } from '../session';
import { UsageError, stringOption, type CliIo, type ParsedArgs } from './command';
import { MODEL_SERVER_OPTIONS, backendFromArgs } from './modelArgs';

/** Options of every command that reads the knowledge index. */
export const KNOWLEDGE_READ_OPTIONS = {
  campaign: { type: 'string' },
  'embed-model': { type: 'string' },
  ...MODEL_SERVER_OPTIONS,
  'lexical-only': { type: 'boolean', default: false },
} as const;

export class IndexMissingError extends Error {}

/** Says on stderr that `command` waits for another process's index run to finish. */
function lockWaitNotice(command: string, io: CliIo): (holder: string) => void {
  return (holder) => io.stderr.write(`storyteller ${command}: another index run (${holder}) is updating this campaign's index; waiting for it to finish…\n`);
}

function damagedIndexNotice(command: string, movedTo: string): string {
  return `storyteller ${command}: the index was damaged; it was moved to ${movedTo} and rebuilt from the campaign's files\n`;
}

/**
 * The session of a command that brings the index in line with the files (`index`, `lint`): it says on
 * stderr when it waits for another index run, and when it moved a damaged index aside to build it again.
 */
export function openIndexingSession(command: string, root: string, options: { parser: Parser; settings: StorytellerSettings }, io: CliIo): CampaignSession {
  const session = openSession(root, { parser: options.parser, settings: () => options.settings, onLockWait: lockWaitNotice(command, io) });
  const damaged = session.store.damagedIndexMovedTo;
  if (damaged) io.stderr.write(damagedIndexNotice(command, damaged));
  return session;
}

/**
 * The campaign's session for one command: the shared defaults with the command's flags over them. A
 * CampaignError (no or a wrong campaign.yaml) becomes a usage error naming the file.
 */
export function openCliSession(root: string, overrides: Partial<StorytellerSettings> = {}, onLockWait?: (holder: string) => void): CampaignSession {
  const settings = defaultSettings(overrides);
  try {
    return openSession(root, { settings: () => settings, ...(onLockWait ? { onLockWait } : {}) });
  } catch (error) {
    if (error instanceof CampaignError) throw new UsageError(error.message);
    throw error;
  }
}

/**
 * Builds an index that holds nothing from the campaign's files before it is read, under the index lock: one
 * just found damaged and moved aside, one an earlier command moved aside, or one whose first import has not
 * committed yet (waited for). The files are the truth and the index derived from them; read empty, it would
 * answer "nothing found" for a campaign full of text. Says what it did on stderr.
 */
export async function buildIfEmpty(command: string, session: CampaignSession, io: CliIo): Promise<void> {
  const store = session.store;
  if (!store.isEmpty()) return;
  const damaged = store.damagedIndexMovedTo;
  const report = await session.reindex();
  if (!report) {
    const state = session.indexing.state;
    const reason = state.kind === 'error' ? state.message : 'the import did not finish';
    throw new IndexMissingError(`${session.campaign.indexPath}: the index holds nothing, and building it from the campaign's files failed: ${reason}`);
  }
  if (damaged) io.stderr.write(damagedIndexNotice(command, damaged));
  else if (report.files.length > 0) {
    const files = report.files.length === 1 ? 'file' : `${report.files.length} files`;
    io.stderr.write(`storyteller ${command}: the index held nothing; it was built from the campaign's ${files}\n`);
  }
}

/**
 * The campaign named by --campaign (or containing the working folder), its session and its index, built
 * first when it holds nothing (`buildIfEmpty`). `command` names the command in what it says on stderr.
 */
export async function openCampaignIndex(
  command: string,
  args: ParsedArgs,
  io: CliIo,
  overrides: Partial<StorytellerSettings> = {},
): Promise<{ campaign: Campaign; store: KnowledgeStore; session: CampaignSession }> {
  const start = path.resolve(io.cwd, stringOption(args, 'campaign') ?? '.');
  const root = findCampaignRoot(start);
  if (!root) throw new UsageError(`no campaign.yaml in ${start} or any folder above it (pass --campaign <folder>)`);
  const session = openCliSession(root, overrides, lockWaitNotice(command, io));
  try {
    // Reading must not create an index in a folder never indexed (a wrong --campaign): that is `index`'s to do.
    if (!session.hasIndex) throw new IndexMissingError(`${session.campaign.indexPath}: no index yet for campaign '${session.campaign.id}'; run 'storyteller index' first`);
    await buildIfEmpty(command, session, io);
  } catch (error) {
    await session.close();
    throw error;
  }
  return { campaign: session.campaign, store: session.store, session };
}

/** The embedding model a read command uses: --embed-model, else the one most recently calibrated in this index; none with --lexical-only. */
function embeddingModelFromArgs(args: ParsedArgs, store: KnowledgeStore): string | undefined {
  if (args.values['lexical-only'] === true) return undefined;
  return stringOption(args, 'embed-model') ?? calibratedModels(store)[0]?.model;
}

/** Semantic search for a read command, with the model `embeddingModelFromArgs` picks, on the server --provider/--base-url name. */
export function semanticFromArgs(args: ParsedArgs, io: CliIo, store: KnowledgeStore): SemanticSearchOptions | null {
  const model = embeddingModelFromArgs(args, store);
  if (!model) return null;
  return { embedder: embedderFor(backendFromArgs(args, io), model) };
}
