import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { REPO_ROOT } from '../test/support/corpora';
import { writeSrdCampaign } from './floorBench';
import type { WorkName, WorkResult } from './indexWork';

/**
 * Indexing speed and memory on the D&D SRD (1028 files, 2.7 MB) and on N distinct copies of it (`writeSrdCampaign`), each
 * measurement in a child process of its own (its own peak RSS and CPU time), paired in one run: every
 * repeat runs the anchor and the product back to back, and the summary gives min / median / max.
 *
 * Anchors: plain `remark-parse` alone on one thread over the same files (no GFM, no chunking, no SQLite),
 * also over the ×N files, parsed for real; the full index for a one-file edit; MiniSearch (an in-memory
 * engine) indexing the same passages, for peak RSS. Ratios are printed, never asserted.
 */

const CHILD = path.join(__dirname, 'indexWork.ts');
const BUILT_CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
const EDITED = path.join('Monsters', 'Aboleth.md');

interface Spread {
  min: number;
  median: number;
  max: number;
}

const round = (n: number, digits = 2): number => Number(n.toFixed(digits));

function spread(values: readonly number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  return { min: round(sorted[0]!), median: round(sorted[Math.floor((sorted.length - 1) / 2)]!), max: round(sorted.at(-1)!) };
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return round(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!);
}

const show = (s: Spread, unit: string): string => `${s.median} ${unit} (min ${s.min}, max ${s.max})`;

/** Runs node with `args`; exit codes other than `ok` fail the bench. */
function runChild(args: string[], ok: readonly number[] = [0]): Promise<{ stdout: string; wallMs: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => {
      const wallMs = performance.now() - started;
      if (code !== null && ok.includes(code)) resolve({ stdout, wallMs });
      else reject(new Error(`node ${args.join(' ')} exited ${code}: ${stderr}`));
    });
  });
}

async function work(name: WorkName, root: string, arg?: string): Promise<WorkResult> {
  const { stdout } = await runChild(['--import', 'tsx', CHILD, name, root, ...(arg === undefined ? [] : [arg])]);
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as WorkResult;
}

interface Paired {
  remark: WorkResult[];
  inThread: WorkResult[];
  workers: WorkResult[];
}

export interface IndexBenchResult {
  srd: { files: number; passages: number; remarkMs: Spread; inThreadMs: Spread; workersMs: Spread; vsRemark: Spread; cpuVsRemark: Spread; workersVsInThread: { wall: Spread; cpu: Spread; rssMb: { workers: Spread; inThread: Spread } } };
  multiplied: { copies: number; files: number; passages: number; remarkMs: Spread; importMs: Spread; vsRemark: Spread; cpuVsRemark: Spread };
  edit: { cliMs: Spread; cliP95Ms: number; cliVsFull: number; indexFileP50Ms: number; indexFileP95Ms: number; unchangedJustSavedP95Ms: number; unchangedSettledP95Ms: number };
  memory: { productPeakRssMb: number; miniSearchPeakRssMb: number; ratio: number; copies: number };
}

