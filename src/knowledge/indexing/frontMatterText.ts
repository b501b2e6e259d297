import YAML, { isMap, isScalar, isSeq, LineCounter, type Node, type Scalar } from 'yaml';
import { FRONT_MATTER_KEYS } from '../campaign';

/**
 * Text a writer keeps in front matter (Torys' stories hold their whole adventure in `overview:` and
 * `chapters: [{title, content}]`): every descriptive value becomes text to index, at the file lines it is
 * written on, under a heading — the title of the map it sits in, else its key. The product's own fields
 * (class, notes, keys…) and other tools' kept data (`sillytavern:`) are settings, never story text.
 */

export interface FrontMatterText {
  /** The map's title or the key, then the markdown headings written in the value above this text. */
  headingPath: string[];
  text: string;
  startLine: number;
  endLine: number;
}

/** Keys whose value is text by name, whatever its length. */
const DESCRIPTIVE_KEYS = new Set(['description', 'summary', 'content', 'overview', 'synopsis', 'text', 'body']);
/** Any other value reads as prose from this many words: `layout: story` is a setting, a sentence is text. */
const PROSE_WORDS = 6;
const SETTINGS = new Set<string>(FRONT_MATTER_KEYS);
/** A map's own name, which heads the text inside it (a chapter's `title:`). */
const NAME_KEYS = ['title', 'name'];

function humanize(key: string): string {
  const words = key.replace(/[_-]+/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/**
 * The descriptive values of a front-matter block. `yamlText` is the text between the fences and
 * `firstLine` the file line it starts on. Invalid YAML gives nothing (the importer reports it).
 */
export function frontMatterText(yamlText: string, firstLine: number): FrontMatterText[] {
  const lines = new LineCounter();
  const doc = YAML.parseDocument(yamlText, { lineCounter: lines, uniqueKeys: false });
  if (doc.errors.length > 0 || !isMap(doc.contents)) return [];
  const out: FrontMatterText[] = [];
  const lineOf = (offset: number): number => firstLine + lines.linePos(offset).line - 1;

  const visit = (node: Node | null, key: string, heading: string | null): void => {
    if (isScalar(node)) {
      if (typeof node.value !== 'string' || !node.range) return;
      const value = node.value.trim();
      if (!value || (!DESCRIPTIVE_KEYS.has(key.toLowerCase()) && value.split(/\s+/).length < PROSE_WORDS)) return;
      out.push(...paragraphs(node as Scalar<string>, yamlText, lineOf, heading ?? humanize(key)));
    } else if (isMap(node)) {
      const named = node.items.find((p) => isScalar(p.key) && NAME_KEYS.includes(String(p.key.value)) && isScalar(p.value) && typeof p.value.value === 'string');
      const name = named && isScalar(named.value) ? String(named.value.value).trim() : null;
      for (const pair of node.items) {
        const childKey = isScalar(pair.key) ? String(pair.key.value) : '';
        if (pair === named) continue;
        visit(pair.value as Node | null, childKey, name || heading);
      }
    } else if (isSeq(node)) {
      for (const item of node.items) visit(item as Node | null, key, heading);
    }
  };
  for (const pair of doc.contents.items) {
    const key = isScalar(pair.key) ? String(pair.key.value) : '';
    if (SETTINGS.has(key)) continue;
    visit(pair.value as Node | null, key, null);
  }
  return out;
}

/** A paragraph that is one ATX heading line ("### The Farm"): Torys renders a chapter's content as markdown. */
const ATX_HEADING = /^(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$/;

/**
 * A value split at its paragraphs, each at its own lines when the written lines show the same paragraphs
 * (runs of non-blank lines), under the markdown headings among them; else the value whole, over all its lines.
 */
function paragraphs(node: Scalar<string>, yamlText: string, lineOf: (offset: number) => number, heading: string): FrontMatterText[] {
  const [start, end] = node.range!;
  const block = node.type === 'BLOCK_LITERAL' || node.type === 'BLOCK_FOLDED';
  // A block scalar's range begins at its `|` or `>` header; its text begins on the next line.
  const firstLine = lineOf(start) + (block ? 1 : 0);
  const lastLine = lineOf(Math.max(start, end - 1));
  const parts = node.value
    .split(node.type === 'BLOCK_LITERAL' ? /\n[ \t]*\n/ : /\n+/)
    .map((p) => p.trim())
    .filter(Boolean);
  const written = yamlText.slice(start, end).split('\n').slice(block ? 1 : 0);
  const runs: [number, number][] = [];
  written.forEach((line, i) => {
    if (line.trim() === '') return;
    const at = firstLine + i;
    const last = runs[runs.length - 1];
    if (last && last[1] === at - 1) last[1] = at;
    else runs.push([at, at]);
  });
  if (runs.length !== parts.length) return [{ headingPath: [heading], text: parts.join('\n\n'), startLine: firstLine, endLine: lastLine }];
  const trail: { depth: number; text: string }[] = [];
  const out: FrontMatterText[] = [];
  parts.forEach((text, i) => {
    const atx = ATX_HEADING.exec(text);
    if (!atx) {
      out.push({ headingPath: [heading, ...trail.map((h) => h.text)], text, startLine: runs[i]![0], endLine: runs[i]![1] });
      return;
    }
    // By depth, as the body's headings are: `#### Onion` after `### The Redtail` sits under it.
    const depth = atx[1]!.length;
    while (trail.length > 0 && trail[trail.length - 1]!.depth >= depth) trail.pop();
    trail.push({ depth, text: atx[2]! });
  });
  return out;
}
