import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { DEFAULT_KNOWLEDGE_BUDGETS, retrieveKnowledge, searchKnowledge } from '../src/knowledge/retrieval/retrieval';
import { tokenize } from '../src/knowledge/retrieval/retrievalTerms';
import type { KnowledgeStore } from '../src/knowledge/indexing/store';
import { corpusPath } from '../test/support/corpora';
import { importCorpora, replicateSources } from '../test/support/knowledgeFixtures';

/**
 * Retrieval quality and speed on real material nobody wrote for this project.
 *
 * Quality: questions a reader would ask of the Torys setting bible (canon) and the D&D SRD (reference),
 * each with the files that answer it; recall@k is the share of questions with an answering file among
 * the first k results. Abstention: the share of off-topic questions for which nothing is returned.
 * Both are measured for `searchKnowledge` and for plain bm25 over the same database.
 *
 * Speed: p50/p95 of search and of context assembly on the SRD ×10, against raw FTS5 bm25 on the same
 * database in the same run.
 */

interface EvalQuestion {
  q: string;
  /** Campaign-relative paths (either one answers). */
  expect: string[];
}

const TORYS = 'torys/';
const SRD = 'srd/';

export const EVAL_QUESTIONS: EvalQuestion[] = [
  { q: "Who heals the sick and wounded in Day's End?", expect: [`${TORYS}world/tumulted-sea/andal/days-end/ahahbu.md`, `${TORYS}world/tumulted-sea/andal/days-end/ahahbus-house.md`] },
  { q: "Who runs the inn at Day's End?", expect: [`${TORYS}world/tumulted-sea/andal/days-end/natra.md`, `${TORYS}world/tumulted-sea/andal/days-end/old-prince.md`] },
  { q: 'Who is the mayor of the town and where is his office?', expect: [`${TORYS}world/tumulted-sea/andal/days-end/usen.md`] },
  { q: 'What secret lies sealed under the Mayoral Seat?', expect: [`${TORYS}world/tumulted-sea/andal/days-end/dungeon.md`, `${TORYS}world/tumulted-sea/andal/days-end/mayoral-seat.md`] },
  { q: 'Which fire-breathing dragon is king of the caldera?', expect: [`${TORYS}world/oro-oro-ponoro-poron/dragons/tuvdak-the-magnificent.md`] },
  { q: 'Is there a shadow dragon that stays out of sight?', expect: [`${TORYS}world/oro-oro-ponoro-poron/dragons/ice.md`] },
  { q: 'Who leads the Lukurru clan?', expect: [`${TORYS}world/oro-oro-ponoro-poron/lukurru/irvini-the-seer.md`, `${TORYS}world/oro-oro-ponoro-poron/lukurru/index.md`] },
  { q: 'Which clan lives in floating huts anchored to pillars of rock?', expect: [`${TORYS}world/oro-oro-ponoro-poron/dagana/index.md`] },
  { q: 'Which clan worships no dragon?', expect: [`${TORYS}world/oro-oro-ponoro-poron/perexel/index.md`] },
  { q: 'The winged humanoids who have claws for hands', expect: [`${TORYS}world/tumulted-sea/dancer.md`] },
  { q: 'The gnome library with glowing gemstones in its ceiling', expect: [`${TORYS}world/tumulted-sea/leuber/ruemins/ruemin-cavern.md`] },
  { q: 'Who is the harbourmaster of Trapwater Bay?', expect: [`${TORYS}world/tumulted-sea/sibal/lord-chewan.md`] },
  { q: 'the long-lived elf who rules Sibal', expect: [`${TORYS}world/tumulted-sea/sibal/lord-calas.md`] },
  { q: 'What is the capital city of Andal?', expect: [`${TORYS}world/tumulted-sea/andal/sayrenvar.md`, `${TORYS}world/tumulted-sea/andal/index.md`] },
  { q: 'the port city on the south coast of Leuber', expect: [`${TORYS}world/tumulted-sea/leuber/firecomb.md`, `${TORYS}world/tumulted-sea/leuber/index.md`] },
  { q: 'werewolves that live alone in the forest', expect: [`${TORYS}world/tumulted-sea/andal/elking-wood/werewolf.md`] },
  { q: 'the ancient elven king whose domain spanned the forest', expect: [`${TORYS}world/tumulted-sea/andal/days-end/oeged.md`] },
  { q: "the judge of Day's End who insists on her title", expect: [`${TORYS}world/tumulted-sea/andal/days-end/lord-tayossa.md`] },
  { q: "the mayor's butler who manipulates people", expect: [`${TORYS}world/tumulted-sea/andal/days-end/tyagr.md`] },
  { q: 'a travelling merchant selling rare fabrics and art', expect: [`${TORYS}world/tumulted-sea/andal/days-end/rettoo.md`] },
  { q: "the grim graveyard outside the town's wall", expect: [`${TORYS}world/tumulted-sea/andal/days-end/graveyard.md`] },
  { q: 'What gift does Babanak present to Tuvdak?', expect: [`${TORYS}stories/tuvdaks-gift.md`] },
  { q: 'the fighter who slew a wyvern single-handedly', expect: [`${TORYS}world/oro-oro-ponoro-poron/bekebel/lomon-the-warrior.md`] },
  { q: 'how do cardinal directions work on a ring-shaped planet', expect: [`${TORYS}world/eclipse.md`] },
  { q: 'druids who take the power of the Eclipse into their hearts', expect: [`${TORYS}world/tumulted-sea/andal/elking-wood/druid.md`, `${TORYS}world/tumulted-sea/andal/elking-wood/osazii.md`] },
  { q: 'How does grappling work?', expect: [`${SRD}Gameplay/Combat.md`] },
  { q: 'What are the effects of exhaustion levels?', expect: [`${SRD}Gamemastering/Conditions.md`, `${SRD}Gameplay/Adventuring.md`] },
  { q: 'How much damage does falling deal?', expect: [`${SRD}Gameplay/Adventuring.md`] },
  { q: 'What can a character do during a short rest?', expect: [`${SRD}Gameplay/Adventuring.md`] },
  { q: 'When do I make an opportunity attack?', expect: [`${SRD}Gameplay/Combat.md`] },
  { q: 'death saving throws at zero hit points', expect: [`${SRD}Gameplay/Combat.md`] },
  { q: 'how far can I long jump', expect: [`${SRD}Gameplay/Adventuring.md`] },
  { q: "the rogue's sneak attack damage", expect: [`${SRD}Classes/Rogue.md`] },
  { q: 'druid wild shape into a beast', expect: [`${SRD}Classes/Druid.md`] },
  { q: 'holding breath and suffocating', expect: [`${SRD}Gameplay/Adventuring.md`] },
  { q: 'fighting with two weapons', expect: [`${SRD}Gameplay/Combat.md`] },
  { q: 'attacking while mounted on a horse', expect: [`${SRD}Gameplay/Combat.md`] },
  { q: 'fighting underwater', expect: [`${SRD}Gameplay/Combat.md`] },
  { q: 'half cover and three-quarters cover bonus to armor class', expect: [`${SRD}Gameplay/Combat.md`] },
  { q: 'maintaining concentration on a spell when damaged', expect: [`${SRD}Spells/# Spellcasting.md`, `${SRD}Spells (Alt)/# Spellcasting.md`, `${SRD}Gameplay/Combat.md`] },
  { q: 'What does the poisoned condition do?', expect: [`${SRD}Gamemastering/Conditions.md`] },
  { q: 'How much does plate armor cost?', expect: [`${SRD}Equipment/Armor.md`] },
  { q: 'barbarian rage damage bonus', expect: [`${SRD}Classes/Barbarian.md`] },
  { q: 'prerequisites for multiclassing', expect: [`${SRD}Characterizations/Multiclassing.md`] },
  { q: 'fireball spell damage and radius', expect: [`${SRD}Spells/Fireball.md`, `${SRD}Spells (Alt)/Spells F.md`] },
];