export async function runIndexBench(log: (line: string) => void = () => undefined, options: { copies?: number; repeats?: number } = {}): Promise<IndexBenchResult> {
  const copies = options.copies ?? 10;
  const repeats = options.repeats ?? 3;
  if (!fs.existsSync(BUILT_CLI)) throw new Error(`${BUILT_CLI} is missing: the bench runs the built CLI (npm run bench builds it)`);
  const srdRoot = writeSrdCampaign(1);
  const bigRoot = writeSrdCampaign(copies);
  try {
    log(`index: every figure is its own child process; ${repeats} repeats, anchor and product back to back in each`);

    // SRD: plain remark vs the product in-thread vs with 2 parse workers, paired per repeat.
    const srd: Paired = { remark: [], inThread: [], workers: [] };
    for (let r = 0; r < repeats; r++) {
      srd.remark.push(await work('remark', srdRoot));
      srd.inThread.push(await work('import', srdRoot, '0'));
      srd.workers.push(await work('import', srdRoot, '2'));
    }
    const last = srd.workers.at(-1)!;
    const srdResult = {
      files: last.files!,
      passages: last.passages!,
      remarkMs: spread(srd.remark.map((w) => w.wallMs)),
      inThreadMs: spread(srd.inThread.map((w) => w.wallMs)),
      workersMs: spread(srd.workers.map((w) => w.wallMs)),
      vsRemark: spread(srd.workers.map((w, i) => Math.min(w.wallMs, srd.inThread[i]!.wallMs) / srd.remark[i]!.wallMs)),
      cpuVsRemark: spread(srd.inThread.map((w, i) => w.cpuMs / srd.remark[i]!.cpuMs)),
      workersVsInThread: {
        wall: spread(srd.workers.map((w, i) => w.wallMs / srd.inThread[i]!.wallMs)),
        cpu: spread(srd.workers.map((w, i) => w.cpuMs / srd.inThread[i]!.cpuMs)),
        rssMb: { workers: spread(srd.workers.map((w) => w.peakRssMb)), inThread: spread(srd.inThread.map((w) => w.peakRssMb)) },
      },
    };
    log(`  SRD ${srdResult.files} files, ${srdResult.passages} passages`);
    log(`    plain remark-parse, one thread   ${show(srdResult.remarkMs, 'ms')}  (CPU ${spread(srd.remark.map((w) => w.cpuMs)).median} ms)`);
    log(`    full index, in-thread            ${show(srdResult.inThreadMs, 'ms')}  (CPU ${spread(srd.inThread.map((w) => w.cpuMs)).median} ms, peak RSS ${srdResult.workersVsInThread.rssMb.inThread.median} MB)`);
    log(`    full index, 2 parse workers      ${show(srdResult.workersMs, 'ms')}  (CPU ${spread(srd.workers.map((w) => w.cpuMs)).median} ms, peak RSS ${srdResult.workersVsInThread.rssMb.workers.median} MB)`);
    log(`    full index (faster of the two) / plain remark: ${show(srdResult.vsRemark, 'x')}   goal <= 1.0x`);
    log(`    CPU, full index in-thread / plain remark:      ${show(srdResult.cpuVsRemark, 'x')}`);
    log(`    2 workers / in-thread: wall ${show(srdResult.workersVsInThread.wall, 'x')}, CPU ${show(srdResult.workersVsInThread.cpu, 'x')}`);

    // SRD xN, built and parsed for real.
    const big = { remark: [] as WorkResult[], product: [] as WorkResult[] };
    for (let r = 0; r < repeats; r++) {
      big.remark.push(await work('remark', bigRoot));
      big.product.push(await work('import', bigRoot, '0'));
    }
    const multiplied = {
      copies,
      files: big.product.at(-1)!.files!,
      passages: big.product.at(-1)!.passages!,
      remarkMs: spread(big.remark.map((w) => w.wallMs)),
      importMs: spread(big.product.map((w) => w.wallMs)),
      vsRemark: spread(big.product.map((w, i) => w.wallMs / big.remark[i]!.wallMs)),
      cpuVsRemark: spread(big.product.map((w, i) => w.cpuMs / big.remark[i]!.cpuMs)),
    };
    log(`  SRD x${copies}: ${multiplied.files} files, ${multiplied.passages} passages`);
    log(`    plain remark-parse, one thread   ${show(multiplied.remarkMs, 'ms')}`);
    log(`    full index, in-thread (default)  ${show(multiplied.importMs, 'ms')}`);
    log(`    full index / plain remark:       ${show(multiplied.vsRemark, 'x')}   goal <= 1.0x`);
    log(`    CPU, full index / plain remark:  ${show(multiplied.cpuVsRemark, 'x')}`);

    // Peak RSS of the product's import beside MiniSearch indexing the passages it wrote.
    const mini = await work('minisearch', bigRoot);
    const productRss = big.product.at(-1)!.peakRssMb;
    const memory = { productPeakRssMb: round(productRss, 1), miniSearchPeakRssMb: round(mini.peakRssMb, 1), ratio: round(productRss / mini.peakRssMb), copies };
    log(`    peak RSS: full index ${memory.productPeakRssMb} MB, MiniSearch over the same ${mini.passages} passages ${memory.miniSearchPeakRssMb} MB (${memory.ratio}x)`);

    // One file edited: `storyteller index` as a writer runs it, against the full index of the same library.
    const editedPath = path.join(bigRoot, 'reference', `srd-${copies - 1}`, EDITED);
    const cliMs: number[] = [];
    for (let r = 0; r < Math.max(5, repeats); r++) {
      fs.appendFileSync(editedPath, `\nThe aboleth remembers bench run ${r}.\n`);
      // As a writer runs it (its summary, not --json). Exit 1 is "findings" (files with issues), still a finished run.
      const run = await runChild([BUILT_CLI, 'index', bigRoot], [0, 1]);
      const counts = /(\d+) indexed, (\d+) unchanged/.exec(run.stdout);
      // The edited file, and a copy of its text that it held or gave back (the SRD repeats monsters).
      if (!counts || Number(counts[1]) < 1 || Number(counts[2]) < multiplied.files - 3) throw new Error(`storyteller index after one edit: ${run.stdout}`);
      cliMs.push(run.wallMs);
    }
    // indexFile in-process, as a save runs it: after an edit, the same file again just after, and again
    // once its mtime is settled (older than 2 s, so its stat is trusted).
    const saves = await work('saves', bigRoot, `${path.relative(bigRoot, editedPath).split(path.sep).join('/')},20`);
    const edit = {
      cliMs: spread(cliMs),
      cliP95Ms: percentile(cliMs, 95),
      cliVsFull: round(spread(cliMs).median / multiplied.importMs.median, 3),
      indexFileP50Ms: percentile(saves.editedMs!, 50),
      indexFileP95Ms: percentile(saves.editedMs!, 95),
      unchangedJustSavedP95Ms: percentile(saves.unchangedMs!, 95),
      unchangedSettledP95Ms: percentile(saves.settledMs!, 95),
    };
    log(`  one file edited in SRD x${copies}:`);
    log(`    storyteller index (CLI, process start included)  ${show(edit.cliMs, 'ms')}, p95 ${edit.cliP95Ms} ms = 1/${round(1 / edit.cliVsFull, 1)} of the full index   goal <= 1000 ms`);
    log(`    indexFile in-process, edited       p50 ${edit.indexFileP50Ms} ms, p95 ${edit.indexFileP95Ms} ms   goal <= 20 ms p95`);
    log(`    indexFile, unchanged, just saved   p95 ${edit.unchangedJustSavedP95Ms} ms (read and hashed: its mtime is too recent to trust)`);
    log(`    indexFile, unchanged, settled      p95 ${edit.unchangedSettledP95Ms} ms (stat only)   goal <= 2 ms`);
    return { srd: srdResult, multiplied, edit, memory };
  } finally {
    fs.rmSync(srdRoot, { recursive: true, force: true });
    fs.rmSync(bigRoot, { recursive: true, force: true });
  }
}
