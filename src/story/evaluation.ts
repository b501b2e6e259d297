import fs from 'node:fs';
import YAML from 'yaml';
import { z } from 'zod';
import type { Campaign } from '../knowledge/campaign';
import { analyzeStoreConflicts, canonConsistencyPassages, checkCanonConsistency, pairPassagesByEntity } from '../knowledge/conflicts';
import type { KnowledgeStore } from '../knowledge/indexing';
import { DEFAULT_KNOWLEDGE_BUDGETS, defaultWorldInfoQuery, type RetrievalQuery, type RetrievalResult, type SelectedPassage } from '../knowledge/retrieval';
import type { ToolChatClient } from '../models';
import { renderAction } from './contextBuilder';
import type { KnowledgePort } from './ports';
import { research as runResearch } from './research';
import { TokenEstimator } from './tokenEstimator';
import type { ResearchRecord } from './types';
import { evaluateProposals, type ExpectedEdit, type ProposalItem, type ProposalScore } from './proposalEvaluation';

/**
 * Research against today's selection on the campaign's own questions (eval.yaml), per model: how often the
 * expected passage is among the first 1, 3 and 5 sent, how often an off-topic question rightly gets nothing,
 * how many tool calls were refused, rounds, tokens and time per turn. `storyteller eval` and the extension's
 * "Evaluate Research on This Campaign" both run it. Its numbers are as good as the questions and the servers
 * asked; a scripted server measures only the wire.
 */

/** The question set is missing or wrong: the message names the file and the reason. */
export class EvalSetError extends Error {}

const Target = z.string().trim().min(1).max(500);
const Words = z.union([z.string().trim().min(1).max(500), z.array(z.string().trim().min(1).max(500)).min(1).max(20)]);
const EvalSetSchema = z
  .object({
    questions: z
      .array(z.object({ ask: z.string().trim().min(1).max(2000), expect: z.union([Target, z.array(Target).min(1).max(20)]) }).strict())
      .max(500)
      .default([]),
    off_topic: z.array(z.string().trim().min(1).max(2000)).max(500).default([]),
    // Contradictions the writer knows the canon holds: the consistency check is scored on finding them.
    conflicts: z
      .array(z.object({ between: z.tuple([Target, Target]) }).strict())
      .max(200)
      .default([]),
    // Played exchanges and the canon edits each should bring (or `nothing`): canon proposals are scored on them.
    proposals: z
      .array(
        z
          .object({
            action: z.string().trim().min(1).max(2000).optional(),
            narration: z.string().trim().min(1).max(8000),
            expect: z.union([Target, z.array(z.object({ edit: Target, says: Words }).strict()).min(1).max(20)]),
            says: Words.optional(),
          })
          .strict(),
      )
      .max(200)
      .default([]),
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

/** Two canon files that contradict each other, in either order. */
interface KnownConflict {
  between: [string, string];
}

export interface EvalSet {
  /** The file it was read from. */
  file: string;
  questions: Question[];
  offTopic: string[];
  conflicts: KnownConflict[];
  proposals: ProposalItem[];
}

/** The campaign's question set; an EvalSetError naming the file and what is wrong with it. */
export function readEvalSet(file: string, indexed: ReadonlySet<string>): EvalSet {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new EvalSetError(`${file}: cannot read the question set (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); write one as the example campaign's eval.yaml shows`);
  }
  let raw: unknown;
  try {
    raw = YAML.parse(text);
  } catch (error) {
    throw new EvalSetError(`${file}: not YAML (${(error as Error).message.split('\n')[0]})`);
  }
  const parsed = EvalSetSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new EvalSetError(
      `${file}: ${issue.path.join('.') || 'the file'}: ${issue.message} (questions: [{ask, expect}], off_topic: [text], conflicts: [{between}], proposals: [{action, narration, expect, says}])`,
    );
  }
  const questions = parsed.data.questions.map((q, i) => ({
    ask: q.ask,
    expect: [q.expect].flat().map((target) => {
      const expected = splitTarget(target);
      if (!indexed.has(expected.file)) throw new EvalSetError(`${file}: questions.${i}.expect names '${expected.file}', which is no indexed file of this campaign`);
      return expected;
    }),
  }));
  const proposals = parsed.data.proposals.map((p, i) => ({ action: p.action ?? null, narration: p.narration, expect: expectedEdits(file, `proposals.${i}`, p, indexed) }));
  if (questions.length + parsed.data.off_topic.length + proposals.length === 0) throw new EvalSetError(`${file}: no questions, off_topic questions or proposals to score`);
  const conflicts = parsed.data.conflicts.map((c, i) => {
    const missing = c.between.find((f) => !indexed.has(f));
    if (missing !== undefined) throw new EvalSetError(`${file}: conflicts.${i}.between names '${missing}', which is no indexed file of this campaign`);
    return { between: c.between };
  });
  return { file, questions, offTopic: parsed.data.off_topic, conflicts, proposals };
}

