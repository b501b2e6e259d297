import fs from 'node:fs';
import path from 'node:path';
import { CampaignError, findCampaignRoot, loadCampaign, type Campaign } from '../knowledge/campaign';
import { calibratedModels } from '../knowledge/retrieval';
import { embedderFor } from '../knowledge/models';
import type { SemanticSearchOptions } from '../knowledge/retrieval';
import { KnowledgeStore } from '../knowledge/indexing';
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

/** The campaign named by --campaign (or containing the working folder) and its existing index. */
export function openCampaignIndex(args: ParsedArgs, io: CliIo): { campaign: Campaign; store: KnowledgeStore } {
  const start = path.resolve(io.cwd, stringOption(args, 'campaign') ?? '.');
  const root = findCampaignRoot(start);
  if (!root) throw new UsageError(`no campaign.yaml in ${start} or any folder above it (pass --campaign <folder>)`);
  let campaign: Campaign;
  try {
    campaign = loadCampaign(root);
  } catch (error) {
    if (error instanceof CampaignError) throw new UsageError(error.message);
    throw error;
  }
  // Reading must not create an empty index that would then look like an empty library.
  if (!fs.existsSync(campaign.indexPath)) {
    throw new IndexMissingError(`${campaign.indexPath}: no index yet for campaign '${campaign.id}'; run 'storyteller index' first`);
  }
  return { campaign, store: KnowledgeStore.open(campaign) };
}

/**
 * Semantic search for a read command: the model named by --embed-model, else the model most recently
 * calibrated in this index, on the server --provider/--base-url name; none with --lexical-only or when
 * no model was ever calibrated.
 */
export function semanticFromArgs(args: ParsedArgs, io: CliIo, store: KnowledgeStore): SemanticSearchOptions | null {
  if (args.values['lexical-only'] === true) return null;
  const model = stringOption(args, 'embed-model') ?? calibratedModels(store)[0]?.model;
  if (!model) return null;
  return { embedder: embedderFor(backendFromArgs(args, io), model) };
}
