import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { z } from 'zod';
import { DEFAULT_KNOWLEDGE_BUDGETS, defaultWorldInfoQuery, type RetrievalQuery, type RetrievalResult, type SelectedPassage } from '../../knowledge/retrieval';
import { narratorFor, toolChatFor } from '../../models';
import { renderAction } from '../../story/contextBuilder';
import { indexKnowledge } from '../../story/indexKnowledge';
import { research as runResearch } from '../../story/research';
import type { ResearchRecord } from '../../story/types';
import { TokenEstimator } from '../../story/tokenEstimator';
import { EXIT, UsageError, emit, stringOption, type Command } from '../command';
import { IndexMissingError, KNOWLEDGE_READ_OPTIONS, openCampaignIndex, semanticFromArgs } from '../knowledgeAccess';
import { MODEL_SERVER_USAGE, backendFromArgs } from '../modelArgs';

/**
 * `storyteller eval`: research against today's selection on the campaign's own questions (eval.yaml), per
 * model: how often the expected passage is among the first 1, 3 and 5 sent, how often an off-topic question
 * rightly gets nothing, how many tool calls were refused, rounds, tokens and time per turn. Its numbers are
 * as good as the questions and the servers asked; a scripted server measures only the wire.
 */

const Target = z.string().trim().min(1).max(500);
const EvalSet = z
  .object({
    questions: z
      .array(z.object({ ask: z.string().trim().min(1).max(2000), expect: z.union([Target, z.array(Target).min(1).max(20)]) }).strict())
      .max(500)
      .default([]),
    off_topic: z.array(z.string().trim().min(1).max(2000)).max(500).default([]),
  })
  .strict();

/** A passage that answers a question: a file, or a heading in it (`places/old-abbey.md#The Crypt`). */
interface Expected {
  file: string;
  heading: string | null;
}

interface Question {
  ask: string;
  expect: Expected[];
}

/** The campaign's question set, or a usage error naming the file and what is wrong with it. */
export function readEvalSet(file: string, indexed: ReadonlySet<string>): { questions: Question[]; offTopic: string[] } {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`${file}: cannot read the question set (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); write one as the example campaign's eval.yaml shows`);
  }
  let raw: unknown;
  try {
    raw = YAML.parse(text);
  } catch (error) {
    throw new UsageError(`${file}: not YAML (${(error as Error).message.split('\n')[0]})`);
  }
  const parsed = EvalSet.safeParse(raw ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UsageError(`${file}: ${issue.path.join('.') || 'the file'}: ${issue.message} (questions: [{ask, expect}], off_topic: [text])`);
  }
  const questions = parsed.data.questions.map((q, i) => ({
    ask: q.ask,
    expect: [q.expect].flat().map((target) => {
      const at = target.indexOf('#');
      const expected = at < 0 ? { file: target, heading: null } : { file: target.slice(0, at).trim(), heading: target.slice(at + 1).trim() };
      if (!indexed.has(expected.file)) throw new UsageError(`${file}: questions.${i}.expect names '${expected.file}', which is no indexed file of this campaign`);
      return expected;
    }),
  }));
  if (questions.length + parsed.data.off_topic.length === 0) throw new UsageError(`${file}: no questions and no off_topic questions to ask`);
  return { questions, offTopic: parsed.data.off_topic };
}

/** What the narrator is sent besides the pins, in prompt order: the list recall is read from. */
function sent(result: RetrievalResult): SelectedPassage[] {
  return [...result.sections.canon, ...result.sections.reference, ...result.sections.inspiration];
}