export const OFF_TOPIC_QUESTIONS = [
  'How do I configure a Kubernetes ingress controller?',
  'What hydration should a sourdough starter have?',
  'quarterly earnings report for the stock market',
  'We board the starship and plot a jump to the orbital casino.',
  'The pilot checks the hyperdrive coolant before docking.',
  'python list comprehension syntax',
  'home office tax deduction rules',
  'replacing a smartphone screen',
  'The detective lights a cigarette in the rain-soaked alley outside the jazz club.',
  'train timetable for the airport express',
];

const K = [1, 5, 10] as const;
/** Timed repetitions; min, median and max of their figures are reported. */
const RUNS = 5;
/** Passes over the query set within one repetition (each call one sample of its p50/p95). */
const PASSES_PER_RUN = 3;

/** Plain bm25 as a baseline: every query word, ORed, ranked by FTS5's bm25 with default weights. */
function plainBm25(store: KnowledgeStore, text: string, limit: number): string[] {
  const words = [...new Set(tokenize(text))];
  if (words.length === 0) return [];
  const match = words.map((w) => `"${w}"`).join(' OR ');
  const rows = store.db
    .prepare(
      `SELECT s.path FROM passages_fts JOIN passages p ON p.rowid = passages_fts.rowid JOIN sources s ON s.id = p.source_id
       WHERE passages_fts MATCH ? AND p.campaign_id = ? ORDER BY bm25(passages_fts) LIMIT ?`,
    )
    .all(match, store.campaignId, limit) as { path: string }[];
  return rows.map((r) => r.path);
}

