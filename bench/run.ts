import { parseArgs } from 'node:util';
import { runEntitiesBench } from './entitiesBench';
import { runFloorBench } from './floorBench';
import { runGraphBench } from './graphBench';
import { runIndexBench } from './indexBench';
import { measureFairytales } from './fairytaleBench';
import { runResearchBench } from './researchBench';
import { runRetrievalBench } from './retrievalBench';
import { measureRulebook } from './rulebookBench';
import { runSupersessionBench } from './supersessionBench';
import { runCampaignTurnBench, runWorldInfoBench } from './worldInfoBench';

/**
 * `npm run bench`: every benchmark part, or the ones named (`tsx bench/run.ts index --copies 3 --repeats 2`).
 * Times are printed with ratios against baselines measured in the same process, never asserted.
 * A new part is one entry in PARTS.
 */
interface BenchPart {
  name: string;
  run(log: (line: string) => void, options: { copies: number; sizes: number[] | undefined; repeats: number; instructions: boolean }): Promise<unknown>;
}

const PARTS: BenchPart[] = [
  { name: 'index', run: (log, options) => runIndexBench(log, options) },
  // The product's CLI against what SQLite itself needs, index and search, on the SRD and its distinct copies.
  { name: 'floor', run: (log, options) => runFloorBench(log, options) },
  { name: 'retrieval', run: (log) => runRetrievalBench(log) },
  // Reported on validation only; constants were tuned on a train sample (`tsx bench/fairytaleBench.ts train 30`).
  { name: 'fairytales', run: (log) => measureFairytales('val', undefined, log) },
  // Nothing was tuned on these: a rulebook asked about its own sections.
  { name: 'rulebook', run: (log) => measureRulebook(log) },
  { name: 'supersession', run: (log) => runSupersessionBench(log) },
  { name: 'entities', run: (log) => runEntitiesBench(log) },
  { name: 'world-info', run: async (log) => ({ activation: runWorldInfoBench(log), campaignTurn: await runCampaignTurnBench(log) }) },
  { name: 'graph', run: (log) => runGraphBench(log) },
  { name: 'research', run: (log) => runResearchBench(log) },
];

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    options: {
      copies: { type: 'string', default: '10' },
      // The floor part's campaigns beside the SRD, as copies of it (default 10,30).
      sizes: { type: 'string' },
      repeats: { type: 'string', default: '3' },
      json: { type: 'boolean', default: false },
      // The floor part also counts instructions with valgrind: steady under load, some 50 times slower.
      instructions: { type: 'boolean', default: false },
    },
    allowPositionals: true,
  });
  const copies = Number(values.copies);
  if (!Number.isInteger(copies) || copies < 1) throw new Error(`--copies must be a positive whole number, not '${values.copies}'`);
  const sizes = values.sizes?.split(',').map(Number);
  if (sizes?.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--sizes must be whole numbers of copies separated by commas, not '${values.sizes}'`);
  const repeats = Number(values.repeats);
  if (!Number.isInteger(repeats) || repeats < 1) throw new Error(`--repeats must be a positive whole number, not '${values.repeats}'`);
  const unknown = positionals.filter((p) => !PARTS.some((part) => part.name === p));
  if (unknown.length > 0) throw new Error(`unknown bench part ${unknown.join(', ')}; parts: ${PARTS.map((p) => p.name).join(', ')}`);
  const selected = positionals.length > 0 ? PARTS.filter((p) => positionals.includes(p.name)) : PARTS;
  const results: Record<string, unknown> = {};
  for (const part of selected) {
    console.log(`\n== ${part.name} ==`);
    results[part.name] = await part.run((line) => console.log(line), { copies, sizes, repeats, instructions: values.instructions });
  }
  if (values.json) console.log(JSON.stringify(results, null, 2));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
