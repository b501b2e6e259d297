import { performance } from 'node:perf_hooks';
import type { WorldInfoFields } from '../src/knowledge/campaign';
import { activateWorldInfo, NO_TIMED_EFFECTS, WORLD_INFO_DEFAULTS, type ActivationEntry, type TimedState } from '../src/knowledge/retrieval/worldInfo';
import { percentile, round } from './retrievalBench';

/**
 * SillyTavern's activation pass over a 1,000-entry book and a 20-message window, scan after scan with the
 * timed effects each one leaves, against a plain scan of the same messages for every key of the book (the
 * least any keyword activation must do) in the same process. The book and chat are generated from a fixed
 * seed: every run plays the same chat.
 */

const ENTRIES = 1000;
const WINDOW = 20;
const SCANS = 300;

/** A small deterministic generator (xorshift32), so the book and the chat are the same every run. */
function generator(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

function fields(over: Partial<WorldInfoFields>): WorldInfoFields {
  return {
    keys: [], secondaryKeys: [], selectiveLogic: 'and_any', caseSensitive: null, matchWholeWords: null, useGroupScoring: null, scanDepth: null,
    constant: false, order: 100, position: 0, depth: 4, role: 0, probability: 100, useProbability: true, groups: [], groupOverride: false,
    groupWeight: 100, sticky: 0, cooldown: 0, delay: 0, excludeRecursion: false, preventRecursion: false, delayUntilRecursion: 0, ignoreBudget: false,
    ...over,
  };
}

export interface WorldInfoBenchResult {
  entries: number;
  window: number;
  scans: number;
  firedPerScan: number;
  activationMs: { p50: number; p95: number };
  plainKeyScanMs: { p50: number; p95: number };
  activationVsPlainScan: { p50: number; p95: number };
}

export function runWorldInfoBench(log: (line: string) => void = () => undefined): WorldInfoBenchResult {
  const random = generator(33);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const vocabulary = Array.from({ length: 4000 }, (_, i) => `word${i.toString(36)}`);
  const names = Array.from({ length: 3000 }, (_, i) => `Name${i.toString(36)}`);
  const entries: ActivationEntry[] = Array.from({ length: ENTRIES }, (_, i) => {
    const r = random();
    return {
      id: `e${i}`,
      title: `Entry ${i}`,
      hash: `h${i}`,
      content: Array.from({ length: 40 }, () => pick(vocabulary)).join(' '),
      tokens: 60,
      fields: fields({
        keys: i % 50 === 7 ? [`/name${i.toString(36)}s?/i`] : Array.from({ length: 1 + (i % 3) }, () => pick(names)),
        secondaryKeys: i % 10 === 3 ? [pick(vocabulary), pick(vocabulary)] : [],
        selectiveLogic: pick(['and_any', 'and_all', 'not_any', 'not_all'] as const),
        matchWholeWords: i % 4 === 0,
        constant: i % 100 === 0,
        order: Math.floor(random() * 500),
        probability: r < 0.2 ? 50 : 100,
        groups: i % 20 === 0 ? [`group${i % 7}`] : [],
        sticky: i % 15 === 1 ? 3 : 0,
        cooldown: i % 12 === 2 ? 4 : 0,
        delay: i % 30 === 5 ? 10 : 0,
      }),
    };
  });
  // Each message is forty words, a few of them names from the book.
  const message = () => Array.from({ length: 40 }, () => (random() < 0.05 ? pick(names) : pick(vocabulary))).join(' ');
  const chat = Array.from({ length: WINDOW + SCANS }, message);
  const settings = { ...WORLD_INFO_DEFAULTS, scanDepth: WINDOW };
  const allKeys = entries.flatMap((e) => e.fields.keys.map((k) => k.toLowerCase()));

  const activation: number[] = [];
  const plain: number[] = [];
  let state: TimedState = NO_TIMED_EFFECTS;
  let fired = 0;
  let keysFound = 0;
  for (let scan = 0; scan < SCANS; scan++) {
    const messages = chat.slice(scan, scan + WINDOW);
    let start = performance.now();
    const result = activateWorldInfo({ entries, messages, chatLength: scan + WINDOW, state, seed: scan, settings, budget: 2048 });
    activation.push(performance.now() - start);
    state = result.state;
    fired += result.activated.length;
    start = performance.now();
    const lower = messages.map((m) => m.toLowerCase());
    for (const key of allKeys) if (lower.some((m) => m.includes(key))) keysFound++;
    plain.push(performance.now() - start);
  }
  const spread = (times: number[]) => {
    const sorted = [...times].sort((a, b) => a - b);
    return { p50: round(percentile(sorted, 0.5)), p95: round(percentile(sorted, 0.95)) };
  };
  const a = spread(activation);
  const p = spread(plain);
  const result: WorldInfoBenchResult = {
    entries: ENTRIES,
    window: WINDOW,
    scans: SCANS,
    firedPerScan: round(fired / SCANS),
    activationMs: a,
    plainKeyScanMs: p,
    activationVsPlainScan: { p50: round(a.p50 / p.p50), p95: round(a.p95 / p.p95) },
  };
  log(`${ENTRIES} entries, ${WINDOW}-message window, ${SCANS} scans: ${result.firedPerScan} fired per scan (within a 2,048-token budget); ${round(keysFound / SCANS)} keys in the window per scan`);
  log(`activation pass: p50 ${a.p50} ms, p95 ${a.p95} ms; a plain scan for every key: p50 ${p.p50} ms, p95 ${p.p95} ms (×${result.activationVsPlainScan.p50} / ×${result.activationVsPlainScan.p95})`);
  return result;
}