/**
 * The anchor #14 names: pure FTS5, the query's words OR-ed, `MATCH … ORDER BY bm25 LIMIT 20`, no join —
 * the least any lexical search over this index can cost.
 */
function pureFts5(store: KnowledgeStore, text: string): number {
  const words = [...new Set(tokenize(text))];
  if (words.length === 0) return 0;
  return store.statement('SELECT rowid FROM passages_fts WHERE passages_fts MATCH ? ORDER BY bm25(passages_fts) LIMIT 20').all(words.map((w) => `"${w}"`).join(' OR ')).length;
}

function recall(ranked: string[][], questions: EvalQuestion[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of K) {
    const hits = questions.filter((q, i) => ranked[i]!.slice(0, k).some((p) => q.expect.includes(p))).length;
    out[`recall@${k}`] = round(hits / questions.length);
  }
  return out;
}

export function round(n: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

export function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

interface Spread {
  min: number;
  median: number;
  max: number;
}

function spread(values: number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  return { min: round(sorted[0]!), median: round(percentile(sorted, 0.5)), max: round(sorted[sorted.length - 1]!) };
}

/**
 * Paired timing: every query runs through each contender in turn, so load on the machine falls on all of
 * them alike; one repetition gives each contender's p50 and p95 over all queries.
 */
async function pairedRun(queries: readonly string[], contenders: Record<string, (q: string) => unknown>): Promise<Record<string, { p50: number; p95: number }>> {
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(contenders).map((k) => [k, []]));
  for (let pass = 0; pass < PASSES_PER_RUN; pass++) {
    for (const q of queries) {
      for (const [name, fn] of Object.entries(contenders)) {
        const start = performance.now();
        await fn(q);
        times[name]!.push(performance.now() - start);
      }
    }
  }
  return Object.fromEntries(
    Object.entries(times).map(([name, t]) => {
      t.sort((a, b) => a - b);
      return [name, { p50: percentile(t, 0.5), p95: percentile(t, 0.95) }];
    }),
  );
}

/** A writer's library: a setting bible as canon and the SRD as reference, in one campaign, imported for real. */
function importEvalLibrary() {
  return importCorpora('eval', {
    [TORYS.slice(0, -1)]: { corpus: corpusPath('torys'), class: 'canon' },
    [SRD.slice(0, -1)]: { corpus: corpusPath('dnd-srd-5.1'), class: 'reference' },
  });
}

/**
 * The SRD imported once, then its sources written nine more times under new paths. The importer would
 * rightly refuse identical copies as duplicates, so the copies bypass it to make an index ten times the size.
 */
async function importSrdTimesTen() {
  const library = await importCorpora('srd10', { srd: { corpus: corpusPath('dnd-srd-5.1'), class: 'reference' } });
  replicateSources(library.store, 9);
  return library;
}

type Ratio = { p50: Spread; p95: Spread };

export interface RetrievalBenchResult {
  quality: {
    questions: number;
    offTopic: number;
    retrieval: Record<string, number>;
    plainBm25: Record<string, number>;
  };
  speed: {
    library: { sources: number; passages: number };
    queries: number;
    runs: number;
    /** Pure FTS5 `MATCH … ORDER BY bm25 LIMIT 20`, no join, over the query's words: search's anchor. */
    anchorMs: Ratio;
    /** The same over a turn's words (action, scene, recent lines, names): context assembly's anchor. */
    turnAnchorMs: Ratio;
    searchMs: Ratio;
    contextMs: Ratio;
    /** Each run's figure over the same run's anchor. */
    searchVsAnchor: Ratio;
    contextVsAnchor: Ratio;
    /** Against the query-only anchor, the stricter reading. */
    contextVsSearchAnchor: Ratio;
    /** A long paste as the query: search against pure FTS5 over every word of it. */
    pasted: { words: number; repeats: number; searchMs: number; anchorMs: number; ratio: number };
  };
}

