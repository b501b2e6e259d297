import { createHash } from 'node:crypto';
import MarkdownIt, { type StateBlock, type Token } from 'markdown-it';
import { normalizeForIndex } from './indexText';
import { frontMatterText } from './frontMatterText';
import { countWords, frontMatterBlock, tokensFor } from '../campaign';
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

/**
 * A passage's name in a list: the heading it opens with when it runs through several sections (written
 * first in its text, see pack), else the last heading of its trail.
 */
export function passageLabel(passage: Pick<DraftPassage, 'headingPath' | 'text'>): string {
  const opening = /^#{1,6} (.+)\n/.exec(passage.text)?.[1];
  return opening ?? passage.headingPath.at(-1) ?? '(before the first heading)';
}

/** A piece of text with the file lines it came from: the unit the packer works in. */
interface Unit {
  text: string;
  startLine: number;
  endLine: number;
  words: number;
  tokens: number;
}

interface Heading {
  depth: number;
  text: string;
  line: number;
}

/**
 * `body`: where the front matter's text ends and the body's begins. The body's text before its first heading
 * is the page's own (a character's main paragraph), not one more paragraph of the last front-matter field.
 */
type Block = ({ kind: 'heading' } & Heading) | { kind: 'unit'; unit: Unit } | { kind: 'body' };

/**
 * Containers (quotes, lists) nested this deep are far past anything written by hand, and still far from
 * the stack's limit. markdown-it drops whatever lies deeper, so a file that reaches it is indexed as
 * plain paragraphs instead: every word kept.
 */
const MAX_NESTING = 1000;

/**
 * CommonMark with GFM tables and strikethrough. HTML is recognised only so that its blocks end where
 * CommonMark says; the chunker keeps it as inert text and nothing is ever rendered. No linkify, no
 * typographer: the text stays as written.
 */
function createMarkdownIt(): MarkdownIt {
  const parser = new MarkdownIt('default', { html: true });
  // A preset option markdown-it reads (`options.maxNesting`) that its type declarations leave out.
  Object.assign(parser.options, { maxNesting: MAX_NESTING });
  parser.block.ruler.before('reference', 'footnote_definition', footnoteDefinition);
  // Inline content is parsed when the chunker reads it (TokenReader.inlineText), and only when it holds markup;
  // the pass joining inline text would find nothing parsed (inlineText reads escaped characters as text).
  parser.core.ruler.disable(['inline', 'text_join']);
  return parser;
}

// Made on the first parse, not at load: the extension host indexes (and parses) in its index worker, so its activation never needs one.
let sharedMarkdownIt: MarkdownIt | undefined;
function markdownIt(): MarkdownIt {
  sharedMarkdownIt ??= createMarkdownIt();
  return sharedMarkdownIt;
}

/**
 * `[^1]: Ibid.` is a footnote, which CommonMark alone would take for a link definition and drop: it is
 * kept as a paragraph (up to the next blank line), label included, so its words are indexed.
 */
function footnoteDefinition(state: StateBlock, startLine: number, endLine: number, silent: boolean): boolean {
  const start = state.bMarks[startLine]! + state.tShift[startLine]!;
  if (state.sCount[startLine]! - state.blkIndent >= 4 || !/^\[\^[^\]\s]+\]:/.test(state.src.slice(start, state.eMarks[startLine]))) return false;
  if (silent) return true;
  let next = startLine + 1;
  while (next < endLine && !state.isEmpty(next) && state.sCount[next]! >= state.blkIndent) next++;
  state.push('paragraph_open', 'p', 1).map = [startLine, next];
  const inline = state.push('inline', '', 0);
  inline.content = state.getLines(startLine, next, state.blkIndent, false).trim();
  inline.map = [startLine, next];
  state.push('paragraph_close', 'p', -1);
  state.line = next;
  return true;
}

/**
 * Turns a whole source text (front matter included, byte-order mark removed) into passages whose line
 * ranges are lines of that text. Deterministic: the same text always gives the same passages.
 */
