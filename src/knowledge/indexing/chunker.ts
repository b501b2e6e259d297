import { createHash } from 'node:crypto';
import type { Nodes, Parent, PhrasingContent, Root, RootContent } from 'mdast';
import remarkFrontmatter from 'remark-frontmatter';
import remarkGfm from 'remark-gfm';
import remarkParse from 'remark-parse';
import { unified } from 'unified';
import { normalizeForIndex } from './indexText';
import { frontMatterText } from './frontMatterText';
import { estimateTokens } from '../campaign';
import type { DraftPassage } from '../campaign';

/** A heading boundary closes a passage only once it holds this many tokens. */
export const MIN_PASSAGE_TOKENS = 60;
/** No passage grows past this; a longer block is split at sentence boundaries. */
export const MAX_PASSAGE_TOKENS = 800;


export interface ParsedDocument {
  passages: DraftPassage[];
  /** Text of the first level-1 heading, a title candidate when front matter names none. */
  firstHeading: string | null;
}

export type DocumentKind = 'markdown' | 'text';

/** A piece of text with the file lines it came from: the unit the packer works in. */
interface Unit {
  text: string;
  startLine: number;
  endLine: number;
  tokens: number;
}

type Block = { kind: 'heading'; depth: number; text: string; line: number } | { kind: 'unit'; unit: Unit };

const markdown = unified().use(remarkParse).use(remarkFrontmatter, ['yaml', 'toml']).use(remarkGfm);

/**
 * Turns a whole source text (front matter included, byte-order mark removed) into passages whose line
 * ranges are lines of that text. Deterministic: the same text always gives the same passages.
 */
export function parseDocument(text: string, kind: DocumentKind): ParsedDocument {
  const blocks = kind === 'markdown' ? markdownBlocks(markdown.parse(text)) : plainTextBlocks(text);
  const firstHeading = blocks.find((b) => b.kind === 'heading' && b.depth === 1);
  return {
    passages: pack(blocks),
    firstHeading: firstHeading?.kind === 'heading' ? firstHeading.text : null,
  };
}

function unit(text: string, startLine: number, endLine: number): Unit {
  return { text, startLine, endLine, tokens: estimateTokens(text) };
}

function lines(node: Nodes): { start: number; end: number } {
  return { start: node.position?.start.line ?? 1, end: node.position?.end.line ?? node.position?.start.line ?? 1 };
}

/** Inline content as plain text: links keep their words (the URL stays behind), images become inert placeholders. */
function inlineText(nodes: readonly PhrasingContent[] | readonly Nodes[]): string {
  let out = '';
  for (const node of nodes) {
    switch (node.type) {
      case 'text':
      case 'inlineCode':
      case 'html':
        out += node.value;
        break;
      case 'break':
        out += '\n';
        break;
      case 'image':
      case 'imageReference':
        out += node.alt ? `[image: ${node.alt}]` : '[image]';
        break;
      case 'footnoteReference':
        out += `[^${node.label ?? node.identifier}]`;
        break;
      default:
        if ('children' in node) out += inlineText(node.children as Nodes[]);
    }
  }
  return out;
}

