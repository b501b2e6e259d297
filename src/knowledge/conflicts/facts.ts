import { attributeKey, valueKey } from './factsNormalize';
import { nameKey, stripInlineMarkup, type EntityNames } from '../names';
import { atxHeading, type KnowledgeClass } from '../campaign';

/**
 * Deterministic fact extraction: the statements canon makes in a recognisable shape, each located so the
 * editor can point at it. Prose is never mined — "the north gate is open" is a job for the model-assisted
 * check, not for a pattern.
 *
 * Recognised shapes (body lines, outside code fences):
 * - attribute lines under an entity heading: `- **Age:** 34`, `**Age**: 34`, `- Age: 34`, and a plain
 *   `Age: 34` that starts a block or continues a run of such lines;
 * - definition lists: a short term line followed by `: definition`;
 * - definition-style lists and tables about several entities: `- Mara: 34` under `## Ages` (the label is a
 *   known entity, the heading names the attribute) and table rows whose first cell is a known entity;
 * - front matter: a `facts:` map only (`facts: {age: 34}` about the source's own subject, or
 *   `facts: {Mara: {age: 34}}` about a named entity). Other front-matter keys are metadata about the file
 *   (title, layout, tags…), never story facts.
 *
 * A section that states one attribute twice with different values (a dialogue script, a log) is not a fact
 * sheet: those lines are dropped rather than reported as conflicts of a file with itself.
 */

export type FactShape = 'attribute-line' | 'definition' | 'entity-list' | 'table' | 'front-matter';

export interface FactStatement {
  /** The entity as written (heading, title, label); `entityKey` identifies it across spellings and aliases. */
  entity: string;
  entityKey: string;
  attribute: string;
  attributeKey: string;
  value: string;
  valueKey: string;
  shape: FactShape;
  sourceId: string;
  /** Campaign-relative POSIX path. */
  path: string;
  sourceTitle: string;
  class: KnowledgeClass;
  /** 1-based line; columns are 0-based UTF-16 offsets into that line (what editors use). */
  line: number;
  startColumn: number;
  endColumn: number;
  /** The statement's line as written, for hovers and reports. */
  quote: string;
}

/** One source as fact extraction sees it. Front matter is already split off by the importer's parser. */
export interface FactSourceInput {
  sourceId: string;
  path: string;
  title: string;
  class: KnowledgeClass;
  /** Declared names of the source's subject (front matter `entities:`/`aliases:`). */
  entities: readonly string[];
  /** The file's text after its front matter. */
  body: string;
  /** 1-based line in the file of the body's first line. */
  bodyStartLine: number;
  /** Entries of a front-matter `facts:` map, flattened, with the line of each key. */
  frontMatterFacts: readonly FrontMatterFact[];
}

export interface FrontMatterFact {
  /** Absent: the source's own subject. */
  entity?: string;
  attribute: string;
  value: string;
  line: number;
  startColumn: number;
  endColumn: number;
  quote: string;
}


/** Headings that name a part of an entity's sheet, not an entity: facts under them belong to the heading above. */
const SECTION_HEADINGS = new Set(
  [
    'appearance', 'description', 'background', 'stats', 'statistics', 'details', 'overview', 'personality',
    'history', 'facts', 'attributes', 'notes', 'summary', 'profile', 'traits', 'info', 'information', 'basics',
    'relationships', 'abilities', 'skills', 'equipment', 'inventory', 'motives', 'motivation', 'goals',
    'secrets', 'quick facts', 'at a glance', 'vital statistics', 'general', 'properties', 'features',
  ].map(nameKey),
);

/** Labels that introduce a remark rather than state an attribute. */
const NON_ATTRIBUTE_LABELS = new Set(
  ['note', 'notes', 'nb', 'example', 'examples', 'warning', 'tip', 'caution', 'important', 'see', 'see also',
    'q', 'a', 'question', 'answer', 'source', 'credit', 'credits', 'edit', 'update', 'todo', 'fixme', 'http', 'https',
    'also', 'but', 'however', 'result', 'effect'].map(attributeKey),
);

