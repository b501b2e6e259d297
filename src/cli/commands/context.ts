import { DEFAULT_KNOWLEDGE_BUDGETS, defaultWorldInfoQuery } from '../../knowledge/retrieval';
import { indexKnowledge } from '../../story/indexKnowledge';
import type { KnowledgeBudgets, KnowledgeSection } from '../../knowledge/retrieval';
import { EXIT, UsageError, emit, stringOption, type Command, type ParsedArgs } from '../command';
import { IndexMissingError, KNOWLEDGE_READ_OPTIONS, openCampaignIndex, semanticFromArgs } from '../knowledgeAccess';
import { decisionLine, excerpt, locate, worldInfoLines } from '../../knowledge/retrieval';
import { stageOption } from './search';
import { MODEL_SERVER_USAGE, backendFromArgs } from '../modelArgs';
import { toolChatFor } from '../../models';
import { renderAction } from '../../story/contextBuilder';
import { researchLines } from '../../story/contextReport';
import { research as runResearch } from '../../story/research';
import type { ResearchRecord } from '../../story/types';
import { TokenEstimator } from '../../story/tokenEstimator';

const SECTION_TITLES: Record<KnowledgeSection, string> = {
  alwaysInclude: 'Always-include canon',
  canon: 'Canon',
  reference: 'Reference',
  inspiration: 'Inspiration',
};

function listOption(args: ParsedArgs, name: string): string[] {
  const value = args.values[name];
  return (Array.isArray(value) ? value : value === undefined ? [] : [value]).filter((v): v is string => typeof v === 'string');
}

function budgetsFrom(args: ParsedArgs): KnowledgeBudgets {
  const budgets: KnowledgeBudgets = { ...DEFAULT_KNOWLEDGE_BUDGETS };
  for (const key of ['alwaysInclude', 'canon', 'reference', 'inspiration', 'total'] as const) {
    const option = key === 'alwaysInclude' ? 'budget-always' : `budget-${key}`;
    const text = stringOption(args, option);
    if (text === undefined) continue;
    const tokens = Number(text);
    if (!Number.isInteger(tokens) || tokens < 0) throw new UsageError(`--${option} must be a whole number of tokens, not '${text}'`);
    budgets[key] = tokens;
  }
  return budgets;
}

export const contextCommand: Command = {
  usage:
    'storyteller context --input "<text>" [--scene S] [--entity NAME]... [--recent LINE]... [--state-fact F]... [--stage narrator|player] ' +
    '[--budget-always N] [--budget-canon N] [--budget-reference N] [--budget-inspiration N] [--budget-total N] [--campaign <dir>] ' +
    `[--embed-model M] ${MODEL_SERVER_USAGE} [--lexical-only] [--research --model M] [--json]`,
  options: {
    ...KNOWLEDGE_READ_OPTIONS,
    input: { type: 'string' },
    scene: { type: 'string' },
    entity: { type: 'string', multiple: true },
    recent: { type: 'string', multiple: true },
    'state-fact': { type: 'string', multiple: true },
    stage: { type: 'string' },
    'budget-always': { type: 'string' },
    'budget-canon': { type: 'string' },
    'budget-reference': { type: 'string' },
    'budget-inspiration': { type: 'string' },
    'budget-total': { type: 'string' },
    research: { type: 'boolean', default: false },
    model: { type: 'string' },
  },
  async run(args, io) {
    const input = stringOption(args, 'input') ?? args.positionals.join(' ');
    if (!input.trim()) throw new UsageError('give the writer input with --input "<text>"');
    const stage = stageOption(stringOption(args, 'stage'));
    const budgets = budgetsFrom(args);
    const researchModel = stringOption(args, 'model');
    if (args.values.research === true && !researchModel) throw new UsageError('--research needs the model that researches: --model <name>');
    let opened;
    try {
      opened = await openCampaignIndex('context', args, io);
    } catch (error) {
      if (!(error instanceof IndexMissingError)) throw error;
      io.stderr.write(`storyteller context: ${error.message}\n`);
      return EXIT.failure;
    }
    const { campaign, store } = opened;
    try {
      // The same knowledge port play uses: canon that newer canon or the writer's decision supersedes is marked, not sent as current.
      const recent = listOption(args, 'recent');
      const port = indexKnowledge(store, semanticFromArgs(args, io, store), opened.session.canonFacts(store));
      const query = {
        input,
        scene: stringOption(args, 'scene'),
        entities: listOption(args, 'entity'),
        recent,
        stateFacts: listOption(args, 'state-fact'),
        stage,
        budgets,
        // The --recent lines and the input are the chat SillyTavern's World Info scans, by campaign.yaml's settings.
        worldInfo: defaultWorldInfoQuery({ input, recent: recent ?? [], budgets }, campaign.worldInfo),
      };
      let result = await port.retrieve(query);
      let research: ResearchRecord | undefined;
      if (researchModel && args.values.research === true) {
        // Asked for by name, research runs in the JSON protocol where the server refuses tools.
        ({ result, record: research } = await runResearch({
          client: toolChatFor(backendFromArgs(args, io)),
          model: researchModel,
          knowledge: port.research!,
          task: { action: renderAction({ kind: 'do', text: input }, ''), persona: '', worldState: query.stateFacts.join('\n'), recent: query.recent, personaName: '', characterOf: (id) => port.character(id) },
          query,
          base: result,
          estimator: new TokenEstimator(researchModel),
        }));
      }
      emit(io, args, { campaign: campaign.id, ...result, ...(research ? { research } : {}) }, () => {
        const lines = [`Knowledge context for "${input}" in '${campaign.title}' (stage: ${stage})`, `semantic: ${result.record.semantic.reason}`, ''];
        if (research) lines.push(...researchLines(research), '');
        for (const conflict of result.record.conflicts) lines.push(`CONFLICT: ${conflict.message}`, '');
        for (const section of Object.keys(SECTION_TITLES) as KnowledgeSection[]) {
          const passages = result.sections[section];
          const used = passages.reduce((n, p) => n + p.tokenCount, 0);
          const budget = budgets[section];
          lines.push(`## ${SECTION_TITLES[section]} (${used}/${budget} tokens)`);
          if (passages.length === 0) lines.push('   (nothing)');
          for (const p of passages) {
            lines.push(`- ${locate(p)}${p.hidden ? '  [HIDDEN: narrator only]' : ''}`, `   ${excerpt(p.text)}`);
          }
          lines.push('');
        }
        lines.push(`## Decisions (${result.record.candidates.length} candidates; terms: ${result.record.terms.join(', ') || 'none'})`);
        for (const d of result.record.candidates) lines.push(decisionLine(d));
        if (result.record.abstention) lines.push(`Nothing retrieved: ${result.record.abstention}.`);
        if (result.record.worldInfo) lines.push('', ...worldInfoLines(result.record.worldInfo));
        return lines.join('\n');
      });
      return EXIT.ok;
    } finally {
      await opened.session.close();
    }
  },
};
