import path from 'node:path';
import { narratorFor, toolChatFor } from '../../models';
import { EvalSetError, evaluateResearch, readEvalSet, renderEvalTable } from '../../story/evaluation';
import { indexKnowledge } from '../../story/indexKnowledge';
import { EXIT, UsageError, emit, stringOption, type Command } from '../command';
import { IndexMissingError, KNOWLEDGE_READ_OPTIONS, openCampaignIndex, semanticFromArgs } from '../knowledgeAccess';
import { MODEL_SERVER_USAGE, backendFromArgs } from '../modelArgs';

/** `storyteller eval`: research against today's selection on the campaign's eval.yaml, per model (src/story/evaluation.ts). */

export const evalCommand: Command = {
  usage: `storyteller eval [campaign-dir] --model M [--model M2]... [--set eval.yaml] [--context-window N] ${MODEL_SERVER_USAGE} [--embed-model M] [--lexical-only] [--json]`,
  options: {
    ...KNOWLEDGE_READ_OPTIONS,
    model: { type: 'string', multiple: true },
    set: { type: 'string' },
    'context-window': { type: 'string' },
  },
  async run(args, io) {
    const models = [args.values.model ?? []].flat().filter((m): m is string => typeof m === 'string' && m.trim() !== '');
    if (models.length === 0) throw new UsageError('eval needs the model that researches: --model <name> (several to compare)');
    const windowText = stringOption(args, 'context-window');
    const window = windowText === undefined ? undefined : Number(windowText);
    if (window !== undefined && (!Number.isInteger(window) || window < 512)) throw new UsageError(`--context-window is a whole number of tokens, at least 512, not '${windowText}'`);
    const campaignArg = stringOption(args, 'campaign') ?? args.positionals[0];
    let opened;
    try {
      opened = await openCampaignIndex('eval', { ...args, values: { ...args.values, ...(campaignArg ? { campaign: campaignArg } : {}) } }, io);
    } catch (error) {
      if (!(error instanceof IndexMissingError)) throw error;
      io.stderr.write(`storyteller eval: ${error.message}\n`);
      return EXIT.failure;
    }
    const { campaign, store, session } = opened;
    try {
      const setFile = path.resolve(io.cwd, stringOption(args, 'set') ?? path.join(campaign.root, 'eval.yaml'));
      let set;
      try {
        set = readEvalSet(setFile, new Set(store.listSources().map((s) => s.path)));
      } catch (error) {
        throw error instanceof EvalSetError ? new UsageError(error.message) : error;
      }
      const backend = backendFromArgs(args, io);
      const report = await evaluateResearch({
        campaign,
        set,
        knowledge: indexKnowledge(store, semanticFromArgs(args, io, store), session.canonFacts(store)),
        client: toolChatFor(backend),
        models,
        contextWindow: async (model) => window ?? (await narratorFor(backend).contextLength(model).catch(() => null)) ?? undefined,
        store,
        ollamaHost: backend.provider === 'ollama' ? backend.baseUrl : null,
      });
      emit(io, args, report, () => renderEvalTable(report));
      return EXIT.ok;
    } finally {
      await session.close();
    }
  },
};
