import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import MiniSearch from 'minisearch';
import remarkParse from 'remark-parse';
import { unified } from 'unified';
import { loadCampaign } from '../src/knowledge/campaign/campaign';
import { importCampaign, indexFile, scanCampaign } from '../src/knowledge/indexing/importer';
import { inThreadParser, workerParser, type Parser } from '../src/knowledge/indexing/parsePool';
import { KnowledgeStore } from '../src/knowledge/indexing/store';
import { REPO_ROOT } from '../test/support/corpora';

/**
 * One measured piece of indexing work, run in a child process of its own (`tsx bench/indexWork.ts <work>
 * <campaign> …`) so its peak RSS and CPU time are its own. Prints one JSON line: wall and CPU time of the
 * work (start-up excluded), peak RSS of the process, and what the work produced.
 */

export type WorkName = 'remark' | 'import' | 'minisearch' | 'saves';

export interface WorkResult {
  wallMs: number;
  /** User + system time of every thread of the process during the work. */
  cpuMs: number;
  peakRssMb: number;
  files?: number;
  passages?: number;
  /** `saves`: indexFile after an edit, and indexFile of the unchanged file, each repeat. */
  editedMs?: number[];
  unchangedMs?: number[];
  /** `saves`: indexFile of the unchanged file once its mtime is settled (older than the importer trusts). */
  settledMs?: number[];
}

function removeIndex(indexPath: string): void {
  for (const suffix of ['', '-wal', '-shm']) fs.rmSync(`${indexPath}${suffix}`, { force: true });
}

async function measured(work: () => Promise<Partial<WorkResult>>): Promise<WorkResult> {
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const produced = await work();
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  return { ...produced, wallMs, cpuMs: (cpu.user + cpu.system) / 1000, peakRssMb: process.resourceUsage().maxRSS / 1024 };
}

async function run(work: WorkName, root: string, arg: string | undefined): Promise<WorkResult> {
  const campaign = loadCampaign(root);
  switch (work) {
    // The anchor: plain remark-parse (no GFM, no front matter, no chunking, no SQLite) on one thread,
    // over the same files the import scans, read from disk as the import reads them.
    case 'remark': {
      const files = await scanCampaign(campaign);
      const markdown = unified().use(remarkParse);
      return measured(async () => {
        for (const file of files) markdown.parse(await fs.promises.readFile(file.absPath, 'utf8'));
        return { files: files.length };
      });
    }
    // The product's full import from an empty index; `arg` is the number of parse workers (0: in-thread).
    case 'import': {
      removeIndex(campaign.indexPath);
      const workers = Number(arg ?? '2');
      // The built worker when there is one (what the extension ships), else the TypeScript source under tsx.
      const built = path.join(REPO_ROOT, 'dist', 'parse-worker.js');
      const parser: Parser = workers === 0 ? inThreadParser() : workerParser({ size: workers, ...(fs.existsSync(built) ? { workerPath: built } : {}) });
      const store = KnowledgeStore.open(campaign);
      try {
        return await measured(async () => {
          const report = await importCampaign(campaign, store, { parser });
          return { files: report.files.length, passages: report.passages };
        });
      } finally {
        store.close();
        await parser.close();
      }
    }
    // An in-memory engine indexing the same passages the product's index holds (built by an earlier `import`).
    case 'minisearch': {
      const store = KnowledgeStore.open(campaign);
      try {
        return await measured(async () => {
          const engine = new MiniSearch<{ id: number; heading: string; text: string }>({ fields: ['heading', 'text'] });
          const rows = store.db.prepare('SELECT rowid id, heading_path heading, text FROM passages').iterate() as Iterable<{ id: number; heading: string; text: string }>;
          let passages = 0;
          for (const row of rows) {
            engine.add(row);
            passages++;
          }
          return { passages };
        });
      } finally {
        store.close();
      }
    }
    // `indexFile` as a save runs it, on an index already built: `arg` is campaign-relative path,repeats.
    case 'saves': {
      const [relPath, repeatsText] = (arg ?? '').split(',');
      const repeats = Number(repeatsText);
      const file = `${root}/${relPath}`;
      const store = KnowledgeStore.open(campaign);
      try {
        return await measured(async () => {
          const editedMs: number[] = [];
          const unchangedMs: number[] = [];
          const settledMs: number[] = [];
          const past = new Date(Date.now() - 3_600_000);
          // Warm, as the extension's writer is after its first import: the parser's first call compiles it.
          fs.appendFileSync(file, '\nThe bench warms up.\n');
          await indexFile(campaign, store, relPath!);
          for (let i = 0; i < repeats; i++) {
            fs.appendFileSync(file, `\nThe bench saved this file, edit ${i}.\n`);
            let started = performance.now();
            await indexFile(campaign, store, relPath!);
            editedMs.push(performance.now() - started);
            started = performance.now();
            await indexFile(campaign, store, relPath!);
            unchangedMs.push(performance.now() - started);
            // As if saved minutes ago: one run reads it and records its stat, the next trusts that stat.
            fs.utimesSync(file, past, past);
            await indexFile(campaign, store, relPath!);
            started = performance.now();
            await indexFile(campaign, store, relPath!);
            settledMs.push(performance.now() - started);
          }
          return { editedMs, unchangedMs, settledMs };
        });
      } finally {
        store.close();
      }
    }
  }
}

if (require.main === module) {
  const [work, root, arg] = process.argv.slice(2) as [WorkName, string, string | undefined];
  run(work, root, arg).then(
    (result) => process.stdout.write(`${JSON.stringify(result)}\n`),
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