export function parseDocument(text: string, kind: DocumentKind): ParsedDocument {
  const blocks = kind === 'markdown' ? markdownBlocks(text) : plainTextBlocks(text);
  const firstHeading = blocks.find((b) => b.kind === 'heading' && b.depth === 1);
  return {
    passages: pack(blocks),
    firstHeading: firstHeading?.kind === 'heading' ? firstHeading.text : null,
  };
}

function unit(text: string, startLine: number, endLine: number): Unit {
  const words = countWords(text);
  return { text, startLine, endLine, words, tokens: tokensFor(words, text.length) };
}

/**
 * Inline content as plain text: links keep their words (the URL stays behind), images become inert
 * placeholders, an escaped or entity character (`text_special`) is the character it stands for.
 */
function inlineText(tokens: readonly Token[] | null): string {
  let out = '';
  for (const token of tokens ?? []) {
    switch (token.type) {
      case 'text':
      case 'text_special':
      case 'code_inline':
      case 'html_inline':
        out += token.content;
        break;
      case 'softbreak':
      case 'hardbreak':
        out += '\n';
        break;
      case 'image': {
        const alt = inlineText(token.children);
        out += alt ? `[image: ${alt}]` : '[image]';
        break;
      }
      // Emphasis, strikethrough and link markers carry no words.
    }
  }
  return out;
}

/** Code and HTML as written, without the line break markdown-it ends them with. */
function literal(token: Token): string {
  return token.content.endsWith('\n') ? token.content.slice(0, -1) : token.content;
}

