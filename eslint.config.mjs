import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';
import path from 'node:path';

const KNOWLEDGE = path.resolve('src/knowledge');

/** The knowledge room (src/knowledge/<room>/) a path lies in, or undefined outside every room. */
function roomOf(file) {
  const rel = path.relative(KNOWLEDGE, file);
  if (rel.startsWith('..') || path.isAbsolute(rel) || !rel.includes(path.sep)) return undefined;
  return rel.split(path.sep)[0];
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
      if (!room || roomOf(importer) === room) return;
      if (path.relative(path.join(KNOWLEDGE, room), target) === '') return;
      const entry = path.relative(path.dirname(importer), path.join(KNOWLEDGE, room));
      context.report({ node: node.source, messageId: 'deep', data: { spec, room, entry: entry.startsWith('.') ? entry : `./${entry}` } });
    };
    return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check };
  },
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.cache/**', '.e2e/**', 'artifacts/**'] },
  js.configs.recommended,
  { files: ['**/*.mjs', '**/*.js'], languageOptions: { globals: globals.node } },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/**/*.ts'],
    plugins: { storyteller: { rules: { 'room-entries': roomEntries } } },
    rules: { 'storyteller/room-entries': 'error' },
  },
  {
    files: ['src/knowledge/**/*.ts', 'src/story/**/*.ts', 'src/session/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: [{ name: 'vscode', message: 'src/knowledge, src/story and src/session stay vscode-free.' }] }],
    },
  },
);
