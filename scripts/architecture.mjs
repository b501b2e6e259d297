// The house rules of src/: imports only go down the layers, and no files import each other in a circle.
// eslint.config.mjs reads them for its `storyteller/layers` and `storyteller/no-cycles` rules, so
// `npm run lint` (and CI) fails on an upward import or a cycle; test/unit/architecture.test.ts checks the checker.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** Lowest first: a file may import its own layer or any below it, never one above. */
export const LAYERS = [
  { name: 'models', paths: ['src/models'] },
  { name: 'knowledge', paths: ['src/knowledge'] },
  { name: 'story', paths: ['src/story'] },
  { name: 'session', paths: ['src/session'] },
  { name: 'surfaces', paths: ['src/views', 'src/cli', 'src/extension.ts', 'webview-ui'] },
];

/** The layer (index into LAYERS) a file of the project at `root` belongs to, or undefined outside them all. */
export function layerOf(root, file) {
  const rel = path.relative(root, file).split(path.sep).join('/');
  return LAYERS.findIndex((layer) => layer.paths.some((p) => rel === p || rel.startsWith(`${p}/`)));
}

const SOURCE = /\.(ts|tsx|mts)$/;

/** The file a relative specifier names, as the bundler resolves it; undefined for a package or a missing file. */
export function resolveImport(importer, spec) {
  if (!spec.startsWith('.')) return undefined;
  const base = path.resolve(path.dirname(importer), spec);
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, path.join(base, 'index.ts'), path.join(base, 'index.tsx')]) {
    if (SOURCE.test(candidate) && fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

/** Every relative import of a source text (type-only and re-exports included: a type import is a dependency too). */
export function importsOf(file, text = fs.readFileSync(file, 'utf8')) {
  return ts
    .preProcessFile(text, true, true)
    .importedFiles.map((f) => resolveImport(file, f.fileName))
    .filter((target) => target !== undefined);
}

function sourceFiles(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(full);
    return SOURCE.test(entry.name) && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** The import graph of every file in the layers: file → the files it imports. */
export function importGraph(root) {
  const graph = new Map();
  for (const layer of LAYERS) {
    for (const p of layer.paths) {
      const full = path.join(root, p);
      const files = SOURCE.test(p) ? (fs.existsSync(full) ? [full] : []) : sourceFiles(full);
      for (const file of files) graph.set(file, importsOf(file));
    }
  }
  return graph;
}

/**
 * The circles of a graph: each set of two or more files that reach one another (strongly connected
 * components, Tarjan's algorithm), plus a file importing itself, each sorted by name.
 */
export function findCycles(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const cycles = [];
  let next = 0;
  const visit = (start) => {
    // Iterative, so a long chain of imports cannot overflow the stack.
    const work = [{ node: start, edges: graph.get(start) ?? [], i: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      if (frame.i < frame.edges.length) {
        const target = frame.edges[frame.i++];
        if (!graph.has(target)) continue;
        if (!index.has(target)) {
          index.set(target, next);
          low.set(target, next++);
          stack.push(target);
          onStack.add(target);
          work.push({ node: target, edges: graph.get(target) ?? [], i: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.node, Math.min(low.get(frame.node), index.get(target)));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node), low.get(frame.node)));
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const members = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        members.push(member);
      } while (member !== frame.node);
      if (members.length > 1 || (graph.get(frame.node) ?? []).includes(frame.node)) cycles.push(members.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return cycles;
}

/** Each import of the graph that runs up the layers: from a file to one in a higher layer. */
export function upwardImports(root, graph) {
  const found = [];
  for (const [from, targets] of graph) {
    for (const to of targets) {
      const a = layerOf(root, from);
      const b = layerOf(root, to);
      if (a >= 0 && b > a) found.push({ from, to, fromLayer: LAYERS[a].name, toLayer: LAYERS[b].name });
    }
  }
  return found;
}

/** Both house rules over the project at `root`, with paths relative to it. */
export function checkArchitecture(root) {
  const graph = importGraph(root);
  const rel = (file) => path.relative(root, file).split(path.sep).join('/');
  return {
    cycles: findCycles(graph).map((cycle) => cycle.map(rel)),
    upward: upwardImports(root, graph).map((u) => ({ ...u, from: rel(u.from), to: rel(u.to) })),
  };
}
