import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { analyzeStoreConflicts } from '../src/knowledge/conflicts/conflictsIndex';
import { EntityModel, entitySourcesFromStore } from '../src/knowledge/entities';
import { importCampaign } from '../src/knowledge/indexing';
import { corpusPath } from '../test/support/corpora';
import { importCorpora } from '../test/support/knowledgeFixtures';
import { percentile, round } from './retrievalBench';

/**
 * What the campaign-as-a-language costs on every index change: the entity model built from the index, its
 * link problems for every file, and every mention (what the Codex counts), on Torys as canon beside the
 * D&D SRD as reference. The anchor is the conflict analysis, which already runs on every index change,
 * measured on the same store in the same process. The cold runs start from no model; the extension rebuilds
 * from the previous model after a file changed (what it does on each index change, once the index has been
 * quiet for a moment), measured after one Torys story and after one SRD page changed.
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
  /** Model, link problems and every mention, rebuilt from the previous model after one file changed. */
  afterCanonEditMs: { p50: number; p95: number };
  afterReferenceEditMs: { p50: number; p95: number };
  vsConflictAnalysis: { modelAndLinkProblems: number; withMentions: number; afterCanonEdit: number; afterReferenceEdit: number };
}

/** Appends a line to `relPath` and reindexes before each run; times only the rebuild from the model before. */
async function timesAfterEdit(library: Awaited<ReturnType<typeof importCorpora>>, relPath: string, start: EntityModel): Promise<{ p50: number; p95: number }> {
  const file = path.join(library.campaign.root, ...relPath.split('/'));
  const samples: number[] = [];
  let previous = start;
  for (let i = 0; i < RUNS; i++) {
    fs.appendFileSync(file, `\nEdit ${i} of the bench.\n`);
    await importCampaign(library.campaign, library.store);
    const begin = performance.now();
    const model = new EntityModel(entitySourcesFromStore(library.store, previous.sources), previous);
    model.sources.forEach((s) => model.unresolvedLinks(s.text));
    model.allMentions();
    samples.push(performance.now() - begin);
    previous = model;
  }
  samples.sort((a, b) => a - b);
  return { p50: round(percentile(samples, 0.5)), p95: round(percentile(samples, 0.95)) };
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
    model.allMentions();
    const afterCanonEditMs = await timesAfterEdit(library, 'torys/stories/tuvdaks-gift.md', model);
    const afterReferenceEditMs = await timesAfterEdit(library, 'srd/Spells/Fireball.md', model);
    const result: EntitiesBenchResult = {
      library: store.counts(),
      entities: model.canonEntities().length,
      mentions: model.allMentions().length,
      unresolvedLinks: unresolved,
      conflictAnalysisMs,
      modelAndLinkProblemsMs,
      withMentionsMs,
      afterCanonEditMs,
      afterReferenceEditMs,
      vsConflictAnalysis: {
        modelAndLinkProblems: round(modelAndLinkProblemsMs.p50 / conflictAnalysisMs.p50),
        withMentions: round(withMentionsMs.p50 / conflictAnalysisMs.p50),
        afterCanonEdit: round(afterCanonEditMs.p50 / conflictAnalysisMs.p50),
        afterReferenceEdit: round(afterReferenceEditMs.p50 / conflictAnalysisMs.p50),
      },
    };
    log(`entities ${result.entities}, mentions ${result.mentions}, unresolved links ${result.unresolvedLinks}`);
    log(`conflict analysis (anchor) p50 ${conflictAnalysisMs.p50} ms; model + link problems p50 ${modelAndLinkProblemsMs.p50} ms (×${result.vsConflictAnalysis.modelAndLinkProblems}); with every mention p50 ${withMentionsMs.p50} ms (×${result.vsConflictAnalysis.withMentions})`);
    log(`rebuilt from the previous model (model, link problems, every mention) after a Torys story changed p50 ${afterCanonEditMs.p50} ms (×${result.vsConflictAnalysis.afterCanonEdit}), after an SRD page changed p50 ${afterReferenceEditMs.p50} ms (×${result.vsConflictAnalysis.afterReferenceEdit})`);
    return result;
  } finally {
    library.dispose();
  }
}
