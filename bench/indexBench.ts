import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadCampaign, type Campaign } from '../src/knowledge/campaign/campaign';
import { parseDocument } from '../src/knowledge/indexing/chunker';
import { importCampaign, indexFile, type ImportReport } from '../src/knowledge/indexing/importer';
import { defaultWorkerPath, inThreadParser, workerParser, type Parser } from '../src/knowledge/indexing/parsePool';
import { KnowledgeStore } from '../src/knowledge/indexing/store';
import { corpusPath, REPO_ROOT } from '../test/support/corpora';

/**
 * Indexing speed and memory on the D&D SRD (1028 files, 2.7 MB) and on the SRD copied ×N, against two
 * baselines run in the same process on the same text: parse-only (remark + chunking, no I/O, no SQLite)
 * and raw FTS5 insert (the files' text into a bare FTS5 table in one transaction).
 */

const round = (n: number, digits = 2): number => Number(n.toFixed(digits));
const mb = (bytes: number): number => bytes / 1024 / 1024;
const maxRssMb = (): number => round(process.resourceUsage().maxRSS / 1024, 1);

interface Corpus {
  files: { rel: string; text: string }[];
  bytes: number;
}

function readCorpus(root: string): Corpus {
  const rels = (fs.readdirSync(root, { recursive: true, encoding: 'utf8' }) as string[]).filter((f) => /\.(md|txt)$/i.test(f)).sort();
  const files = rels.map((rel) => ({ rel: rel.split(path.sep).join('/'), text: fs.readFileSync(path.join(root, rel), 'utf8') }));
  return { files, bytes: files.reduce((sum, f) => sum + Buffer.byteLength(f.text), 0) };
}

/**
 * A campaign holding `copies` versions of the corpus. Copy 0 is the SRD itself; the others have "the"
 * numbered per copy, so their passages are distinct text (a real larger library, not duplicates that the
 * importer would rightly refuse).
 */
function makeCampaign(corpus: Corpus, copies: number): Campaign {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'st-bench-index-'));
  fs.writeFileSync(path.join(root, 'campaign.yaml'), `id: bench\ntitle: SRD x${copies}\n`);
  for (let i = 0; i < copies; i++) {
    for (const file of corpus.files) {
      const target = path.join(root, 'reference', `srd-${i}`, ...file.rel.split('/'));
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, i === 0 ? file.text : file.text.replace(/\bthe\b/g, `the${i}`));
    }
  }
  return loadCampaign(root);
}

function parseOnlyMs(corpus: Corpus): number {
  const started = performance.now();
  for (const file of corpus.files) parseDocument(file.text, file.rel.endsWith('.txt') ? 'text' : 'markdown');
  return performance.now() - started;
}

