// The floor of indexing and lexical search: what SQLite itself needs, with none of the product's work.
// Plain JavaScript run by plain `node` (no tsx, no bundle), a process of its own as the product's CLI is.
//
//   node bench/floor.mjs index <campaign> <db>   the campaign's .md/.txt files read, parsed by markdown-it,
//                                                cut at headings, inserted into one FTS5 table (porter
//                                                unicode61) in one transaction
//   node bench/floor.mjs search <db>             one query a line on stdin: its words OR-ed, FTS5 MATCH …
//                                                ORDER BY bm25 LIMIT 20 on <db>'s passages_fts (the product's
//                                                index or the floor's own); one JSON line out per query
//
// The last line on stdout is a JSON summary (files, passages, queries, peak RSS).
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import MarkdownIt from 'markdown-it';

const peakRssMb = () => process.resourceUsage().maxRSS / 1024;

function campaignFiles(root) {
  return fs
    .readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((rel) => /\.(md|txt)$/i.test(rel) && !rel.split(path.sep).includes('.storyteller'))
    .sort();
}

function index(root, dbPath) {
  for (const suffix of ['', '-wal', '-shm']) fs.rmSync(`${dbPath}${suffix}`, { force: true });
  const db = new Database(dbPath);
  db.pragma('journal_mode = WAL');
  db.exec("CREATE VIRTUAL TABLE passages_fts USING fts5 (heading, body, tokenize = 'porter unicode61 remove_diacritics 2')");
  const insert = db.prepare('INSERT INTO passages_fts (heading, body) VALUES (?, ?)');
  const md = new MarkdownIt();
  const files = campaignFiles(root);
  let passages = 0;
  db.transaction(() => {
    for (const rel of files) {
      const text = fs.readFileSync(path.join(root, rel), 'utf8');
      const lines = text.split('\n');
      const tokens = md.parse(text, {});
      // Cut at every heading: a passage is the lines from one heading to the next, under that heading.
      let heading = '';
      let start = 0;
      const cut = (end) => {
        const body = lines.slice(start, end).join('\n').trim();
        if (body) {
          insert.run(heading, body);
          passages++;
        }
      };
      for (let i = 0; i < tokens.length; i++) {
        const token = tokens[i];
        if (token.type !== 'heading_open' || !token.map) continue;
        cut(token.map[0]);
        heading = tokens[i + 1]?.content ?? '';
        start = token.map[1];
      }
      cut(lines.length);
    }
  })();
  db.close();
  return { files: files.length, passages };
}

/**
 * The floor's search on an open database: a line's words OR-ed, FTS5 bm25 top 20; the rowids found, or null
 * for a line with no words. The bench also calls it in its own process, beside the product's turn context.
 */
export function floorSearcher(db) {
  const query = db.prepare('SELECT rowid FROM passages_fts WHERE passages_fts MATCH ? ORDER BY bm25(passages_fts) LIMIT 20');
  return (line) => {
    const words = [...new Set(line.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])];
    return words.length === 0 ? null : query.all(words.map((w) => `"${w}"`).join(' OR ')).map((r) => r.rowid);
  };
}

async function search(dbPath) {
  const db = new Database(dbPath, { readonly: true });
  const searcher = floorSearcher(db);
  let queries = 0;
  for await (const line of readline.createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    const hits = searcher(line);
    if (hits === null) continue;
    process.stdout.write(`${JSON.stringify({ query: line, hits })}\n`);
    queries++;
  }
  db.close();
  return { queries };
}

// Run as a process, not when the bench imports floorSearcher (no top-level await: the bench requires this file).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [mode, ...args] = process.argv.slice(2);
  const running = mode === 'index' ? Promise.resolve(index(args[0], args[1])) : mode === 'search' ? search(args[0]) : Promise.resolve(undefined);
  void running.then((result) => {
    if (!result) {
      console.error('usage: node bench/floor.mjs index <campaign> <db> | search <db>');
      process.exitCode = 2;
    } else process.stdout.write(`${JSON.stringify({ ...result, peakRssMb: peakRssMb() })}\n`);
  });
}
