import { performance } from 'node:perf_hooks';
import { analyzeStoreConflicts } from '../src/knowledge/conflicts/conflictsIndex';
import type { WorldFact } from '../src/knowledge/retrieval/retrievalTypes';
import { DEFAULT_KNOWLEDGE_BUDGETS, retrieveKnowledge } from '../src/knowledge/retrieval/retrieval';
import type { RetrievalQuery } from '../src/knowledge/retrieval/retrievalTypes';
import { indexKnowledge } from '../src/story/indexKnowledge';
import { corpusPath } from '../test/support/corpora';
import { importCorpora } from '../test/support/knowledgeFixtures';
import { EVAL_QUESTIONS, percentile, round } from './retrievalBench';

/**
 * What sending superseded canon costs a turn: retrieval over the Torys setting bible as canon, with a world
 * state that contradicts a fact of every entity that has one, against plain retrieval of the same queries
 * in the same run. The first turn pays fact extraction for the sources it retrieves; later turns reuse it.
 */

const RUNS = 5;

async function elapsed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

function spread(times: number[]): { p50: number; p95: number } {
  const sorted = [...times].sort((a, b) => a - b);
  return { p50: round(percentile(sorted, 0.5)), p95: round(percentile(sorted, 0.95)) };
}

export interface SupersessionBenchResult {
  library: { sources: number; passages: number };
  stateFacts: number;
  queries: number;
  supersededLinesPerTurn: number;
  retrievalMs: { p50: number; p95: number };
  firstTurnWithStateMs: number;
  withStateMs: { p50: number; p95: number };
  withStateVsRetrieval: { p50: number; p95: number };
}

export async function runSupersessionBench(log: (line: string) => void = () => undefined): Promise<SupersessionBenchResult> {
  const library = await importCorpora('superseded', { torys: { corpus: corpusPath('torys'), class: 'canon' } });
  const store = library.store;
  log(`Torys as canon: ${JSON.stringify(store.counts())}`);
  // Far more state than a real adventure tracks: every source's subject destroyed, and one contradicting
  // fact per entity for which canon states one in a recognised shape (the bible is mostly prose).
  const state = new Map<string, WorldFact>(store.listSources().map((s) => [s.title, { entity: s.title, value: 'destroyed', statePath: `world.${s.title}` }]));
  for (const fact of analyzeStoreConflicts(store).facts) {
    if (!state.has(fact.entityKey)) state.set(fact.entityKey, { entity: fact.entity, attribute: fact.attribute, value: `no longer ${fact.value}`, statePath: `world.${fact.entityKey}` });
  }
  const currentState = [...state.values()];
  const queries = EVAL_QUESTIONS.filter((e) => e.expect[0]!.startsWith('torys/')).map((e) => e.q);
  const query = (input: string): RetrievalQuery => ({ input, stage: 'narrator', budgets: { ...DEFAULT_KNOWLEDGE_BUDGETS } });
  const knowledge = indexKnowledge(store);

  for (const q of queries) await retrieveKnowledge(store, query(q));
  const start = performance.now();
  let superseded = 0;
  for (const q of queries) superseded += (await knowledge.retrieve({ ...query(q), currentState })).record.superseded?.length ?? 0;
  const firstTurn = (performance.now() - start) / queries.length;
  // Interleaved, query by query, so load from anything else on the machine falls on both sides alike.
  const plainTimes: number[] = [];
  const stateTimes: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    for (const q of queries) {
      plainTimes.push(await elapsed(() => retrieveKnowledge(store, query(q))));
      stateTimes.push(await elapsed(() => knowledge.retrieve({ ...query(q), currentState })));
    }
  }
  const retrieval = spread(plainTimes);
  const withState = spread(stateTimes);
  const result = {
    library: store.counts(),
    stateFacts: currentState.length,
    queries: queries.length,
    supersededLinesPerTurn: round(superseded / queries.length, 2),
    retrievalMs: retrieval,
    firstTurnWithStateMs: round(firstTurn),
    withStateMs: withState,
    withStateVsRetrieval: { p50: round(withState.p50 / retrieval.p50, 2), p95: round(withState.p95 / retrieval.p95, 2) },
  };
  log(`  ${result.stateFacts} state facts over ${result.queries} queries: retrieval p50 ${retrieval.p50} ms, with state ${withState.p50} ms = ${result.withStateVsRetrieval.p50}x (p95 ${result.withStateVsRetrieval.p95}x); ${result.supersededLinesPerTurn} lines superseded per turn`);
  library.dispose();
  return result;
}