const FENCE = /^\s{0,3}(`{3,}|~{3,})/;
const SETEXT = /^\s{0,3}(=+|-+)\s*$/;
const LIST_MARKER = /^(\s*)(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?/;
const BOLD_LABEL = /^(?:\*\*|__)([^*_:]{1,60}?)\s*(?::\s*(?:\*\*|__)|(?:\*\*|__)\s*:)\s*(.*)$/;
const PLAIN_LABEL = /^([\p{L}][\p{L}\p{N} '’/-]{0,59}?)\s*:\s+(.+)$/u;
const DEFINITION = /^\s{0,3}:\s+(.+)$/;
const TABLE_ROW = /^\s*\|.*\|\s*$/;
const TABLE_RULE = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;

interface HeadingFrame {
  level: number;
  text: string;
  /** Distinguishes two headings with the same text, so "one attribute twice" is judged per section. */
  ordinal: number;
}

interface RawStatement {
  entity: string;
  entityKey: string;
  attribute: string;
  value: string;
  shape: FactShape;
  line: number;
  startColumn: number;
  endColumn: number;
  quote: string;
  section: number;
}

function splitCells(row: string): string[] {
  return row.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
}

function looksLikeAttribute(label: string, plain: boolean): boolean {
  const words = label.trim().split(/\s+/);
  if (words.length > (plain ? 3 : 5)) return false;
  if (plain && !/^\p{Lu}/u.test(label)) return false;
  return !NON_ATTRIBUTE_LABELS.has(attributeKey(label));
}

/** Values are short statements; a long sentence after a colon is prose. */
function looksLikeValue(value: string, plain: boolean): boolean {
  const v = value.trim();
  if (!v || v.startsWith('//')) return false;
  return v.length <= (plain ? 100 : 200);
}

/** Extracts the facts one source states. `names` must know every source's declared names (see buildEntityNames). */
/**
 * What a page is about: its title's entity, unless nothing declared is that title's (a page titled "Infirmary
 * Notes" with `entities: [Mara]`) — then the one entity its front matter names, so the page's `Age: 52` is
 * Mara's and meets her sheet's 34. With several named entities the page stays its own subject.
 */
function subjectOfFile(source: Pick<FactSourceInput, 'title' | 'entities'>, names: EntityNames): string {
  const titleKey = names.resolve(source.title);
  if (source.entities.some((e) => names.resolve(e) === titleKey)) return source.title;
  const named = new Map(source.entities.map((e) => [names.resolve(e), e] as const).filter(([key]) => key !== undefined));
  return named.size === 1 ? [...named.values()][0]! : source.title;
}

export function extractFacts(source: FactSourceInput, names: EntityNames): FactStatement[] {
  const raw: RawStatement[] = [];
  const lines = source.body.split(/\r?\n/);
  const headings: HeadingFrame[] = [];
  let sectionOrdinal = 0;
  let fence: string | null = null;
  let previousKind: 'blank' | 'heading' | 'fact' | 'other' = 'blank';
  let table: { headers: string[] } | null = null;

  const entityOf = (name: string) => ({ entity: name, entityKey: names.keyFor(name, source.path) });
  const fileSubject = subjectOfFile(source, names);
  const titleKey = names.resolve(source.title);
  const findSubject = (): { entity: string; entityKey: string } => {
    for (let i = headings.length - 1; i >= 0; i--) {
      const { text: heading, level } = headings[i]!;
      const key = names.resolve(heading);
      // The page's own heading (its title, or an undeclared top heading) stands for what the page is about.
      if (fileSubject !== source.title && ((key !== undefined && key === titleKey) || (key === undefined && level === 1))) return entityOf(fileSubject);
      if (key !== undefined || !SECTION_HEADINGS.has(nameKey(heading))) return entityOf(heading);
    }
    return entityOf(fileSubject);
  };
  let subject = findSubject();
  const innermostHeading = (): string | undefined => headings[headings.length - 1]?.text;

  for (let i = 0; i < lines.length; i++) {
    const text = lines[i]!;
    const lineNo = source.bodyStartLine + i;
    const fenceMatch = FENCE.exec(text);
    if (fence !== null) {
      if (fenceMatch && fenceMatch[1]![0] === fence[0] && fenceMatch[1]!.length >= fence.length) fence = null;
      continue;
    }
    if (fenceMatch) {
      fence = fenceMatch[1]!;
      previousKind = 'other';
      continue;
    }
    if (!text.trim()) {
      previousKind = 'blank';
      table = null;
      continue;
    }
    const atx = atxHeading(text);
    const next = lines[i + 1];
    const setext = !atx && next !== undefined && SETEXT.test(next) && previousKind !== 'other' && !LIST_MARKER.test(text) && !TABLE_ROW.test(text);
    if (atx || setext) {
      const level = atx ? atx.level : next!.trim().startsWith('=') ? 1 : 2;
      const headingText = stripInlineMarkup(atx ? atx.text : text);
      while (headings.length > 0 && headings[headings.length - 1]!.level >= level) headings.pop();
      headings.push({ level, text: headingText, ordinal: ++sectionOrdinal });
      subject = findSubject();
      if (setext) i++;
      previousKind = 'heading';
      table = null;
      continue;
    }
    const section = headings[headings.length - 1]?.ordinal ?? 0;
    const indent = text.length - text.trimStart().length;
    const endColumn = text.trimEnd().length;

    // Every recognised shape has a colon or a table bar; most prose lines have neither.
    if (!text.includes(':') && !text.includes('|')) {
      previousKind = 'other';
      table = null;
      continue;
    }
    if (TABLE_ROW.test(text)) {
      if (table) {
        const cells = splitCells(text);
        const term = stripInlineMarkup(cells[0] ?? '');
        if (term && names.resolve(term) !== undefined) {
          cells.slice(1).forEach((cell, c) => {
            const attribute = table!.headers[c + 1];
            const value = stripInlineMarkup(cell);
            if (attribute && value && value !== '-' && value !== '—') {
              raw.push({ ...entityOf(term), attribute, value, shape: 'table', line: lineNo, startColumn: indent, endColumn, quote: text.trim(), section });
            }
          });
        }
      } else if (next !== undefined && TABLE_RULE.test(next)) {
        table = { headers: splitCells(text).map(stripInlineMarkup) };
        i++;
      }
      previousKind = 'other';
      continue;
    }
    table = null;

    const definition = DEFINITION.exec(text);
    if (definition && previousKind === 'other' && i > 0) {
      const term = stripInlineMarkup(lines[i - 1]!);
      if (looksLikeAttribute(term, false) && looksLikeValue(definition[1]!, false)) {
        raw.push({ ...subject, attribute: term, value: stripInlineMarkup(definition[1]!), shape: 'definition', line: lineNo, startColumn: indent, endColumn, quote: `${term} ${text.trim()}`, section });
        previousKind = 'fact';
        continue;
      }
    }

    const marker = LIST_MARKER.exec(text);
    const content = marker ? text.slice(marker[0].length) : text.trimStart();
    const bold = BOLD_LABEL.exec(content);
    const plain = bold ? null : PLAIN_LABEL.exec(content);
    // A bare `Label: value` line in the middle of a paragraph is wrapped prose, not a fact.
    const plainAllowed = marker !== null || previousKind !== 'other';
    const match = bold ?? (plainAllowed ? plain : null);
    const isPlain = !bold && !marker;
    if (match) {
      const label = stripInlineMarkup(match[1]!);
      const value = stripInlineMarkup(match[2]!);
      if (looksLikeValue(value, isPlain)) {
        const heading = innermostHeading();
        if (marker && names.resolve(label) !== undefined && heading && names.resolve(heading) === undefined) {
          // `- Mara: 34` under `## Ages`: the list is about several entities, the heading names the attribute.
          raw.push({ ...entityOf(label), attribute: heading, value, shape: 'entity-list', line: lineNo, startColumn: indent, endColumn, quote: text.trim(), section });
          previousKind = 'fact';
          continue;
        }
        if (looksLikeAttribute(label, isPlain)) {
          raw.push({ ...subject, attribute: label, value, shape: 'attribute-line', line: lineNo, startColumn: indent, endColumn, quote: text.trim(), section });
          previousKind = 'fact';
          continue;
        }
      }
    }
    previousKind = 'other';
  }

  const ownSubject = source.entities.find((e) => names.resolve(e) === names.resolve(source.title)) ?? fileSubject;
  for (const fact of source.frontMatterFacts) {
    raw.push({ ...entityOf(fact.entity ?? ownSubject), attribute: fact.attribute, value: fact.value, shape: 'front-matter', line: fact.line, startColumn: fact.startColumn, endColumn: fact.endColumn, quote: fact.quote, section: -1 });
  }

  return dropRepeatedAttributes(raw).map((r) => ({
    entity: r.entity,
    entityKey: r.entityKey,
    attribute: r.attribute,
    attributeKey: attributeKey(r.attribute),
    value: r.value,
    valueKey: valueKey(r.value),
    shape: r.shape,
    sourceId: source.sourceId,
    path: source.path,
    sourceTitle: source.title,
    class: source.class,
    line: r.line,
    startColumn: r.startColumn,
    endColumn: r.endColumn,
    quote: r.quote,
  }));
}

/** See the module comment: one section naming an attribute twice with different values is not a fact sheet. */
function dropRepeatedAttributes(raw: RawStatement[]): RawStatement[] {
  const groups = new Map<string, RawStatement[]>();
  for (const r of raw) {
    const key = `${r.section}\u0000${r.entityKey}\u0000${attributeKey(r.attribute)}`;
    const group = groups.get(key);
    if (group) group.push(r);
    else groups.set(key, [r]);
  }
  const kept: RawStatement[] = [];
  for (const group of groups.values()) {
    if (new Set(group.map((r) => valueKey(r.value))).size > 1) continue;
    kept.push(group[0]!);
  }
  return kept.sort((a, b) => a.line - b.line || a.startColumn - b.startColumn);
}