const PASTED_WORDS = 10_000;
const PASTED_REPEATS = 3;

/** A writer pastes a chapter (here another game's rules) into search: search and its anchor, alternately. */
async function pastedChapter(store: KnowledgeStore): Promise<RetrievalBenchResult['speed']['pasted']> {
  const fate = corpusPath('fate-srd');
  const text = fs
    .readdirSync(fate, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => fs.readFileSync(path.join(fate, f), 'utf8'))
    .join('\n')
    .split(/\s+/)
    .slice(0, PASTED_WORDS)
    .join(' ');
  const search: number[] = [];
  const anchor: number[] = [];
  for (let i = 0; i < PASTED_REPEATS; i++) {
    let start = performance.now();
    await searchKnowledge(store, text);
    search.push(performance.now() - start);
    start = performance.now();
    pureFts5(store, text);
    anchor.push(performance.now() - start);
  }
  const median = (t: number[]) => t.sort((a, b) => a - b)[Math.floor(t.length / 2)]!;
  return { words: PASTED_WORDS, repeats: PASTED_REPEATS, searchMs: round(median(search)), anchorMs: round(median(anchor)), ratio: round(median(search) / median(anchor)) };
}

export async function measureRetrievalQuality(log: (line: string) => void = () => undefined): Promise<RetrievalBenchResult['quality']> {
  const evalLibrary = await importEvalLibrary();
  const evalStore = evalLibrary.store;
  log(`eval library: ${JSON.stringify(evalStore.counts())}`);
  const ours: string[][] = [];
  const baseline: string[][] = [];
  for (const { q } of EVAL_QUESTIONS) {
    ours.push((await searchKnowledge(evalStore, q, { limit: 10 })).hits.map((h) => h.sourcePath));
    baseline.push(plainBm25(evalStore, q, 10));
  }
  let abstainedOurs = 0;
  let abstainedBaseline = 0;
  for (const q of OFF_TOPIC_QUESTIONS) {
    if ((await searchKnowledge(evalStore, q)).hits.length === 0) abstainedOurs++;
    if (plainBm25(evalStore, q, 10).length === 0) abstainedBaseline++;
  }
  // Recall counts only the on-topic questions that got any answer; abstaining on them is a miss.
  const answered = ours.filter((r) => r.length > 0).length;
  const quality = {
    questions: EVAL_QUESTIONS.length,
    offTopic: OFF_TOPIC_QUESTIONS.length,
    retrieval: { ...recall(ours, EVAL_QUESTIONS), answeredOnTopic: round(answered / EVAL_QUESTIONS.length), abstentionOffTopic: round(abstainedOurs / OFF_TOPIC_QUESTIONS.length) },
    plainBm25: { ...recall(baseline, EVAL_QUESTIONS), answeredOnTopic: 1, abstentionOffTopic: round(abstainedBaseline / OFF_TOPIC_QUESTIONS.length) },
  };
  evalLibrary.dispose();
  log(`  retrieval   ${JSON.stringify(quality.retrieval)}`);
  log(`  plain bm25  ${JSON.stringify(quality.plainBm25)}`);
  return quality;
}