/** `file` or `file#Heading`. */
function splitTarget(target: string): Expected {
  const at = target.indexOf('#');
  return at < 0 ? { file: target, heading: null } : { file: target.slice(0, at).trim(), heading: target.slice(at + 1).trim() };
}

/**
 * A proposals item's expected edits: `expect: nothing`, `expect: file#Heading` with `says:`, or a list of
 * `{edit, says}`. The file is an indexed one, or a new markdown page the exchange should bring.
 */
function expectedEdits(file: string, at: string, item: { expect: string | { edit: string; says: string | string[] }[]; says?: string | string[] | undefined }, indexed: ReadonlySet<string>): ExpectedEdit[] {
  if (item.expect === 'nothing') {
    if (item.says !== undefined) throw new EvalSetError(`${file}: ${at}: says: an item that expects nothing has no words to carry`);
    return [];
  }
  if (typeof item.expect === 'string' && item.says === undefined) throw new EvalSetError(`${file}: ${at}: says: the words the expected edit to ${item.expect} should carry are missing`);
  if (typeof item.expect !== 'string' && item.says !== undefined) throw new EvalSetError(`${file}: ${at}: says: give it beside each edit of the expect list, not beside the list`);
  const edits = typeof item.expect === 'string' ? [{ edit: item.expect, says: item.says! }] : item.expect;
  return edits.map((e, j) => {
    const target = splitTarget(e.edit);
    if (!indexed.has(target.file) && !target.file.endsWith('.md')) {
      const where = typeof item.expect === 'string' ? `${at}.expect` : `${at}.expect.${j}.edit`;
      throw new EvalSetError(`${file}: ${where} names '${target.file}', which is no indexed file of this campaign nor a new markdown (.md) page`);
    }
    return { ...target, says: [e.says].flat() };
  });
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

export interface EvalRow {
  name: string;
  scores: Scores;
  research: ResearchTally | null;
  msPerTurn: number;
}

/** The consistency check on the set's known conflicts: what the patterns found, and what each model suggested. */
export interface ConsistencyScore {
  known: number;
  /** Known conflicts the deterministic patterns (the Conflicts view, `storyteller lint`) find. */
  byPatterns: number;
  models: {
    model: string;
    /** Known conflicts the model's suggestions name; null when it was not asked (the check asks Ollama only). */
    found: number | null;
    /** Its suggestions between files no known conflict names. */
    unexpected: number;
    pairs: number;
    failedPairs: number;
  }[];
}

export interface EvalReport {
  campaign: string;
  set: string;
  questions: number;
  offTopic: number;
  server: string;
  rows: EvalRow[];
  perQuestion: { ask: string; model: string; ran: string; kept: string[]; steps: number; refused: number }[];
  /** Present when the set names known conflicts. */
  consistency?: ConsistencyScore;
  /** Present when the set has played exchanges to propose on. */
  proposals?: ProposalScore;
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

export interface EvalRun {
  campaign: Pick<Campaign, 'id' | 'worldInfo' | 'root' | 'title' | 'ignore' | 'stats'>;
  set: EvalSet;
  /** The campaign's knowledge; it must offer research (an index is open). */
  knowledge: KnowledgePort;
  client: ToolChatClient;
  models: readonly string[];
  /** The model's context window, as set or as its server reports it; undefined when unknown. */
  contextWindow: (model: string) => Promise<number | undefined>;
  /** The campaign's index: the consistency check reads its canon, proposals are validated against it. */
  store: KnowledgeStore;
  /** The Ollama host the consistency check's model asks (null: another server, and the check asks no model). */
  ollamaHost: string | null;
  signal?: AbortSignal;
}

const namesConflict = (known: KnownConflict, a: string, b: string) => (known.between[0] === a && known.between[1] === b) || (known.between[0] === b && known.between[1] === a);

/** The set's known conflicts against the patterns, and against each model's suggestions when the server is Ollama. */
async function scoreConsistency(known: readonly KnownConflict[], models: readonly string[], store: KnowledgeStore, ollamaHost: string | null, signal?: AbortSignal): Promise<ConsistencyScore> {
  const analysis = analyzeStoreConflicts(store);
  const found = (pairs: readonly (readonly [string, string])[]) => known.filter((k) => pairs.some(([a, b]) => namesConflict(k, a, b))).length;
  const pairs = pairPassagesByEntity(canonConsistencyPassages(store), analysis.names);
  const scored: ConsistencyScore['models'] = [];
  for (const model of models) {
    if (ollamaHost === null) {
      scored.push({ model, found: null, unexpected: 0, pairs: pairs.length, failedPairs: 0 });
      continue;
    }
    const result = await checkCanonConsistency({ host: ollamaHost, model, pairs, ...(signal ? { signal } : {}) });
    const suggested = result.suggestions.map((s) => [s.a.sourcePath, s.b.sourcePath] as const);
    scored.push({ model, found: found(suggested), unexpected: suggested.filter(([a, b]) => !known.some((k) => namesConflict(k, a, b))).length, pairs: pairs.length, failedPairs: result.failures.length });
  }
  return { known: known.length, byPatterns: found(analysis.conflicts.map((c) => [c.a.path, c.b.path] as const)), models: scored };
}

/**
 * Today's selection once, then each model's research on every question, scored alike; then the consistency
 * check on the set's known conflicts, and each model's canon proposals on its played exchanges.
 */
export async function evaluateResearch(run: EvalRun): Promise<EvalReport> {
  const { set, campaign } = run;
  const { rows, perQuestion } = await scoreResearch(run);
  const report: EvalReport = { campaign: campaign.id, set: set.file, questions: set.questions.length, offTopic: set.offTopic.length, server: run.client.backend.baseUrl, rows, perQuestion };
  if (set.conflicts.length > 0) report.consistency = await scoreConsistency(set.conflicts, run.models, run.store, run.ollamaHost, run.signal);
  if (set.proposals.length > 0) {
    report.proposals = await evaluateProposals({ campaign, store: run.store, items: set.proposals, client: run.client, models: run.models, ...(run.signal ? { signal: run.signal } : {}) });
  }
  return report;
}

/** The research table's rows and what each model kept per question; none when the set has no questions. */
async function scoreResearch(run: EvalRun): Promise<Pick<EvalReport, 'rows' | 'perQuestion'>> {
  const { set, knowledge, campaign } = run;
  const asks = [...set.questions.map((q) => q.ask), ...set.offTopic];
  if (asks.length === 0) return { rows: [], perQuestion: [] };
  const researchKnowledge = knowledge.research;
  if (!researchKnowledge) throw new Error(`${campaign.id} has no index to research yet; index it first`);
  const queryFor = (input: string): RetrievalQuery => {
    const budgets = DEFAULT_KNOWLEDGE_BUDGETS;
    return { input, recent: [], entities: [], stage: 'narrator', budgets, worldInfo: defaultWorldInfoQuery({ input, recent: [], budgets }, campaign.worldInfo) };
  };
  // Today's selection once: it asks no model.
  const bases: RetrievalResult[] = [];
  const started = performance.now();
  for (const ask of asks) bases.push(await knowledge.retrieve(queryFor(ask)));
  const selectionMs = (performance.now() - started) / asks.length;
  const split = (lists: SelectedPassage[][]) => ({
    onTopic: set.questions.map((q, i) => ({ list: lists[i]!, expect: q.expect })),
    offTopic: lists.slice(set.questions.length).map(byRelevance),
  });
  const today = split(bases.map(sent));
  const rows: EvalRow[] = [{ name: "today's selection", scores: score(today.onTopic, today.offTopic), research: null, msPerTurn: selectionMs }];
  const perQuestion: EvalReport['perQuestion'] = [];

  for (const model of run.models) {
    const window = await run.contextWindow(model);
    const estimator = new TokenEstimator(model);
    const tally: ResearchTally = { calls: 0, refusedCalls: 0, ran: { native: 0, json: 0, lexical: 0 }, unfinished: 0, rounds: 0, tokens: 0, msPerTurn: 0 };
    const lists: SelectedPassage[][] = [];
    for (const [i, ask] of asks.entries()) {
      run.signal?.throwIfAborted();
      const { result, record } = await runResearch({
        client: run.client,
        model,
        knowledge: researchKnowledge,
        task: { action: renderAction({ kind: 'do', text: ask }, ''), persona: '', worldState: '', recent: [], personaName: '', characterOf: (id) => knowledge.character(id) },
        query: queryFor(ask),
        base: bases[i]!,
        estimator,
        ...(window !== undefined ? { contextWindow: window } : {}),
        ...(run.signal ? { signal: run.signal } : {}),
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
  return { rows, perQuestion };
}

const EVAL_COLUMNS = ['', 'R@1', 'R@3', 'R@5', 'off-topic: nothing', 'calls refused', 'ran native/json/fallback', 'unfinished', 'rounds', 'tokens', 'ms/turn'];
const EVAL_HEADLINE = (r: EvalReport) =>
  r.rows.length > 0
    ? `Research against today's selection on '${r.campaign}': ${r.questions} questions, ${r.offTopic} off-topic (${r.set}), on ${r.server}`
    : `Evaluation of '${r.campaign}' (${r.set}), on ${r.server}: no research questions`;
const EVAL_LEGEND = 'R@k: share of the expected passages among the first k sent to the narrator (pins and World Info rules aside). Off-topic: questions that rightly got nothing.';

/** The table's cells, one row per model and today's selection first. */
function evalCells(report: EvalReport): string[][] {
  const f = (n: number) => n.toFixed(2);
  return report.rows.map((r) => {
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
}

/** One line per scorer of the known conflicts, for the text and the markdown alike. */
function consistencyLines(c: ConsistencyScore): string[] {
  return [
    `Consistency check on ${c.known} known conflict(s):`,
    `- the patterns (Conflicts view, storyteller lint) find ${c.byPatterns}/${c.known}`,
    ...c.models.map((m) =>
      m.found === null
        ? `- ${m.model}: not asked (the model check asks Ollama only)`
        : `- ${m.model} finds ${m.found}/${c.known}, suggests ${m.unexpected} no known conflict names; ${m.pairs - m.failedPairs}/${m.pairs} passage pairs answered`,
    ),
  ];
}

const PROPOSAL_COLUMNS = ['', 'expected edits found', 'unexpected', 'nothing: right', 'refused', 'failed', 'tokens', 'ms/exchange'];
const PROPOSAL_HEADLINE = (p: ProposalScore) =>
  `Canon proposals on ${p.items} played exchange(s): ${p.expectedEdits} expected edit(s), ${p.nothingItems} exchange(s) that should propose nothing`;
const PROPOSAL_LEGEND =
  "Found: expected edits a proposal carried (the file, under the heading named, adding the words of `says:`). Unexpected: proposals no expectation matched. Nothing: right: exchanges expecting nothing that got no proposal. Refused: edits the model drafted that validation refused; failed: exchanges the model could not draft on. Tokens: sent and received, estimated.";

function proposalCells(p: ProposalScore): string[][] {
  return p.models.map((m) => [
    `${m.model} (proposals)`,
    `${m.found}/${p.expectedEdits}`,
    String(m.unexpected),
    `${m.nothingRight}/${p.nothingItems}`,
    String(m.refused),
    String(m.failed),
    String(Math.round(m.tokens)),
    String(Math.round(m.msPerItem)),
  ]);
}

/** Why each refused edit was refused and each failed exchange failed, one line each (a model's file names may hold line breaks). */
function proposalRefusalLines(p: ProposalScore): string[] {
  const flat = (text: string) => text.replace(/\s+/g, ' ');
  const lines = p.perItem.flatMap((r) => [
    ...r.refused.map((x) => `- ${r.model}, exchange ${r.item}: refused ${flat(x.file || '(no file)')}: ${flat(x.refusal)}`),
    ...(r.failure !== undefined ? [`- ${r.model}, exchange ${r.item}: could not draft (${flat(r.failure)})`] : []),
  ]);
  return lines.length > 0 ? ['', 'Refused and failed:', ...lines] : [];
}

/** Rows aligned in columns, the first left and the numbers right, for a terminal. */
function textTable(columns: readonly string[], body: readonly string[][]): string[] {
  const widths = columns.map((_, i) => Math.max(...[columns, ...body].map((row) => row[i]!.length)));
  const line = (row: readonly string[]) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  return [line(columns), ...body.map(line)];
}

const markdownCell = (text: string) => text.replace(/\|/g, '\\|').replace(/[\r\n]+/g, ' ');

/** A markdown table, aligned so it reads unrendered too, the numbers right-aligned. */
function markdownTable(columns: readonly string[], body: readonly string[][]): string[] {
  const table = [columns, ...body].map((cells) => cells.map(markdownCell));
  const widths = columns.map((_, i) => Math.max(3, ...table.map((cells) => cells[i]!.length)));
  const row = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const rule = `| ${widths.map((w, i) => (i === 0 ? '-'.repeat(w) : `${'-'.repeat(w - 1)}:`)).join(' | ')} |`;
  return [row(table[0]!), rule, ...table.slice(1).map(row)];
}

/** The report as an aligned plain-text table, for a terminal. */
export function renderEvalTable(report: EvalReport): string {
  const lines = [EVAL_HEADLINE(report)];
  if (report.rows.length > 0) lines.push('', ...textTable(EVAL_COLUMNS, evalCells(report)), '', EVAL_LEGEND);
  if (report.consistency) lines.push('', ...consistencyLines(report.consistency));
  const p = report.proposals;
  if (p) lines.push('', PROPOSAL_HEADLINE(p), '', ...textTable(PROPOSAL_COLUMNS, proposalCells(p)), '', PROPOSAL_LEGEND, ...proposalRefusalLines(p));
  return lines.join('\n');
}

/** The report as markdown for the report document: the same tables, then what each model kept per question and proposed per exchange. */
export function renderEvalMarkdown(report: EvalReport, title: string): string {
  const lines = [`# Research evaluation: ${title}`, '', EVAL_HEADLINE(report), ''];
  if (report.rows.length > 0) lines.push(...markdownTable(EVAL_COLUMNS, evalCells(report)), '', EVAL_LEGEND, '');
  if (report.consistency) lines.push(...consistencyLines(report.consistency), '');
  const p = report.proposals;
  if (p) lines.push(PROPOSAL_HEADLINE(p), '', ...markdownTable(PROPOSAL_COLUMNS, proposalCells(p)), '', PROPOSAL_LEGEND, '');
  for (const model of new Set(report.perQuestion.map((q) => q.model))) {
    lines.push(`## ${model}: per question`, '');
    for (const q of report.perQuestion.filter((r) => r.model === model)) {
      lines.push(`- ${markdownCell(q.ask)} — ran ${q.ran}, ${q.steps} step(s)${q.refused ? `, ${q.refused} refused` : ''}; kept ${q.kept.length ? q.kept.map(markdownCell).join('; ') : 'nothing'}`);
    }
    lines.push('');
  }
  for (const model of p?.models.map((m) => m.model) ?? []) {
    lines.push(`## ${model}: per played exchange`, '');
    for (const r of p!.perItem.filter((x) => x.model === model)) {
      const expected = r.expected.length === 0 ? 'expected nothing' : r.expected.map((e) => `${e.found ? 'found' : 'missed'} ${markdownCell(e.edit)}`).join('; ');
      const proposed = r.proposed.length === 0 ? 'proposed nothing' : `proposed ${r.proposed.map((x) => `${markdownCell(x.file)} (${x.expected ? 'expected' : 'unexpected'}: ${markdownCell(x.reason)})`).join('; ')}`;
      const refused = r.refused.map((x) => `; refused ${markdownCell(x.file || '(no file)')}: ${markdownCell(x.refusal)}`).join('');
      const failed = r.failure !== undefined ? `; could not draft (${markdownCell(r.failure)})` : '';
      lines.push(`- Exchange ${r.item} (${markdownCell(r.narration.length > 80 ? `${r.narration.slice(0, 79)}…` : r.narration)}) — ${expected}; ${proposed}${refused}${failed}`);
    }
    lines.push('');
  }
  return lines.join('\n');
}