/** What starts inline markup under this parser's options (no linkify, no typographer): code, emphasis, strikethrough, links and images, HTML and autolinks, escapes, entities. */
const INLINE_MARKUP = /[`*_~[\]<\\&]/;
/** A line break inside inline content, with the spaces before it and the spaces and tabs after it, as markdown-it's newline rule drops them. */
const LINE_BREAK = / *\n[ \t]*/g;

/**
 * A parsed token stream read front to back: `at` is the next token. Line numbers are the file's: the body
 * starts `lineOffset` lines into it (after the front matter).
 */
class TokenReader {
  at = 0;
  /** Offsets where each line of the body starts, counted once a table asks for a line's text. */
  private lineStarts: number[] | undefined;

  constructor(
    readonly body: string,
    readonly tokens: readonly Token[],
    readonly lineOffset: number,
    /** The parse's environment: the link reference definitions inline content may use. */
    private readonly env: object,
  ) {}

  /**
   * An `inline` token's content as plain text. Much prose holds no inline markup (half the SRD's text): its
   * text is what markdown-it's inline pass would give (each line break a break, the spaces around it
   * dropped), without running it. The rest is parsed as that pass would.
   */
  inlineText(token: Token): string {
    if (!INLINE_MARKUP.test(token.content)) return token.content.replace(LINE_BREAK, '\n');
    const children: Token[] = [];
    const parser = markdownIt();
    parser.inline.parse(token.content, parser, this.env, children);
    return inlineText(children);
  }

  /** The text of a body line as written (0-based, as in `map`), for the rare reader that needs the source. */
  bodyLine(index: number): string {
    if (!this.lineStarts) {
      this.lineStarts = [0];
      // markdown-it counts a bare CR as a line break too.
      for (const match of this.body.matchAll(/\r\n?|\n/g)) this.lineStarts.push(match.index + match[0].length);
    }
    const start = this.lineStarts[index] ?? this.body.length;
    const end = this.lineStarts[index + 1] ?? this.body.length;
    return this.body.slice(start, end).replace(/[\r\n]+$/, '');
  }

  get next(): Token | undefined {
    return this.tokens[this.at];
  }

  /** The file line a block token starts on. */
  startLine(token: Token): number {
    return (token.map?.[0] ?? 0) + 1 + this.lineOffset;
  }

  /** The last file line of a leaf block (paragraph, heading, code, HTML, table row). */
  lastLine(token: Token): number {
    return Math.max(this.startLine(token), (token.map?.[1] ?? 0) + this.lineOffset);
  }

  /** Skips past the close of the container whose open token was just taken. */
  skipContainer(): void {
    for (let depth = 1; depth > 0; this.at++) depth += this.tokens[this.at]!.nesting;
  }
}

function markdownBlocks(text: string): Block[] {
  const blocks: Block[] = [];
  const front = frontMatterBlock(text);
  if (front) {
    // The YAML starts on line 2, after the opening fence; paragraphs under one heading pack together.
    let trail: string[] = [];
    for (const part of frontMatterText(front.yamlText, 2)) {
      // A heading for each level from the first that changed, its depth its place in the trail; a shorter
      // trail (text after a sub-heading's value, under the chapter again) opens its last level anew.
      const changed = part.headingPath.findIndex((text, i) => text !== trail[i]);
      const start = changed !== -1 ? changed : part.headingPath.length < trail.length ? part.headingPath.length - 1 : -1;
      if (start !== -1) part.headingPath.slice(start).forEach((text, i) => blocks.push({ kind: 'heading', depth: start + i + 1, text, line: part.startLine }));
      trail = part.headingPath;
      blocks.push({ kind: 'unit', unit: unit(part.text, part.startLine, part.endLine) });
    }
    blocks.push({ kind: 'body' });
  }
  const body = front ? text.slice(front.bodyStart) : text;
  const lineOffset = front ? front.bodyStartLine - 1 : 0;
  const env = {};
  const tokens = markdownIt().parse(body, env);
  if (tokens.some((t) => t.nesting === 1 && t.level >= MAX_NESTING - 1)) return [...blocks, ...plainTextBlocks(body, lineOffset + 1)];
  const reader = new TokenReader(body, tokens, lineOffset, env);
  while (reader.next) topLevelBlock(reader, blocks);
  return blocks;
}

/** One block of the document (or of a blockquote, whose headings still structure it: the SRD's stat blocks). */
function topLevelBlock(reader: TokenReader, blocks: Block[]): void {
  const token = reader.tokens[reader.at++]!;
  switch (token.type) {
    case 'heading_open': {
      const text = reader.inlineText(reader.tokens[reader.at]!).replace(/\s+/g, ' ').trim();
      if (text) blocks.push({ kind: 'heading', depth: Number(token.tag.slice(1)), text, line: reader.startLine(token) });
      reader.skipContainer();
      return;
    }
    case 'paragraph_open': {
      const text = reader.inlineText(reader.tokens[reader.at]!).trim();
      if (text) blocks.push({ kind: 'unit', unit: unit(text, reader.startLine(token), reader.lastLine(token)) });
      reader.skipContainer();
      return;
    }
    case 'fence':
    case 'code_block':
    case 'html_block': {
      const value = literal(token);
      if (value.trim()) blocks.push({ kind: 'unit', unit: unit(value, reader.startLine(token), reader.lastLine(token)) });
      return;
    }
    case 'blockquote_open':
      while (reader.next!.type !== 'blockquote_close') topLevelBlock(reader, blocks);
      reader.at++;
      return;
    case 'bullet_list_open':
    case 'ordered_list_open': {
      // One list is one unit when it fits; a long list is split between its items.
      const items = listItems(reader, token).map((item) => unit(item.text, item.startLine, item.endLine));
      pushJoined(blocks, items);
      return;
    }
    case 'table_open': {
      const rows = tableRows(reader).map((row) => unit(`| ${row.cells.join(' | ')} |`, row.line, row.line));
      pushJoined(blocks, rows);
      return;
    }
    default:
      // A thematic break, or a container this chunker does not read: nothing to index in it.
      if (token.nesting === 1) reader.skipContainer();
  }
}

interface FlatBlock {
  text: string;
  startLine: number;
  endLine: number;
}

/** The items of the list whose open token was just taken, each as `- text` / `3. text`, nested blocks flattened. */
function listItems(reader: TokenReader, list: Token): FlatBlock[] {
  const ordered = list.type === 'ordered_list_open';
  let number = Number(list.attrGet('start') ?? 1);
  const items: FlatBlock[] = [];
  for (let token = reader.tokens[reader.at++]!; token.nesting !== -1; token = reader.tokens[reader.at++]!) {
    const startLine = reader.startLine(token);
    const parts = flatContents(reader, 'list_item_close');
    const text = parts.map((p) => p.text).filter(Boolean).join('\n');
    items.push({ text: `${ordered ? `${number++}.` : '-'} ${text}`, startLine, endLine: parts.at(-1)?.endLine ?? startLine });
  }
  return items;
}

/**
 * The rows of the table whose open token was just taken: each row's cells as text, with its line. A row
 * keeps the cells it was written with: markdown-it pads a short row to the header's width (those cells
 * are dropped again) and leaves out cells past it (those are kept, as written).
 */
function tableRows(reader: TokenReader): { cells: string[]; line: number }[] {
  const rows: { cells: string[]; line: number }[] = [];
  const finishRow = (): void => {
    const row = rows.at(-1);
    if (!row) return;
    const written = writtenCells(reader.bodyLine(row.line - 1 - reader.lineOffset));
    if (written.length < row.cells.length) row.cells.length = written.length;
    else for (const extra of written.slice(row.cells.length)) row.cells.push(extra.trim().replace(/\\\|/g, '|'));
  };
  for (let token = reader.tokens[reader.at++]!; token.type !== 'table_close'; token = reader.tokens[reader.at++]!) {
    if (token.type === 'tr_open') rows.push({ cells: [], line: reader.startLine(token) });
    else if (token.type === 'inline') rows.at(-1)!.cells.push(reader.inlineText(token).trim());
    else if (token.type === 'tr_close') finishRow();
  }
  return rows;
}

/** A table line's cells as written: split at pipes that are not escaped, the outer pipes optional. */
function writtenCells(line: string): string[] {
  const cells = line.replace(/^[\s>]*/, '').trimEnd().split(/(?<!\\)\|/);
  if (cells[0]?.trim() === '') cells.shift();
  if (cells.at(-1)?.trim() === '') cells.pop();
  return cells;
}

/**
 * The blocks inside a list item (or a blockquote or table within one) as lines of plain text, structure
 * flattened and headings kept as words, up to the token `closeType`, which is taken too.
 */
function flatContents(reader: TokenReader, closeType: string): FlatBlock[] {
  const parts: FlatBlock[] = [];
  for (let token = reader.tokens[reader.at++]!; token.type !== closeType; token = reader.tokens[reader.at++]!) {
    const startLine = reader.startLine(token);
    switch (token.type) {
      case 'heading_open':
      case 'paragraph_open':
        parts.push({ text: reader.inlineText(reader.tokens[reader.at]!).trim(), startLine, endLine: reader.lastLine(token) });
        reader.skipContainer();
        break;
      case 'fence':
      case 'code_block':
      case 'html_block':
        parts.push({ text: literal(token), startLine, endLine: reader.lastLine(token) });
        break;
      case 'bullet_list_open':
      case 'ordered_list_open': {
        const items = listItems(reader, token);
        parts.push({ text: items.map((i) => i.text).join('\n'), startLine, endLine: items.at(-1)?.endLine ?? startLine });
        break;
      }
      case 'blockquote_open': {
        const inner = flatContents(reader, 'blockquote_close');
        parts.push({ text: inner.map((p) => p.text).filter(Boolean).join('\n'), startLine, endLine: inner.at(-1)?.endLine ?? startLine });
        break;
      }
      case 'table_open': {
        const rows = tableRows(reader);
        parts.push({ text: rows.flatMap((r) => r.cells).filter(Boolean).join('\n'), startLine, endLine: rows.at(-1)?.line ?? startLine });
        break;
      }
      default:
        if (token.nesting === 1) reader.skipContainer();
    }
  }
  return parts;
}

function pushJoined(blocks: Block[], parts: Unit[]): void {
  const tokens = parts.reduce((sum, p) => sum + p.tokens, 0);
  if (tokens <= MAX_PASSAGE_TOKENS) {
    if (parts.length > 0) blocks.push({ kind: 'unit', unit: unit(parts.map((p) => p.text).join('\n'), parts[0]!.startLine, parts.at(-1)!.endLine) });
  } else {
    for (const part of parts) blocks.push({ kind: 'unit', unit: part });
  }
}

/** A .txt source: paragraphs separated by blank lines, no markup interpreted. `firstLine` is the file line `text` starts on. */
function plainTextBlocks(text: string, firstLine = 1): Block[] {
  const blocks: Block[] = [];
  const all = text.split(/\r?\n/);
  let paragraph: string[] = [];
  let startLine = firstLine;
  const flush = (endLine: number): void => {
    const joined = paragraph.join('\n').trim();
    if (joined) blocks.push({ kind: 'unit', unit: unit(joined, startLine, endLine) });
    paragraph = [];
  };
  const offset = firstLine - 1;
  all.forEach((line, i) => {
    if (line.trim() === '') {
      flush(offset + i);
      startLine = offset + i + 2;
    } else {
      paragraph.push(line);
    }
  });
  flush(offset + all.length);
  return blocks;
}

const SENTENCE_END = /(?<=[.!?…]["'”’)\]]*)\s+(?=\S)/g;

/**
 * Splits an oversize unit into pieces under the ceiling: at sentences, then words, then characters. Linear
 * in the unit's length (a 5 MB single-line file is one unit): words and lines are counted as it goes.
 */
function splitUnit(big: Unit): Unit[] {
  const pieces: Unit[] = [];
  const lineAt = lineCounter(big.text, big.startLine);
  let pieceStart = 0;
  let pieceEnd = 0;
  let pieceWords = 0;
  const emit = (): void => {
    const text = big.text.slice(pieceStart, pieceEnd).trim();
    if (text) pieces.push(unit(text, lineAt(pieceStart), Math.min(big.endLine, lineAt(pieceEnd))));
    pieceStart = pieceEnd;
    pieceWords = 0;
  };
  // A sentence ends in whitespace, so the words of sentences add up.
  for (const [start, end] of boundaries(big.text)) {
    const words = wordsBetween(big.text, start, end);
    if (pieceEnd > pieceStart && tokensFor(pieceWords + words, end - pieceStart) > MAX_PASSAGE_TOKENS) emit();
    if (tokensFor(words, end - start) > MAX_PASSAGE_TOKENS) {
      // A single sentence over the ceiling: cut it by words, or by characters when it has no spaces.
      for (const cut of hardCuts(big.text, start, end)) {
        pieceEnd = cut;
        emit();
      }
      continue;
    }
    pieceEnd = end;
    pieceWords += words;
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

const WORD = /\S+/g;

/** Runs of non-whitespace starting in [start, end), counted as countWords counts them. */
function wordsBetween(text: string, start: number, end: number): number {
  let words = 0;
  WORD.lastIndex = start;
  for (let match = WORD.exec(text); match && match.index < end; match = WORD.exec(text)) words++;
  return words;
}

/** Cuts of one long sentence, each piece under the ceiling: at a space, before the word past the ceiling, else by length. */
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
    let words = 0;
    WORD.lastIndex = position;
    for (let match = WORD.exec(text); match && match.index < cut; match = WORD.exec(text)) {
      if (++words > MAX_PASSAGE_TOKENS) {
        cut = match.index;
        break;
      }
    }
    yield cut;
    position = cut;
  }
}

/** The line of an offset into `text`, whose first line is `firstLine`; offsets must come in order. */
function lineCounter(text: string, firstLine: number): (offset: number) => number {
  let line = firstLine;
  let next = text.indexOf('\n');
  return (offset) => {
    while (next !== -1 && next < offset) {
      line++;
      next = text.indexOf('\n', next + 1);
    }
    return line;
  };
}

/**
 * Heading-aware packing: units accumulate under the current heading trail; a heading closes the
 * passage once it has MIN_PASSAGE_TOKENS, otherwise the heading is written into the text and packing goes
 * on. A passage that runs on into a section outside its trail (SRD's "Spellcasting Focus", then "Divine
 * Smite") is headed by the trail the two share, with the heading it opened under written in too: its
 * trail names what all of it is under, never one section of several. Nothing overlaps, and no passage
 * passes MAX_PASSAGE_TOKENS.
 */
function pack(blocks: Block[]): DraftPassage[] {
  const passages: DraftPassage[] = [];
  const trail: Heading[] = [];
  let parts: string[] = [];
  // Words and characters of the parts, so the joined text is measured without joining it at every block.
  let partsWords = 0;
  let partsChars = 0;
  let startLine = 0;
  let endLine = 0;
  let passageTrail: Heading[] = [];
  /** The heading the passage's text starts under, while it is not yet written into it. */
  let opening = null as Heading | null;
  /** A heading no text has followed yet: the one a passage starting now opens under. */
  let fresh = null as Heading | null;
  const hasContent = (): boolean => parts.length > 0;
  // As the passage's token count will be: the parts joined by blank lines, then `extra` after one more.
  const joinedTokens = (extra?: { words: number; chars: number }): number =>
    tokensFor(partsWords + (extra?.words ?? 0), partsChars + 2 * (parts.length - 1) + (extra ? 2 + extra.chars : 0));

  const close = (): void => {
    if (!hasContent()) return;
    const text = parts.join('\n\n');
    passages.push({
      headingPath: passageTrail.map((h) => h.text),
      text,
      tokenCount: joinedTokens(),
      contentHash: createHash('sha256').update(normalizeForIndex(text)).digest('hex'),
      startLine,
      endLine,
    });
    parts = [];
    partsWords = 0;
    partsChars = 0;
  };
  const add = (text: string, words: number, from: number, to: number): void => {
    if (!hasContent()) {
      passageTrail = [...trail];
      opening = fresh;
      startLine = from;
      endLine = to;
    }
    parts.push(text);
    partsWords += words;
    partsChars += text.length;
    endLine = Math.max(endLine, to);
  };
  const written = (h: Heading): { text: string; words: number } => {
    const text = `${'#'.repeat(h.depth)} ${h.text}`;
    return { text, words: countWords(text) };
  };

  for (const block of blocks) {
    if (block.kind === 'body') {
      // Closed whatever its size, and out of every field's heading: the page's own text opens under none.
      close();
      trail.length = 0;
      fresh = null;
      continue;
    }
    if (block.kind === 'heading') {
      if (hasContent() && joinedTokens() >= MIN_PASSAGE_TOKENS) close();
      // By depth, not by count: a file whose headings start at `##`, or that skips a level, must not
      // keep an earlier sibling in the trail.
      while (trail.length > 0 && trail[trail.length - 1]!.depth >= block.depth) trail.pop();
      const heading = { depth: block.depth, text: block.text, line: block.line };
      trail.push(heading);
      fresh = heading;
      if (!hasContent()) continue;
      const line = written(heading);
      if (joinedTokens({ words: line.words, chars: line.text.length }) > MAX_PASSAGE_TOKENS) {
        close();
        continue;
      }
      const shared = passageTrail.findIndex((h, i) => trail[i] !== h);
      if (shared !== -1) {
        passageTrail = passageTrail.slice(0, shared);
        if (opening) {
          const first = written(opening);
          parts.unshift(first.text);
          partsWords += first.words;
          partsChars += first.text.length;
          startLine = opening.line;
          opening = null;
        }
      }
      add(line.text, line.words, block.line, block.line);
      // Written here: no later passage may open under it and write it again.
      fresh = null;
      continue;
    }
    for (const piece of block.unit.tokens > MAX_PASSAGE_TOKENS ? splitUnit(block.unit) : [block.unit]) {
      // Joining adds separators, so check the joined text, not the sum, against the ceiling.
      if (hasContent() && joinedTokens({ words: piece.words, chars: piece.text.length }) > MAX_PASSAGE_TOKENS) close();
      add(piece.text, piece.words, piece.startLine, piece.endLine);
      fresh = null;
    }
  }
  close();
  return passages;
}
