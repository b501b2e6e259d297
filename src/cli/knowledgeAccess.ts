import path from 'node:path';
import { CampaignError, findCampaignRoot, type Campaign } from '../knowledge/campaign';
import { calibratedModels } from '../knowledge/retrieval';
import { embedderFor } from '../knowledge/models';
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

/**
 * The session of a command that brings the index in line with the files (`index`, `lint`): it says on
 * stderr when it waits for another index run, and when it moved a damaged index aside to build it again.
 */
export function openIndexingSession(command: string, root: string, options: { parser: Parser; settings: StorytellerSettings }, io: CliIo): CampaignSession {
  const session = openSession(root, {
    parser: options.parser,
    settings: () => options.settings,
    onLockWait: (holder) => io.stderr.write(`storyteller ${command}: another index run (${holder}) is updating this campaign's index; waiting for it to finish…\n`),
  });
  const damaged = session.store.damagedIndexMovedTo;
  if (damaged) io.stderr.write(`storyteller ${command}: the index was damaged; it was moved to ${damaged} and rebuilt from the campaign's files\n`);
  return session;
}

/**
 * The campaign's session for one command: the shared defaults with the command's flags over them. A
 * CampaignError (no or a wrong campaign.yaml) becomes a usage error naming the file.
 */
export function openCliSession(root: string, overrides: Partial<StorytellerSettings> = {}): CampaignSession {
  const settings = defaultSettings(overrides);
  try {
    return openSession(root, { settings: () => settings });
  } catch (error) {
    if (error instanceof CampaignError) throw new UsageError(error.message);
    throw error;
  }
}

/** The campaign named by --campaign (or containing the working folder), its session and its existing index. */
export function openCampaignIndex(args: ParsedArgs, io: CliIo, overrides: Partial<StorytellerSettings> = {}): { campaign: Campaign; store: KnowledgeStore; session: CampaignSession } {
  const start = path.resolve(io.cwd, stringOption(args, 'campaign') ?? '.');
  const root = findCampaignRoot(start);
  if (!root) throw new UsageError(`no campaign.yaml in ${start} or any folder above it (pass --campaign <folder>)`);
  const session = openCliSession(root, overrides);
  // Reading must not create an empty index that would then look like an empty library.
  if (!session.hasIndex) {
    void session.close();
    throw new IndexMissingError(`${session.campaign.indexPath}: no index yet for campaign '${session.campaign.id}'; run 'storyteller index' first`);
  }
  // An empty index in place of a damaged one would read as a campaign with nothing relevant in it.
  const damaged = session.store.damagedIndexMovedTo;
  if (damaged) {
    void session.close();
    throw new IndexMissingError(`${session.campaign.indexPath}: the index was damaged and was moved to ${damaged}; run 'storyteller index' to rebuild it from the campaign's files`);
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
