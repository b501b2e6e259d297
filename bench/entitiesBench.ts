import { performance } from 'node:perf_hooks';
import { analyzeStoreConflicts } from '../src/knowledge/conflicts/conflictsIndex';
import { EntityModel, entitySourcesFromStore } from '../src/knowledge/entities';
import { corpusPath } from '../test/support/corpora';
import { importCorpora } from '../test/support/knowledgeFixtures';
import { percentile, round } from './retrievalBench';

/**
 * What the campaign-as-a-language costs on every index change: the entity model built from the index, its
 * link problems for every file, and every mention (what the Codex counts), on Torys as canon beside the
 * D&D SRD as reference. The anchor is the conflict analysis, which already runs on every index change,
 * measured on the same store in the same process. Each run starts from a cold model (no cache kept).
 */

const RUNS = 7;

function times(fn: () => unknown): { p50: number; p95: number } {
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    fn();
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return { p50: round(percentile(samples, 0.5)), p95: round(percentile(samples, 0.95)) };
}

export interface EntitiesBenchResult {
  library: { sources: number; passages: number };
  entities: number;
  mentions: number;
  unresolvedLinks: number;
  conflictAnalysisMs: { p50: number; p95: number };
  modelAndLinkProblemsMs: { p50: number; p95: number };
  withMentionsMs: { p50: number; p95: number };
  vsConflictAnalysis: { modelAndLinkProblems: number; withMentions: number };
}

export async function runEntitiesBench(log: (line: string) => void = () => undefined): Promise<EntitiesBenchResult> {
  const library = await importCorpora('entities', {
    torys: { corpus: corpusPath('torys'), class: 'canon' },
    srd: { corpus: corpusPath('dnd-srd-5.1'), class: 'reference' },
  });
  try {
    const store = library.store;
    log(`Torys (canon) + SRD (reference): ${JSON.stringify(store.counts())}`);
    const build = () => {
      const model = new EntityModel(entitySourcesFromStore(store));
      const unresolved = model.sources.reduce((n, s) => n + model.unresolvedLinks(s.text).length, 0);
      return { model, unresolved };
    };
    const conflictAnalysisMs = times(() => analyzeStoreConflicts(store));
    const modelAndLinkProblemsMs = times(build);
    const withMentionsMs = times(() => build().model.allMentions());
    const { model, unresolved } = build();
    const result: EntitiesBenchResult = {
      library: store.counts(),
      entities: model.canonEntities().length,
      mentions: model.allMentions().length,
      unresolvedLinks: unresolved,
      conflictAnalysisMs,
      modelAndLinkProblemsMs,
      withMentionsMs,
      vsConflictAnalysis: {
        modelAndLinkProblems: round(modelAndLinkProblemsMs.p50 / conflictAnalysisMs.p50),
        withMentions: round(withMentionsMs.p50 / conflictAnalysisMs.p50),
      },
    };
    log(`entities ${result.entities}, mentions ${result.mentions}, unresolved links ${result.unresolvedLinks}`);
    log(`conflict analysis (anchor) p50 ${conflictAnalysisMs.p50} ms; model + link problems p50 ${modelAndLinkProblemsMs.p50} ms (×${result.vsConflictAnalysis.modelAndLinkProblems}); with every mention p50 ${withMentionsMs.p50} ms (×${result.vsConflictAnalysis.withMentions})`);
    return result;
  } finally {
    library.dispose();
  }
}
