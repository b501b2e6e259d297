import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';
import path from 'node:path';
import { LAYERS, findCycles, importGraph, layerOf, resolveImport } from './scripts/architecture.mjs';

const ROOT = path.resolve('.');
const KNOWLEDGE = path.resolve('src/knowledge');
const MODELS = path.resolve('src/models');

/** The room a path lies in (each src/knowledge/<room>/, and src/models/ as one room) with its folder, or undefined outside every room. */
function roomOf(file) {
  const inModels = path.relative(MODELS, file);
  if (!inModels.startsWith('..') && !path.isAbsolute(inModels)) return { name: 'models', dir: MODELS };
  const rel = path.relative(KNOWLEDGE, file);
  if (rel.startsWith('..') || path.isAbsolute(rel) || !rel.includes(path.sep)) return undefined;
  const name = rel.split(path.sep)[0];
  return { name, dir: path.join(KNOWLEDGE, name) };
}

/** Rooms meet only at their entry files: code outside a room imports `<room>/index`, never a file inside. */
const roomEntries = {
  meta: { type: 'problem', messages: { deep: "'{{spec}}' reaches inside the {{room}} room; import its entry file '{{entry}}' instead." } },
  create(context) {
    const check = (node) => {
      const spec = node.source?.value;
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const importer = context.filename;
      const target = path.resolve(path.dirname(importer), spec);
      const room = roomOf(target);
      if (!room || roomOf(importer)?.name === room.name) return;
      if (path.relative(room.dir, target) === '') return;
      const entry = path.relative(path.dirname(importer), room.dir).split(path.sep).join('/');
      context.report({ node: node.source, messageId: 'deep', data: { spec, room: room.name, entry: entry.startsWith('.') ? entry : `./${entry}` } });
    };
    return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check, ImportExpression: check };
  },
};

/** Imports only go down: views/cli/extension → session → story → knowledge → models (scripts/architecture.mjs). */
const layers = {
  meta: {
    type: 'problem',
    messages: { up: "'{{spec}}' runs up the layers: {{from}} may not import {{to}} (imports go down: {{order}})." },
  },
  create(context) {
    const check = (node) => {
      const spec = node.source?.value;
      if (typeof spec !== 'string') return;
      const target = resolveImport(context.filename, spec);
      if (!target) return;
      const from = layerOf(ROOT, context.filename);
      const to = layerOf(ROOT, target);
      if (from < 0 || to <= from) return;
      const order = [...LAYERS].reverse().map((l) => l.name).join(' → ');
      context.report({ node: node.source, messageId: 'up', data: { spec, from: LAYERS[from].name, to: LAYERS[to].name, order } });
    };
    return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check, ImportExpression: check };
  },
};

/**
 * No files import each other in a circle. The whole graph is read from disk, at most every two seconds
 * (once for `npm run lint`; an editor's long-lived linter sees edits after a moment).
 */
let cycleCache;
function cycleOf() {
  if (!cycleCache || Date.now() - cycleCache.at > 2000) {
    const byFile = new Map();
    for (const cycle of findCycles(importGraph(ROOT))) for (const file of cycle) byFile.set(file, cycle);
    cycleCache = { at: Date.now(), byFile };
  }
  return cycleCache.byFile;
}

const noCycles = {
  meta: { type: 'problem', messages: { circle: "'{{spec}}' closes a circle of imports: {{files}}. Move what they share into a file both import." } },
  create(context) {
    const check = (node) => {
      const spec = node.source?.value;
      if (typeof spec !== 'string') return;
      const target = resolveImport(context.filename, spec);
      const cycle = target && cycleOf().get(path.resolve(context.filename));
      if (!cycle || !cycle.includes(target)) return;
      const files = cycle.map((f) => path.relative(ROOT, f).split(path.sep).join('/')).join(', ');
      context.report({ node: node.source, messageId: 'circle', data: { spec, files } });
    };
    return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check, ImportExpression: check };
  },
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.cache/**', '.e2e/**', 'artifacts/**', '.package/**'] },
  js.configs.recommended,
  { files: ['**/*.mjs', '**/*.js'], languageOptions: { globals: globals.node } },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/**/*.ts', 'webview-ui/**/*.ts', 'webview-ui/**/*.tsx'],
    plugins: { storyteller: { rules: { 'room-entries': roomEntries, layers, 'no-cycles': noCycles } } },
    rules: { 'storyteller/room-entries': 'error', 'storyteller/layers': 'error', 'storyteller/no-cycles': 'error' },
  },
  {
    files: ['src/models/**/*.ts', 'src/knowledge/**/*.ts', 'src/story/**/*.ts', 'src/session/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: [{ name: 'vscode', message: 'src/models, src/knowledge, src/story and src/session stay vscode-free.' }] }],
    },
  },
);