export async function measureRetrievalSpeed(log: (line: string) => void = () => undefined): Promise<RetrievalBenchResult['speed']> {
  const srd10 = await importSrdTimesTen();
  const store = srd10.store;
  const library = store.counts();
  log(`SRD x10 (built: the SRD imported, its sources written nine more times): ${JSON.stringify(library)}`);
  const queries = EVAL_QUESTIONS.filter((e) => e.expect[0]!.startsWith(SRD)).map((e) => e.q);
  const turn = {
    scene: 'The party rests in a ruined keep.',
    recent: ['The goblin archers fall back into the trees.', 'You hear water dripping somewhere below.'],
    entities: ['Sildar', 'Cragmaw Castle'],
  };
  const contenders = {
    anchor: (q: string) => pureFts5(store, q),
    // A turn searches its scene, recent lines and names too: its anchor is pure FTS5 over all those words.
    turnAnchor: (q: string) => pureFts5(store, [q, turn.scene, ...turn.recent, ...turn.entities].join(' ')),
    search: (q: string) => searchKnowledge(store, q),
    context: (q: string) => retrieveKnowledge(store, { input: q, ...turn, stage: 'narrator', budgets: { ...DEFAULT_KNOWLEDGE_BUDGETS } }),
  };
  // One untimed pass warms the page cache and every cache the contenders keep, for all of them alike.
  for (const q of queries) for (const fn of Object.values(contenders)) await fn(q);
  const runs: Record<keyof typeof contenders, { p50: number; p95: number }>[] = [];
  for (let run = 0; run < RUNS; run++) runs.push(await pairedRun(queries, contenders));
  const pasted = await pastedChapter(store);
  srd10.dispose();
  const figure = (name: keyof typeof contenders): Ratio => ({ p50: spread(runs.map((r) => r[name].p50)), p95: spread(runs.map((r) => r[name].p95)) });
  const ratio = (name: keyof typeof contenders, anchor: keyof typeof contenders): Ratio => ({
    p50: spread(runs.map((r) => r[name].p50 / r[anchor].p50)),
    p95: spread(runs.map((r) => r[name].p95 / r[anchor].p95)),
  });
  const speed = {
    library,
    queries: queries.length,
    runs: RUNS,
    anchorMs: figure('anchor'),
    turnAnchorMs: figure('turnAnchor'),
    searchMs: figure('search'),
    contextMs: figure('context'),
    searchVsAnchor: ratio('search', 'anchor'),
    contextVsAnchor: ratio('context', 'turnAnchor'),
    contextVsSearchAnchor: ratio('context', 'anchor'),
    pasted,
  };
  const show = (s: Spread, unit = '') => `${s.median}${unit} (${s.min}–${s.max})`;
  log(`  ${RUNS} paired runs × ${PASSES_PER_RUN} passes over ${queries.length} SRD questions; median (min–max) over runs`);
  log(`  ${'figure'.padEnd(36)} ${'p50'.padEnd(22)} p95`);
  log(`  ${'pure FTS5 bm25 LIMIT 20, no join'.padEnd(36)} ${show(speed.anchorMs.p50, ' ms').padEnd(22)} ${show(speed.anchorMs.p95, ' ms')}`);
  log(`  ${'pure FTS5, the turn\'s words (anchor)'.padEnd(36)} ${show(speed.turnAnchorMs.p50, ' ms').padEnd(22)} ${show(speed.turnAnchorMs.p95, ' ms')}`);
  log(`  ${'search'.padEnd(36)} ${show(speed.searchMs.p50, ' ms').padEnd(22)} ${show(speed.searchMs.p95, ' ms')}`);
  log(`  ${'context assembly'.padEnd(36)} ${show(speed.contextMs.p50, ' ms').padEnd(22)} ${show(speed.contextMs.p95, ' ms')}`);
  log(`  ${'search ÷ anchor (goal ≤ 2× at p95)'.padEnd(36)} ${show(speed.searchVsAnchor.p50, '×').padEnd(22)} ${show(speed.searchVsAnchor.p95, '×')}`);
  log(`  ${'context ÷ anchor (goal ≤ 3× at p95)'.padEnd(36)} ${show(speed.contextVsAnchor.p50, '×').padEnd(22)} ${show(speed.contextVsAnchor.p95, '×')}`);
  log(`  ${'context ÷ the query-only anchor'.padEnd(36)} ${show(speed.contextVsSearchAnchor.p50, '×').padEnd(22)} ${show(speed.contextVsSearchAnchor.p95, '×')}`);
  log(
    `  a pasted chapter (${pasted.words} words of the Fate SRD), median of ${pasted.repeats}: search ${pasted.searchMs} ms, pure FTS5 over all its words ${pasted.anchorMs} ms = ${pasted.ratio}×`,
  );
  return speed;
}

/** The retrieval part of `npm run bench`: quality on Torys + SRD, then speed on the SRD ×10. */
export async function runRetrievalBench(log: (line: string) => void = () => undefined): Promise<RetrievalBenchResult> {
  return { quality: await measureRetrievalQuality(log), speed: await measureRetrievalSpeed(log) };
}

if (require.main === module) {
  const only = process.argv[2];
  const run = only === 'quality' ? measureRetrievalQuality : only === 'speed' ? measureRetrievalSpeed : runRetrievalBench;
  run((line) => console.log(line)).then(
    (result) => console.log(JSON.stringify(result, null, 2)),
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
