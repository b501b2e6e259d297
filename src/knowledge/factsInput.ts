import YAML, { isMap, isScalar, isSeq, LineCounter, type Node } from 'yaml';
import type { ConflictSourceInput } from './conflicts';
import type { FrontMatterFact } from './facts';
import type { KnowledgeClass } from './types';

/** What conflict detection needs to know about a source besides its text. */
export interface FactSourceMeta {
  sourceId?: string;
  title: string;
  class: KnowledgeClass;
  entities?: readonly string[];
  enabled?: boolean;
}

const FRONT_MATTER = /^---\r?\n([\s\S]*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|$)/;

function scalarText(node: unknown): string | undefined {
  if (isScalar(node) && node.value !== null && typeof node.value !== 'object') return String(node.value);
  if (isSeq(node) && node.items.every((i) => isScalar(i))) return node.items.map((i) => String((i as { value: unknown }).value)).join(', ');
  return undefined;
}

/** The entries of a front-matter `facts:` map, located (see facts.ts for what counts as a fact). */
function readFactsMap(frontMatter: string, firstLine: number, lines: string[]): { facts: FrontMatterFact[]; supersedes: string[] } {
  const counter = new LineCounter();
  const doc = YAML.parseDocument(frontMatter, { lineCounter: counter });
  const facts: FrontMatterFact[] = [];
  const supersedesNode = doc.get('supersedes', true) as Node | undefined;
  const supersedes = isSeq(supersedesNode)
    ? supersedesNode.items.map(scalarText).filter((s): s is string => !!s)
    : scalarText(supersedesNode)
      ? [scalarText(supersedesNode)!]
      : [];
  const map = doc.get('facts', true) as Node | undefined;
  if (!isMap(map)) return { facts, supersedes };
  const located = (keyNode: unknown, entity: string | undefined, attribute: string, value: string) => {
    const offset = isScalar(keyNode) && keyNode.range ? keyNode.range[0] : 0;
    const pos = counter.linePos(offset);
    const line = firstLine + pos.line - 1;
    const text = lines[line - 1] ?? '';
    facts.push({ entity, attribute, value, line, startColumn: pos.col - 1, endColumn: text.trimEnd().length, quote: text.trim() });
  };
  for (const pair of map.items) {
    const key = scalarText(pair.key);
    if (!key) continue;
    const value = scalarText(pair.value);
    if (value !== undefined) located(pair.key, undefined, key, value);
    else if (isMap(pair.value)) {
      for (const inner of pair.value.items) {
        const attribute = scalarText(inner.key);
        const innerValue = scalarText(inner.value);
        if (attribute && innerValue !== undefined) located(inner.key, key, attribute, innerValue);
      }
    }
  }
  return { facts, supersedes };
}

/** A source as conflict detection reads it, from the file's text as read. */
export function factSourceFromText(path: string, text: string, meta: FactSourceMeta): ConflictSourceInput {
  const match = FRONT_MATTER.exec(text);
  const lines = text.split(/\r?\n/);
  const { facts, supersedes } = match ? readFactsMap(match[1]!, 2, lines) : { facts: [], supersedes: [] };
  const bodyStartLine = match ? match[0].split(/\n/).length - (match[0].endsWith('\n') ? 1 : 0) + 1 : 1;
  return {
    sourceId: meta.sourceId ?? path,
    path,
    title: meta.title,
    class: meta.class,
    entities: meta.entities ?? [],
    enabled: meta.enabled ?? true,
    body: match ? text.slice(match[0].length) : text,
    bodyStartLine,
    frontMatterFacts: facts,
    supersedes,
  };
}