function markdownBlocks(root: Root): Block[] {
  const blocks: Block[] = [];
  const visit = (node: RootContent, prefix: string): void => {
    const { start, end } = lines(node);
    switch (node.type) {
      case 'yaml': {
        // The block's text starts on the line after its opening fence; paragraphs under one heading pack together.
        let heading: string | undefined;
        for (const part of frontMatterText(node.value, start + 1)) {
          if (part.heading !== heading) blocks.push({ kind: 'heading', depth: 1, text: (heading = part.heading), line: part.startLine });
          blocks.push({ kind: 'unit', unit: unit(part.text, part.startLine, part.endLine) });
        }
        return;
      }
      case 'toml' as string:
      case 'definition':
      case 'thematicBreak':
        return;
      case 'heading': {
        const text = inlineText(node.children).replace(/\s+/g, ' ').trim();
        if (text) blocks.push({ kind: 'heading', depth: node.depth, text, line: start });
        return;
      }
      case 'paragraph': {
        const text = inlineText(node.children).trim();
        if (text) blocks.push({ kind: 'unit', unit: unit(prefix + text, start, end) });
        return;
      }
      case 'code':
      case 'html': {
        if (node.value.trim()) blocks.push({ kind: 'unit', unit: unit(prefix + node.value, start, end) });
        return;
      }
      case 'blockquote':
      case 'footnoteDefinition':
        // Headings inside a quote still structure the document (the SRD's stat blocks), so recurse.
        for (const child of node.children) visit(child, prefix);
        return;
      case 'list': {
        // One list is one unit when it fits; a long list is split between its items.
        const items = node.children.map((item, i) => {
          const marker = node.ordered ? `${(node.start ?? 1) + i}. ` : '- ';
          const itemText = item.children.map((c) => blockText(c)).filter(Boolean).join('\n');
          return unit(prefix + marker + itemText, lines(item).start, lines(item).end);
        });
        pushJoined(blocks, items, start, end);
        return;
      }
      case 'table': {
        const rows = node.children.map((row) =>
          unit(prefix + `| ${row.children.map((cell) => inlineText(cell.children).trim()).join(' | ')} |`, lines(row).start, lines(row).end),
        );
        pushJoined(blocks, rows, start, end);
        return;
      }
      default: {
        const text = blockText(node);
        if (text) blocks.push({ kind: 'unit', unit: unit(prefix + text, start, end) });
      }
    }
  };
  for (const child of root.children) visit(child, '');
  return blocks;
}

/** Plain text of a nested block (inside a list item): structure flattened, headings kept as words. */
function blockText(node: Nodes): string {
  switch (node.type) {
    case 'code':
    case 'html':
    case 'text':
    case 'inlineCode':
      return node.value;
    case 'list':
      return node.children.map((item, i) => `${node.ordered ? `${(node.start ?? 1) + i}.` : '-'} ${blockText(item)}`).join('\n');
    case 'paragraph':
    case 'heading':
    case 'tableCell':
      return inlineText(node.children).trim();
    case 'image':
    case 'imageReference':
    case 'link':
    case 'linkReference':
      return inlineText([node]);
    default:
      return 'children' in node ? (node as Parent).children.map((c) => blockText(c as Nodes)).filter(Boolean).join('\n') : '';
  }
}

function pushJoined(blocks: Block[], parts: Unit[], start: number, end: number): void {
  const tokens = parts.reduce((sum, p) => sum + p.tokens, 0);
  if (tokens <= MAX_PASSAGE_TOKENS) {
    if (parts.length > 0) blocks.push({ kind: 'unit', unit: unit(parts.map((p) => p.text).join('\n'), start, end) });
  } else {
    for (const part of parts) blocks.push({ kind: 'unit', unit: part });
  }
}

/** A .txt source: paragraphs separated by blank lines, no markup interpreted. */
function plainTextBlocks(text: string): Block[] {
  const blocks: Block[] = [];
  const all = text.split(/\r?\n/);
  let paragraph: string[] = [];
  let startLine = 1;
  const flush = (endLine: number): void => {
    const joined = paragraph.join('\n').trim();
    if (joined) blocks.push({ kind: 'unit', unit: unit(joined, startLine, endLine) });
    paragraph = [];
  };
  all.forEach((line, i) => {
    if (line.trim() === '') {
      flush(i);
      startLine = i + 2;
    } else {
      paragraph.push(line);
    }
  });
  flush(all.length);
  return blocks;
}

