import YAML, { isMap, isScalar, isSeq, LineCounter, type Node } from 'yaml';
import type { ConflictSourceInput } from './conflicts';
import type { FrontMatterFact } from './facts';
import { splitFrontMatter, type FrontMatterSplit } from '../campaign';
import type { SourceRecord } from '../campaign';

/** What conflict detection needs to know about a source besides its text (a SourceRecord has all of it). */
export type FactSourceMeta = Pick<SourceRecord, 'title' | 'class'> & Partial<Pick<SourceRecord, 'id' | 'entities' | 'enabled'>>;

function scalarText(node: unknown): string | undefined {
  if (isScalar(node) && node.value !== null && typeof node.value !== 'object') return String(node.value);
  if (isSeq(node) && node.items.length > 0 && node.items.every((i) => isScalar(i))) {
    return node.items.map((i) => String((i as { value: unknown }).value)).join(', ');
  }
  return undefined;
}

/**
 * The entries of a validated front-matter `facts:` map, each located at its key's line. The front-matter
 * parser has already split and validated the block; this only reads where each fact sits.
 */
function locateFrontMatterFacts(text: string, split: FrontMatterSplit): FrontMatterFact[] {
  if (!split.present || !split.meta.facts) return [];
  const lines = text.split(/\r?\n/);
  // Lines 2 .. bodyStartLine-2 hold the YAML between the fences.
  const yamlText = lines.slice(1, split.bodyStartLine - 2).join('\n');
  const counter = new LineCounter();
  const map = YAML.parseDocument(yamlText, { lineCounter: counter }).get('facts', true) as Node | undefined;
  if (!isMap(map)) return [];
  const facts: FrontMatterFact[] = [];
  const add = (keyNode: unknown, entity: string | undefined, attribute: string, value: string) => {
    const pos = counter.linePos(isScalar(keyNode) && keyNode.range ? keyNode.range[0] : 0);
    const line = pos.line + 1;
    const lineText = lines[line - 1] ?? '';
    facts.push({ entity, attribute, value, line, startColumn: pos.col - 1, endColumn: lineText.trimEnd().length, quote: lineText.trim() });
  };
  for (const pair of map.items) {
    const key = scalarText(pair.key);
    if (!key) continue;
    const value = scalarText(pair.value);
    if (value !== undefined) add(pair.key, undefined, key, value);
    else if (isMap(pair.value)) {
      for (const inner of pair.value.items) {
        const attribute = scalarText(inner.key);
        const innerValue = scalarText(inner.value);
        if (attribute && innerValue !== undefined) add(inner.key, key, attribute, innerValue);
      }
    }
  }
  return facts;
}

/** A source as conflict detection reads it, from its text and the importer's front-matter split. */
export function factSourceFromSplit(path: string, text: string, split: FrontMatterSplit, meta: FactSourceMeta): ConflictSourceInput {
  return {
    sourceId: meta.id ?? path,
    path,
    title: meta.title,
    class: meta.class,
    entities: meta.entities ?? split.meta.entities ?? [],
    enabled: meta.enabled ?? true,
    body: split.body,
    bodyStartLine: split.bodyStartLine,
    frontMatterFacts: locateFrontMatterFacts(text, split),
    supersedes: split.meta.supersedes ?? [],
  };
}

/** For files not (yet) in an index: title and entities fall back to the file's own front matter. */
export function factSourceFromText(path: string, text: string, meta: Partial<FactSourceMeta> & Pick<FactSourceMeta, 'class'>): ConflictSourceInput {
  const split = splitFrontMatter(text);
  const title = meta.title ?? split.meta.title ?? path.replace(/^.*\//, '').replace(/\.[^.]+$/, '');
  return factSourceFromSplit(path, text, split, { ...meta, title });
}
