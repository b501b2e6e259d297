import { performance } from 'node:perf_hooks';
import type { ModelBackend, ToolChatClient, ToolChatMessage, ToolChatReply } from '../src/models';
import { DEFAULT_KNOWLEDGE_BUDGETS } from '../src/knowledge/retrieval/retrieval';
import type { RetrievalQuery, RetrievalResult } from '../src/knowledge/retrieval/retrievalTypes';
import { indexKnowledge } from '../src/story/indexKnowledge';
import { research } from '../src/story/research';
import { TokenEstimator } from '../src/story/tokenEstimator';
import { corpusPath } from '../test/support/corpora';
import { importCorpora } from '../test/support/knowledgeFixtures';
import { EVAL_QUESTIONS, percentile, round } from './retrievalBench';

/**
 * What research costs besides the model: a scripted model (in process, answering at once) that searches the
 * question, reads the first passage it was shown, and keeps the first two, over the Torys setting bible and
 * the D&D SRD as reference. Per round, the runtime's own time (searches through eligibility, checks, framing,
 * packing) against today's retrieval of the same turn in the same run; and the tokens research adds per turn:
 * what it sends the researching model, and the knowledge it packs against today's selection.
 */

const RUNS = 3;
const PASSAGE = /⟦(?:SECRET )?passage (\S+)/g;

/** The scripted model: search, read, finish, each as one native tool call. */
function scriptedModel(question: string): ToolChatClient {
  const backend: ModelBackend = { provider: 'ollama', baseUrl: 'http://scripted' };
  return {
    backend,
    chat(messages: ToolChatMessage[]): Promise<ToolChatReply> {
      const round = messages.filter((m) => m.role === 'assistant').length;
      const shown = [...messages.map((m) => m.content).join('\n').matchAll(PASSAGE)].map((m) => m[1]!);
      const call = (name: string, args: unknown) => ({ content: '', protocol: 'native' as const, finishReason: 'tool_calls', toolCalls: [{ id: `c${round}`, name, argumentsText: JSON.stringify(args) }] });
      if (round === 0) return Promise.resolve(call('search', { query: question }));
      if (round === 1 && shown[0]) return Promise.resolve(call('read', { id: shown[0] }));
      return Promise.resolve(call('finish', { keep: [...new Set(shown)].slice(0, 2), reason: 'the question names it' }));
    },
  };
}

function spread(values: number[]): { p50: number; p95: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: round(percentile(sorted, 0.5)), p95: round(percentile(sorted, 0.95)) };
}

const knowledgeTokens = (r: RetrievalResult) => Object.values(r.sections).reduce((n, ps) => n + ps.reduce((m, p) => m + p.tokenCount, 0), 0);

export interface ResearchBenchResult {
  turns: number;
  roundsPerTurn: number;
  runtimeMsPerRound: { p50: number; p95: number };
  runtimeMsPerRoundBesidesSearch: { p50: number; p95: number };
  retrievalMsPerTurn: { p50: number; p95: number };
  roundVsRetrieval: { p50: number; p95: number };
  tokensSentToModelPerTurn: { p50: number; p95: number };
  knowledgeTokensPerTurn: { research: number; today: number };
}

export async function runResearchBench(log: (line: string) => void = () => undefined): Promise<ResearchBenchResult> {
  const library = await importCorpora('research', {
    torys: { corpus: corpusPath('torys'), class: 'canon' },
    srd: { corpus: corpusPath('dnd-srd-5.1'), class: 'reference' },
  });
  const store = library.store;
  log(`Torys as canon, the SRD as reference: ${JSON.stringify(store.counts())}`);
  const port = indexKnowledge(store);
  // The model's searches are today's search engine, timed apart so the rest of the runtime shows.
  let searchMs = 0;
  const timed = {
    ...port.research!,
    search: async (...args: Parameters<NonNullable<typeof port.research>['search']>) => {
      const started = performance.now();
      try {
        return await port.research!.search(...args);
      } finally {
        searchMs += performance.now() - started;
      }
    },
  };
  const estimator = new TokenEstimator('scripted');
  const questions = EVAL_QUESTIONS.map((e) => e.q);
  const query = (input: string): RetrievalQuery => ({ input, stage: 'narrator', budgets: { ...DEFAULT_KNOWLEDGE_BUDGETS } });
  const perRound: number[] = [];
  const besidesSearch: number[] = [];
  const retrievalMs: number[] = [];
  const sent: number[] = [];
  let rounds = 0;
  let packed = 0;
  let today = 0;
  let turns = 0;
  for (let run = 0; run < RUNS; run++) {
    for (const q of questions) {
      const started = performance.now();
      searchMs = 0;
      const base = await port.retrieve(query(q));
      const retrieval = performance.now() - started;
      const { result, record } = await research({ client: scriptedModel(q), model: 'scripted', knowledge: timed, task: { action: `Player action: ${q}`, persona: '', worldState: '', recent: [], personaName: '', characterOf: () => undefined }, query: query(q), base, estimator });
      const spent = performance.now() - started - retrieval;
      if (run === 0) continue; // the first pass warms caches
      turns++;
      retrievalMs.push(retrieval);
      perRound.push(spent / Math.max(1, record.rounds));
      besidesSearch.push((spent - searchMs) / Math.max(1, record.rounds));
      rounds += record.rounds;
      sent.push(record.resultTokens);
      packed += knowledgeTokens(result);
      today += knowledgeTokens(base);
    }
  }
  const ratios = perRound.map((ms, i) => ms / retrievalMs[i]!);
  const result: ResearchBenchResult = {
    turns,
    roundsPerTurn: round(rounds / turns, 2),
    runtimeMsPerRound: spread(perRound),
    runtimeMsPerRoundBesidesSearch: spread(besidesSearch),
    retrievalMsPerTurn: spread(retrievalMs),
    roundVsRetrieval: spread(ratios),
    tokensSentToModelPerTurn: spread(sent),
    knowledgeTokensPerTurn: { research: Math.round(packed / turns), today: Math.round(today / turns) },
  };
  log(`${turns} turns, ${result.roundsPerTurn} rounds each (search, read, finish over a scripted model)`);
  log(`runtime per round: p50 ${result.runtimeMsPerRound.p50} ms, p95 ${result.runtimeMsPerRound.p95} ms (goal ≤ 5 ms besides the model)`);
  log(`  of which not the model's searches (catalogue, checks, framing, packing): p50 ${result.runtimeMsPerRoundBesidesSearch.p50} ms, p95 ${result.runtimeMsPerRoundBesidesSearch.p95} ms`);
  log(`  against today's retrieval of the turn: p50 ${result.retrievalMsPerTurn.p50} ms → a round is ×${result.roundVsRetrieval.p50} (p95 ×${result.roundVsRetrieval.p95})`);
  log(`tokens sent to the researching model per turn: p50 ${result.tokensSentToModelPerTurn.p50}, p95 ${result.tokensSentToModelPerTurn.p95}`);
  log(`knowledge packed per turn: research ${result.knowledgeTokensPerTurn.research} tokens, today's selection ${result.knowledgeTokensPerTurn.today}`);
  library.dispose();
  return result;
}