const SENTENCE_END = /(?<=[.!?…]["'”’)\]]*)\s+(?=\S)/g;

/** Splits an oversize unit into pieces under the ceiling: at sentences, then words, then characters. */
function splitUnit(big: Unit): Unit[] {
  const pieces: Unit[] = [];
  const lineAt = (offset: number): number => big.startLine + countNewlines(big.text, offset);
  let pieceStart = 0;
  let pieceEnd = 0;
  const emit = (): void => {
    const raw = big.text.slice(pieceStart, pieceEnd);
    const text = raw.trim();
    if (text) pieces.push(unit(text, lineAt(pieceStart), Math.min(big.endLine, lineAt(pieceEnd))));
    pieceStart = pieceEnd;
  };
  for (const [start, end] of boundaries(big.text)) {
    if (end - pieceStart > 0 && estimateTokens(big.text.slice(pieceStart, end)) > MAX_PASSAGE_TOKENS && pieceEnd > pieceStart) emit();
    if (estimateTokens(big.text.slice(start, end)) > MAX_PASSAGE_TOKENS) {
      // A single sentence over the ceiling: cut it by words, or by characters when it has no spaces.
      pieceStart = start;
      for (const cut of hardCuts(big.text, start, end)) {
        pieceEnd = cut;
        emit();
      }
      continue;
    }
    pieceEnd = end;
  }
  if (pieceEnd > pieceStart) emit();
  return pieces;
}

/** [start, end) offsets of each sentence, the trailing whitespace belonging to the sentence before it. */
function* boundaries(text: string): Generator<[number, number]> {
  let start = 0;
  for (const match of text.matchAll(SENTENCE_END)) {
    const end = match.index + match[0].length;
    yield [start, end];
    start = end;
  }
  if (start < text.length) yield [start, text.length];
}

function* hardCuts(text: string, start: number, end: number): Generator<number> {
  const maxChars = MAX_PASSAGE_TOKENS * 4;
  let position = start;
  while (position < end) {
    let cut = Math.min(end, position + maxChars);
    if (cut < end) {
      const space = text.lastIndexOf(' ', cut);
      if (space > position) cut = space + 1;
    }
    // Words may be short enough that the word count, not the length, passes the ceiling.
    while (cut - position > 1 && estimateTokens(text.slice(position, cut)) > MAX_PASSAGE_TOKENS) {
      const space = text.lastIndexOf(' ', cut - 2);
      cut = space > position ? space + 1 : position + Math.floor((cut - position) / 2);
    }
    yield cut;
    position = cut;
  }
}

function countNewlines(text: string, until: number): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < until; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/**
 * Heading-aware packing: units accumulate under the current heading trail; a heading closes the
 * passage once it has MIN_PASSAGE_TOKENS, otherwise the heading is written into the text and packing goes
 * on. Nothing overlaps, and no passage passes MAX_PASSAGE_TOKENS.
 */
function pack(blocks: Block[]): DraftPassage[] {
  const passages: DraftPassage[] = [];
  const trail: { depth: number; text: string }[] = [];
  let parts: string[] = [];
  let startLine = 0;
  let endLine = 0;
  let passageTrail: string[] = [];
  const hasContent = (): boolean => parts.length > 0;
  // Measured on the joined text, exactly as the passage's token count will be.
  const joinedTokens = (extra?: string): number => estimateTokens(extra === undefined ? parts.join('\n\n') : `${parts.join('\n\n')}\n\n${extra}`);

  const close = (): void => {
    if (!hasContent()) return;
    const text = parts.join('\n\n');
    passages.push({
      headingPath: passageTrail,
      text,
      tokenCount: estimateTokens(text),
      contentHash: createHash('sha256').update(normalizeForIndex(text)).digest('hex'),
      startLine,
      endLine,
    });
    parts = [];
  };
  const add = (text: string, from: number, to: number): void => {
    if (!hasContent()) {
      passageTrail = trail.map((h) => h.text);
      startLine = from;
      endLine = to;
    }
    parts.push(text);
    endLine = Math.max(endLine, to);
  };

  for (const block of blocks) {
    if (block.kind === 'heading') {
      if (hasContent() && joinedTokens() >= MIN_PASSAGE_TOKENS) close();
      // By depth, not by count: a file whose headings start at `##`, or that skips a level, must not
      // keep an earlier sibling in the trail.
      while (trail.length > 0 && trail[trail.length - 1]!.depth >= block.depth) trail.pop();
      trail.push({ depth: block.depth, text: block.text });
      if (hasContent()) {
        const written = `${'#'.repeat(block.depth)} ${block.text}`;
        if (joinedTokens(written) > MAX_PASSAGE_TOKENS) close();
        else add(written, block.line, block.line);
      }
      continue;
    }
    for (const piece of block.unit.tokens > MAX_PASSAGE_TOKENS ? splitUnit(block.unit) : [block.unit]) {
      // Joining adds separators, so check the joined text, not the sum, against the ceiling.
      if (hasContent() && joinedTokens(piece.text) > MAX_PASSAGE_TOKENS) close();
      add(piece.text, piece.startLine, piece.endLine);
    }
  }
  close();
  return passages;
}
