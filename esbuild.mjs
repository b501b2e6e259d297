// One build for every bundle: extension host, CLI, parse worker (Node, CommonJS) and the webview (browser).
import * as esbuild from 'esbuild';
import fs from 'node:fs/promises';
import path from 'node:path';

const watch = process.argv.includes('--watch');
const production = process.argv.includes('--production');
// `npm run package` builds its production bundles apart, so the checkout's dist/ (what tests and `npm start` run) stays as it was.
const outdir = process.argv.find((arg) => arg.startsWith('--outdir='))?.slice('--outdir='.length) ?? 'dist';
// `npm pack` (prepack) builds only what the CLI's tarball ships, in production, then (postpack) the dev ones again.
const cliOnly = process.argv.includes('--cli');
const CLI_BUNDLES = ['cli', 'cli-run', 'parse-worker'];

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
// only the words used at least minCount times in 51 million, summed by stem: the 74,000-word list (3.6 MB)
// ships as what everydayStems() makes of it, worked out here by that very function (bundled and run once
// per build), so the shipped code never stems 27,600 words on its first question.
const EVERYDAY_STEMS = new URL('./src/knowledge/retrieval/everydayStems.ts', import.meta.url).pathname;
let everydayStemsJson;
async function workOutEverydayStems() {
  const { outputFiles } = await esbuild.build({ entryPoints: [EVERYDAY_STEMS], bundle: true, platform: 'node', format: 'cjs', write: false, logLevel: 'silent' });
  const module = { exports: {} };
  new Function('module', 'exports', outputFiles[0].text)(module, module.exports);
  return JSON.stringify(module.exports.everydayStems());
}
const everydayStemsPrebuilt = {
  name: 'everyday-stems-prebuilt',
  setup(build) {
    build.onLoad({ filter: /everydayStems\.ts$/ }, async () => {
      everydayStemsJson ??= await workOutEverydayStems();
      // One string for JSON.parse, not an array literal: V8 scans a string at load in a fraction of the time.
      return { contents: `export function everydayStems() { return JSON.parse(${JSON.stringify(everydayStemsJson)}); }`, loader: 'js' };
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

// The extension host compiles all of dist/extension.js before activate runs, and the OpenAI client library is a
// quarter of it (1.1 MB), needed only once a server is asked something: the extension requires it from its own
// bundle (dist/openai.js) on that first use (src/models/openaiClient.ts already imports it lazily).
const openAIInItsOwnBundle = {
  name: 'openai-in-its-own-bundle',
  setup(build) {
    build.onResolve({ filter: /^openai$/ }, () => ({ path: 'openai', namespace: 'openai-bundle' }));
    build.onLoad({ filter: /.*/, namespace: 'openai-bundle' }, () => ({ contents: "module.exports = require('./openai.js');", loader: 'js' }));
    build.onResolve({ filter: /^\.\/openai\.js$/, namespace: 'openai-bundle' }, (args) => ({ path: args.path, external: true }));
  },
};

// V8 keeps a script's source as one string, two bytes a character if any character is outside Latin-1: the
// few curly quotes and dashes left in regular expressions and comments (esbuild's ASCII output escapes only
// strings) doubled every bundle's source in memory (the CLI's search idle 95 -> 88 MB without them). A \u escape
// means the same in a comment, a string, a template's cooked text and a regular expression, with or without `u`.
// Only a tagged template's raw text would change, and none in src/ holds such a character.
const asciiOnlyOutput = {
  name: 'ascii-only-output',
  setup(build) {
    build.onEnd(async (result) => {
      for (const file of Object.keys(result.metafile?.outputs ?? {}).filter((f) => f.endsWith('.js'))) {
        const text = await fs.readFile(file, 'utf8');
        // An odd run of backslashes before the character escapes it (`\’` is `’`): the escape replaces that one.
        const ascii = text.replace(/(\\*)([\u0080-\uffff])/g, (_, slashes, c) => `${slashes.slice(slashes.length % 2)}\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
        if (ascii !== text) await fs.writeFile(file, ascii);
      }
    });
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
  metafile: true,
  plugins: [coreStaysVscodeFree, everydayStemsPrebuilt, asciiOnlyOutput],
  logLevel: 'info',
};

const builds = [
  { ...node, entryPoints: { extension: 'src/extension.ts' }, outdir, plugins: [...node.plugins, openAIInItsOwnBundle] },
  { ...node, entryPoints: { openai: 'openai' }, outdir },
  { ...node, entryPoints: { cli: 'src/cli/main.ts' }, outdir, banner: { js: '#!/usr/bin/env node' }, plugins: [...node.plugins, commandsInTheirOwnBundle] },
  { ...node, entryPoints: { 'cli-run': 'src/cli/run.ts' }, outdir },
  { ...node, entryPoints: { 'parse-worker': 'src/knowledge/indexing/parseWorker.ts' }, outdir },
  { ...node, entryPoints: { 'index-worker': 'src/knowledge/indexing/indexWorker.ts' }, outdir },
  {
    bundle: true,
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
    sourcemap: !production,
    minify: production,
    // The play panel, the Campaign Graph (with its layout library, d3-force) and the Adventure Map each load only their own script.
    entryPoints: { webview: 'webview-ui/main.ts', graph: 'webview-ui/graph/main.ts', map: 'webview-ui/map/main.ts' },
    outdir,
    metafile: true,
    plugins: [asciiOnlyOutput],
    logLevel: 'info',
  },
];

const chosen = cliOnly ? builds.filter((options) => Object.keys(options.entryPoints).every((name) => CLI_BUNDLES.includes(name))) : builds;
if (watch) {
  for (const options of chosen) await (await esbuild.context(options)).watch();
} else {
  await Promise.all(chosen.map((options) => esbuild.build(options)));
}