function rawFtsInsertMs(corpus: Corpus): number {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-bench-fts-'));
  const db = new Database(path.join(dir, 'raw.db'));
  try {
    db.pragma('journal_mode = WAL');
    db.exec("CREATE VIRTUAL TABLE t USING fts5 (body, tokenize = 'unicode61 remove_diacritics 2')");
    const insert = db.prepare('INSERT INTO t (body) VALUES (?)');
    const started = performance.now();
    db.transaction(() => {
      for (const file of corpus.files) insert.run(file.text.normalize('NFC'));
    })();
    return performance.now() - started;
  } finally {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The built worker when there is one (what the extension ships), else the TypeScript source under tsx. */
function benchParser(): Parser {
  const built = path.join(REPO_ROOT, 'dist', 'parse-worker.js');
  return workerParser({ workerPath: fs.existsSync(built) ? built : defaultWorkerPath() });
}

async function timedImport(campaign: Campaign, parser: Parser): Promise<{ ms: number; report: ImportReport; store: KnowledgeStore }> {
  const store = KnowledgeStore.open(campaign);
  const started = performance.now();
  const report = await importCampaign(campaign, store, { parser });
  return { ms: performance.now() - started, report, store };
}

export interface IndexBenchResult {
  srd: { files: number; mb: number; workersMs: number; inThreadMs: number; parseOnlyMs: number; rawFtsMs: number; mbPerSecond: number; vsParseOnly: number; vsRawFts: number; passages: number; duplicates: number };
  multiplied: { copies: number; files: number; mb: number; ms: number; mbPerSecond: number; vsParseOnly: number; vsRawFts: number; passages: number; noChangeMs: number; oneEditMs: number; oneEditParsed: number; indexFileMs: number };
  peakRssMb: number;
}

export async function runIndexBench(log: (line: string) => void = () => undefined, options: { copies?: number } = {}): Promise<IndexBenchResult> {
  const copies = options.copies ?? 10;
  const corpus = readCorpus(corpusPath('dnd-srd-5.1'));
  const srdMb = mb(corpus.bytes);
  log(`index: SRD ${corpus.files.length} files, ${round(srdMb)} MB; SRD x${copies} = ${round(srdMb * copies)} MB`);

  // Warm the parser and SQLite once, so the first measured run does not pay for JIT compilation alone.
  parseOnlyMs({ files: corpus.files.slice(0, 50), bytes: 0 });
  const parseMs = parseOnlyMs(corpus);
  const ftsMs = rawFtsInsertMs(corpus);
  log(`  parse-only baseline   ${round(parseMs)} ms  ${round(srdMb / (parseMs / 1000))} MB/s`);
  log(`  raw FTS5 baseline     ${round(ftsMs)} ms  ${round(srdMb / (ftsMs / 1000))} MB/s`);

  const srdCampaign = makeCampaign(corpus, 1);
  const parser = benchParser();
  try {
    const viaWorkers = await timedImport(srdCampaign, parser);
    viaWorkers.store.close();
    fs.rmSync(srdCampaign.indexPath, { force: true });
    fs.rmSync(`${srdCampaign.indexPath}-wal`, { force: true });
    fs.rmSync(`${srdCampaign.indexPath}-shm`, { force: true });
    const inThread = await timedImport(srdCampaign, inThreadParser());
    inThread.store.close();
    const srd = {
      files: corpus.files.length,
      mb: round(srdMb),
      workersMs: round(viaWorkers.ms),
      inThreadMs: round(inThread.ms),
      parseOnlyMs: round(parseMs),
      rawFtsMs: round(ftsMs),
      mbPerSecond: round(srdMb / (viaWorkers.ms / 1000)),
      // >1 means the full import takes longer than the baseline alone.
      vsParseOnly: round(viaWorkers.ms / parseMs),
      vsRawFts: round(viaWorkers.ms / ftsMs),
      passages: viaWorkers.report.passages,
      duplicates: viaWorkers.report.counts.duplicate,
    };
    log(`  SRD import (2 workers) ${srd.workersMs} ms  ${srd.mbPerSecond} MB/s  = ${srd.vsParseOnly}x parse-only, ${srd.vsRawFts}x raw FTS5`);
    log(`  SRD import (in-thread) ${srd.inThreadMs} ms  = ${round(inThread.ms / parseMs)}x parse-only`);
    fs.rmSync(srdCampaign.root, { recursive: true, force: true });

    const big = makeCampaign(corpus, copies);
    const full = await timedImport(big, parser);
    const bigMb = srdMb * copies;
    const noChangeStarted = performance.now();
    await importCampaign(big, full.store, { parser });
    const noChangeMs = performance.now() - noChangeStarted;
    const edited = path.join(big.root, 'reference', `srd-${copies - 1}`, 'Monsters', 'Aboleth.md');
    fs.appendFileSync(edited, '\nThe aboleth remembers the bench.\n');
    const editStarted = performance.now();
    const editReport = await importCampaign(big, full.store, { parser });
    const oneEditMs = performance.now() - editStarted;
    fs.appendFileSync(edited, '\nAnd once more.\n');
    const fileStarted = performance.now();
    await indexFile(big, full.store, path.relative(big.root, edited).split(path.sep).join('/'), { parser });
    const indexFileMs = performance.now() - fileStarted;
    full.store.close();
    fs.rmSync(big.root, { recursive: true, force: true });
    const multiplied = {
      copies,
      files: full.report.files.length,
      mb: round(bigMb),
      ms: round(full.ms),
      mbPerSecond: round(bigMb / (full.ms / 1000)),
      vsParseOnly: round(full.ms / (parseMs * copies)),
      vsRawFts: round(full.ms / (ftsMs * copies)),
      passages: full.report.passages,
      noChangeMs: round(noChangeMs),
      oneEditMs: round(oneEditMs),
      oneEditParsed: editReport.counts.indexed,
      indexFileMs: round(indexFileMs),
    };
    log(`  SRD x${copies} import       ${multiplied.ms} ms  ${multiplied.mbPerSecond} MB/s  = ${multiplied.vsParseOnly}x parse-only, ${multiplied.vsRawFts}x raw FTS5 (per MB)`);
    log(`  SRD x${copies} re-import, nothing changed   ${multiplied.noChangeMs} ms`);
    log(`  SRD x${copies} re-import, one file edited   ${multiplied.oneEditMs} ms (${multiplied.oneEditParsed} file parsed)`);
    log(`  SRD x${copies} indexFile of the edited file ${multiplied.indexFileMs} ms`);
    const peakRssMb = maxRssMb();
    log(`  peak RSS ${peakRssMb} MB (heap now ${round(mb(process.memoryUsage().heapUsed), 1)} MB)`);
    return { srd, multiplied, peakRssMb };
  } finally {
    await parser.close();
  }
}