/** The passage is of the file and, when a heading is named, under it or holding it (short sections share a passage). */
function answers(p: SelectedPassage, e: Expected): boolean {
  if (p.sourcePath !== e.file) return false;
  if (e.heading === null) return true;
  const named = (h: string) => h.trim().toLowerCase() === e.heading!.toLowerCase();
  return p.headingPath.some(named) || p.text.split('\n').some((line) => line.startsWith('#') && named(line.replace(/^#+/, '')));
}

/** The share of the expected passages among the first `k` sent. */
function recallAt(list: readonly SelectedPassage[], expect: readonly Expected[], k: number): number {
  const top = list.slice(0, k);
  return expect.filter((e) => top.some((p) => answers(p, e))).length / expect.length;
}

interface Scores {
  recall: { at1: number; at3: number; at5: number } | null;
  /** Off-topic questions that got nothing besides the writer's rules, of how many. */
  offTopicNothing: { right: number; of: number };
}

interface ResearchTally {
  calls: number;
  refusedCalls: number;
  /** Turns by how research ran: native tool calls, the JSON protocol, or fallen back to today's selection. */
  ran: Record<ResearchRecord['ran'], number>;
  unfinished: number;
  rounds: number;
  tokens: number;
  msPerTurn: number;
}

interface Row {
  name: string;
  scores: Scores;
  research: ResearchTally | null;
  msPerTurn: number;
}

function score(onTopic: { list: SelectedPassage[]; expect: Expected[] }[], offTopic: SelectedPassage[][]): Scores {
  const mean = (k: number) => onTopic.reduce((s, q) => s + recallAt(q.list, q.expect, k), 0) / onTopic.length;
  return {
    recall: onTopic.length === 0 ? null : { at1: mean(1), at3: mean(3), at5: mean(5) },
    offTopicNothing: { right: offTopic.filter((list) => list.length === 0).length, of: offTopic.length },
  };
}

/** Nothing kept besides what the writer's rules place. */
const byRelevance = (list: SelectedPassage[]) => list.filter((p) => !p.placedBy);

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
      const set = readEvalSet(setFile, new Set(store.listSources().map((s) => s.path)));
      const port = indexKnowledge(store, semanticFromArgs(args, io, store), session.canonFacts(store));
      const backend = backendFromArgs(args, io);
      const queryFor = (input: string): RetrievalQuery => {
        const budgets = DEFAULT_KNOWLEDGE_BUDGETS;
        return { input, recent: [], entities: [], stage: 'narrator', budgets, worldInfo: defaultWorldInfoQuery({ input, recent: [], budgets }, campaign.worldInfo) };
      };
      const asks = [...set.questions.map((q) => q.ask), ...set.offTopic];
      // Today's selection once: it asks no model.
      const bases: RetrievalResult[] = [];
      const started = performance.now();
      for (const ask of asks) bases.push(await port.retrieve(queryFor(ask)));
      const selectionMs = (performance.now() - started) / asks.length;
      const split = (lists: SelectedPassage[][]) => ({
        onTopic: set.questions.map((q, i) => ({ list: lists[i]!, expect: q.expect })),
        offTopic: lists.slice(set.questions.length).map(byRelevance),
      });
      const today = split(bases.map(sent));
      const rows: Row[] = [{ name: "today's selection", scores: score(today.onTopic, today.offTopic), research: null, msPerTurn: selectionMs }];
      const perQuestion: { ask: string; model: string; ran: string; kept: string[]; steps: number; refused: number }[] = [];

      for (const model of models) {
        const client = toolChatFor(backend);
        const reported = window ?? (await narratorFor(backend).contextLength(model).catch(() => null)) ?? undefined;
        const estimator = new TokenEstimator(model);
        const tally: ResearchTally = { calls: 0, refusedCalls: 0, ran: { native: 0, json: 0, lexical: 0 }, unfinished: 0, rounds: 0, tokens: 0, msPerTurn: 0 };
        const lists: SelectedPassage[][] = [];
        for (const [i, ask] of asks.entries()) {
          const { result, record } = await runResearch({
            client,
            model,
            knowledge: port.research!,
            task: { action: renderAction({ kind: 'do', text: ask }, ''), persona: '', worldState: '', recent: [], personaName: '', characterOf: (id) => port.character(id) },
            query: queryFor(ask),
            base: bases[i]!,
            estimator,
            ...(reported !== undefined ? { contextWindow: reported } : {}),
          });
          lists.push(sent(result));
          const calls = record.steps.filter((s) => s.tool !== '(none)');
          tally.calls += calls.length;
          tally.refusedCalls += calls.filter((s) => s.outcome === 'refused').length;
          tally.ran[record.ran]++;
          if (record.finished === false) tally.unfinished++;
          tally.rounds += record.rounds;
          tally.tokens += record.resultTokens;
          tally.msPerTurn += record.modelMs + record.runtimeMs;
          perQuestion.push({ ask, model, ran: record.ran, kept: record.kept.map((k) => record.names?.[k.id] ?? k.id), steps: record.steps.length, refused: record.steps.filter((s) => s.outcome === 'refused').length });
        }
        for (const key of ['rounds', 'tokens', 'msPerTurn'] as const) tally[key] /= asks.length;
        const found = split(lists);
        rows.push({ name: `${model} (research)`, scores: score(found.onTopic, found.offTopic), research: tally, msPerTurn: tally.msPerTurn });
      }

      const report = { campaign: campaign.id, set: setFile, questions: set.questions.length, offTopic: set.offTopic.length, server: backend.baseUrl, rows, perQuestion };
      emit(io, args, report, () => renderTable(report));
      return EXIT.ok;
    } finally {
      await session.close();
    }
  },
};

function renderTable(report: { campaign: string; set: string; questions: number; offTopic: number; server: string; rows: Row[] }): string {
  const f = (n: number) => n.toFixed(2);
  const head = ['', 'R@1', 'R@3', 'R@5', 'off-topic: nothing', 'calls refused', 'ran native/json/fallback', 'unfinished', 'rounds', 'tokens', 'ms/turn'];
  const body = report.rows.map((r) => {
    const t = r.research;
    return [
      r.name,
      r.scores.recall ? f(r.scores.recall.at1) : '-',
      r.scores.recall ? f(r.scores.recall.at3) : '-',
      r.scores.recall ? f(r.scores.recall.at5) : '-',
      `${r.scores.offTopicNothing.right}/${r.scores.offTopicNothing.of}`,
      t ? `${t.refusedCalls}/${t.calls}` : '-',
      t ? `${t.ran.native}/${t.ran.json}/${t.ran.lexical}` : '-',
      t ? String(t.unfinished) : '-',
      t ? t.rounds.toFixed(1) : '-',
      t ? String(Math.round(t.tokens)) : '-',
      String(Math.round(r.msPerTurn)),
    ];
  });
  const widths = head.map((_, i) => Math.max(...[head, ...body].map((row) => row[i]!.length)));
  const line = (row: string[]) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  return [
    `Research against today's selection on '${report.campaign}': ${report.questions} questions, ${report.offTopic} off-topic (${report.set}), on ${report.server}`,
    '',
    line(head),
    ...body.map(line),
    '',
    'R@k: share of the expected passages among the first k sent to the narrator (pins and World Info rules aside). Off-topic: questions that rightly got nothing.',
  ].join('\n');
}
