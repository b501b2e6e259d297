import YAML, { isCollection, isMap, isScalar, isSeq, LineCounter, type Document } from 'yaml';
import { z } from 'zod';
import { KNOWLEDGE_CLASSES, PRIORITIES, SCOPES, SELECTIVE_LOGIC, VISIBILITIES, type SourceIssue } from './types';
import { readTomlFrontMatter } from './tomlFrontMatter';

/** What a source's front matter may say about it. Every key is optional; absent keys fall back to defaults. */
export interface FrontMatter {
  class?: (typeof KNOWLEDGE_CLASSES)[number];
  enabled?: boolean;
  visibility?: (typeof VISIBILITIES)[number];
  always_include?: boolean;
  priority?: (typeof PRIORITIES)[number];
  tags?: string[];
  entities?: string[];
  title?: string;
  notes?: string;
  /** Who `{{char}}` in this file's text is (a character card's character); the narrator when absent. */
  character?: string;
  scope?: (typeof SCOPES)[number];
  /** Campaign-relative paths of sources this one wins over wherever they disagree (see conflictsEdit.ts). */
  supersedes?: string[];
  /** Story facts stated as data (see facts.ts): `attribute: value`, or `Entity: {attribute: value}`. */
  facts?: Record<string, FactValue | Record<string, FactValue>>;
  /** SillyTavern World Info keys (see triggers.ts): a mention of one makes the source eligible. */
  keys?: string[];
  secondary_keys?: string[];
  selective_logic?: (typeof SELECTIVE_LOGIC)[number];
  case_sensitive?: boolean;
  match_whole_words?: boolean;
  /** What a lorebook import keeps of SillyTavern: `entry` (its World Info fields) and `book` (name, settings). */
  sillytavern?: Record<string, unknown>;
  /** Protected canon: proposals never edit it; a change becomes a new canon file that supersedes it. */
  locked?: boolean;
  /** Where a proposed canon file came from in play ("The Night Watch, turn 7"), written by the proposal. */
  from_turn?: string;
}

type FactValue = string | number | boolean | (string | number | boolean)[];

/** Writers type `Canon` as often as `canon`; case is not a meaningful difference for an enumerated value. */
const lowerEnum = <T extends readonly [string, ...string[]]>(values: T) =>
  z
    .string()
    .transform((s) => s.trim().toLowerCase())
    .pipe(z.enum(values, { error: () => `must be one of ${values.join(', ')}` }));

/** A single word is a one-item list: `tags: town` means `tags: [town]`. */
const stringList = z
  .union([z.string(), z.number()], { error: 'must be a list of words' })
  .transform((v) => [String(v)])
  .or(z.array(z.union([z.string(), z.number()]).transform(String), { error: 'must be a list of words' }));

/** YAML reads `title: 1984` as a number; the writer meant the text. */
const text = z.union([z.string(), z.number()], { error: 'must be text' }).transform(String);

const factScalar = z.union([z.string(), z.number(), z.boolean()]);
const factValue = z.union([factScalar, z.array(factScalar)]);

const FIELD_SCHEMAS = {
  class: lowerEnum(KNOWLEDGE_CLASSES),
  enabled: z.boolean({ error: 'must be true or false' }),
  visibility: lowerEnum(VISIBILITIES),
  always_include: z.boolean({ error: 'must be true or false' }),
  priority: lowerEnum(PRIORITIES),
  tags: stringList,
  entities: stringList,
  title: text,
  notes: text,
  character: text,
  scope: lowerEnum(SCOPES),
  supersedes: stringList,
  keys: stringList,
  secondary_keys: stringList,
  // `AND ANY` as SillyTavern's editor shows it is the same logic as `and_any`.
  selective_logic: z
    .string()
    .transform((s) => s.trim().toLowerCase().replace(/\s+/g, '_'))
    .pipe(z.enum(SELECTIVE_LOGIC, { error: () => `must be one of ${SELECTIVE_LOGIC.join(', ')}` })),
  case_sensitive: z.boolean({ error: 'must be true or false' }),
  match_whole_words: z.boolean({ error: 'must be true or false' }),
  sillytavern: z.record(z.string(), z.unknown(), { error: 'must be a map (`entry:` and `book:`)' }),
  locked: z.boolean({ error: 'must be true or false' }),
  from_turn: text,
  facts: z.record(
    z.string(),
    z.union([factValue, z.record(z.string(), factValue)], { error: 'each fact must be `attribute: value` or `Entity: {attribute: value}`' }),
    { error: 'must be `attribute: value` lines' },
  ),
} satisfies Record<keyof FrontMatter, z.ZodType>;

export const FRONT_MATTER_KEYS = Object.keys(FIELD_SCHEMAS) as (keyof FrontMatter)[];

/**
 * The one list of front-matter fields only the writer may change, each with what it decides: what a file is and
 * whether it is used, who may read it, what is pinned or wins, and what activates it (World Info keys and their
 * options; `sillytavern` holds the kept entry's constant, probability, sticky, cooldown, delay and group). A
 * proposal, drafted by the rules or a model, never adds, changes or removes one; a proposed page goes without them.
 */
export const WRITER_ONLY_FIELDS = {
  class: 'what the file is',
  enabled: 'whether it is used at all',
  visibility: 'who may read it (hidden is narrator-only)',
  always_include: 'whether it is pinned into every prompt',
  priority: 'which canon a full budget keeps',
  locked: 'whether it is protected',
  supersedes: 'which files it wins over',
  keys: 'which words activate it',
  secondary_keys: 'which words activate it',
  selective_logic: 'how its keys combine',
  case_sensitive: 'how its keys match',
  match_whole_words: 'how its keys match',
  sillytavern: 'how its World Info entry activates',
} as const satisfies Partial<Record<keyof FrontMatter, string>>;

export type WriterOnlyField = keyof typeof WRITER_ONLY_FIELDS;

/** The writer-only field a key claims whatever its case or spacing: a mistyped `Locked:` is still a claim on `locked`. */
export function writerOnlyField(key: string): WriterOnlyField | undefined {
  const name = key.trim().toLowerCase();
  return Object.hasOwn(WRITER_ONLY_FIELDS, name) ? (name as WriterOnlyField) : undefined;
}

/** A writer-only field as one front matter states it: the key as written and its value as data. */
export interface StatedField {
  key: string;
  value: unknown;
}

/**
 * The writer-only fields `text`'s front matter states (YAML or TOML, every case variant of a key), or undefined
 * when its front matter cannot be read (never closed, not valid YAML, not `key: value` lines).
 */
export function writerOnlyFieldsOf(text: string): Map<WriterOnlyField, StatedField[]> | undefined {
  const fences = locateFences(text);
  if (fences === undefined) return new Map();
  if (fences === 'unclosed') return undefined;
  const block = text.slice(fences.yamlStart, fences.yamlEnd);
  let fields: StatedField[];
  if (fences.syntax === 'toml') {
    const toml = readTomlFrontMatter(block);
    if ('error' in toml) return undefined;
    fields = toml.fields;
  } else {
    const { doc } = parseYaml(block);
    if (doc.errors.length > 0 || (doc.contents !== null && !isMap(doc.contents))) return undefined;
    fields = Object.entries((doc.toJSON() ?? {}) as Record<string, unknown>).map(([key, value]) => ({ key, value }));
  }
  const stated = new Map<WriterOnlyField, StatedField[]>();
  for (const field of fields) {
    const name = writerOnlyField(field.key);
    if (name) stated.set(name, [...(stated.get(name) ?? []), field]);
  }
  return stated;
}

/** The writer-only fields whose statements differ between two readings of writerOnlyFieldsOf. */
export function changedWriterOnlyFields(before: Map<WriterOnlyField, StatedField[]>, after: Map<WriterOnlyField, StatedField[]>): WriterOnlyField[] {
  return (Object.keys(WRITER_ONLY_FIELDS) as WriterOnlyField[]).filter((name) => JSON.stringify(before.get(name) ?? []) !== JSON.stringify(after.get(name) ?? []));
}

export interface FrontMatterSplit {
  /** The fields that validated; a field with an issue is left out rather than guessed. */
  meta: FrontMatter;
  /** Text after the closing fence (the whole text when there is no front matter). */
  body: string;
  /** 1-based line of the original text where `body` begins. */
  bodyStartLine: number;
  /** True when the text opens with a front-matter block. */
  present: boolean;
  issues: SourceIssue[];
}

const YAML_FENCE = /^---[ \t]*$/;
/** Hugo's TOML front matter. */
const TOML_FENCE = /^\+\+\+[ \t]*$/;
/** The first line of a block that is front matter: a `key:` or `- item` (YAML), a `key =` or `[table]` (TOML). */
const OPENING_LINE = { yaml: /^(- |[^\s#][^:]*:(\s|$))/, toml: /^\s*([A-Za-z0-9_"-][^=]*=|\[)/ };
/** Skipped when deciding: a YAML or TOML comment reads exactly like a markdown heading. */
const NEUTRAL_LINE = /^\s*(#.*)?$/;

interface FenceLocation {
  syntax: 'yaml' | 'toml';
  /** Offset where the YAML text starts (after the opening fence line). */
  yamlStart: number;
  /** Offset of the closing fence line. */
  yamlEnd: number;
  /** Offset just after the closing fence line, including its line break. */
  bodyStart: number;
  /** Number of lines up to and including the closing fence. */
  linesBeforeBody: number;
}

/**
 * Locates a front-matter block: `---` (or `+++`) on the very first line, closed by the next such line. A
 * first line `---` followed by prose is a thematic break (a scene break that opens the file), not front
 * matter: the block counts only when its first line that is neither blank nor a comment is a key (or the
 * closing fence).
 */
function locateFences(text: string): FenceLocation | 'unclosed' | undefined {
  const firstBreak = text.indexOf('\n');
  const firstLine = (firstBreak === -1 ? text : text.slice(0, firstBreak)).replace(/\r$/, '');
  const syntax = YAML_FENCE.test(firstLine) ? 'yaml' : TOML_FENCE.test(firstLine) ? 'toml' : undefined;
  if (!syntax || firstBreak === -1) return undefined;
  const fence = syntax === 'yaml' ? YAML_FENCE : TOML_FENCE;
  let lineStart = firstBreak + 1;
  let line = 2;
  let opened = false;
  while (lineStart <= text.length) {
    const lineBreak = text.indexOf('\n', lineStart);
    const lineEnd = lineBreak === -1 ? text.length : lineBreak;
    const lineText = text.slice(lineStart, lineEnd).replace(/\r$/, '');
    if (fence.test(lineText)) {
      return {
        syntax,
        yamlStart: firstBreak + 1,
        yamlEnd: lineStart,
        bodyStart: lineBreak === -1 ? text.length : lineBreak + 1,
        linesBeforeBody: line,
      };
    }
    if (!opened && !NEUTRAL_LINE.test(lineText)) {
      if (!OPENING_LINE[syntax].test(lineText)) return undefined;
      opened = true;
    }
    if (lineBreak === -1) break;
    lineStart = lineBreak + 1;
    line += 1;
  }
  return opened ? 'unclosed' : undefined;
}

function parseYaml(yamlText: string): { doc: Document.Parsed; lines: LineCounter } {
  const lines = new LineCounter();
  const doc = YAML.parseDocument(yamlText, { lineCounter: lines, prettyErrors: true, uniqueKeys: true });
  return { doc, lines };
}

/** Keys close to a known one are probably typos (`clas: canon`); other keys belong to other tools and are left alone. */
function nearestKey(key: string): string | undefined {
  const distance = (a: string, b: string): number => {
    const row = Array.from({ length: b.length + 1 }, (_, i) => i);
    for (let i = 1; i <= a.length; i++) {
      let previous = row[0]!;
      row[0] = i;
      for (let j = 1; j <= b.length; j++) {
        const current = row[j]!;
        row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
        previous = current;
      }
    }
    return row[b.length]!;
  };
  const lower = key.toLowerCase();
  return FRONT_MATTER_KEYS.find((known) => known !== lower && distance(lower, known) <= (known.length > 5 ? 2 : 1));
}

/** A source's front-matter block as written, for readers that take its YAML and its body apart. */
export interface FrontMatterBlock {
  /** The YAML between the fences; empty for TOML front matter. */
  yamlText: string;
  /** Offset where the body starts, after the closing fence line. */
  bodyStart: number;
  /** 1-based line where the body starts. */
  bodyStartLine: number;
}

/** The front-matter block a source opens with, or undefined when it has none or never closes it. */
export function frontMatterBlock(text: string): FrontMatterBlock | undefined {
  const fences = locateFences(text);
  if (fences === undefined || fences === 'unclosed') return undefined;
  // TOML's fields are read by splitFrontMatter; its text is no YAML whose prose could be indexed.
  const yamlText = fences.syntax === 'yaml' ? text.slice(fences.yamlStart, fences.yamlEnd) : '';
  return { yamlText, bodyStart: fences.bodyStart, bodyStartLine: fences.linesBeforeBody + 1 };
}

/**
 * Splits a source into front matter and body, and validates the front matter field by field so that every
 * problem is reported with the line it is on. Never throws: problems come back as `issues`.
 * `text` must already be decoded and free of a byte-order mark.
 */
export function splitFrontMatter(text: string): FrontMatterSplit {
  const fences = locateFences(text);
  if (fences === undefined) return { meta: {}, body: text, bodyStartLine: 1, present: false, issues: [] };
  if (fences === 'unclosed') {
    const fence = text.startsWith('+++') ? '+++' : '---';
    return {
      meta: {},
      body: '',
      bodyStartLine: 1,
      present: true,
      issues: [{ severity: 'error', code: 'front-matter-unclosed', line: 1, message: `front matter opened with ${fence} on line 1 is never closed by a ${fence} line` }],
    };
  }
  const body = text.slice(fences.bodyStart);
  const bodyStartLine = fences.linesBeforeBody + 1;
  const fileLine = (blockLine: number): number => blockLine + 1; // the opening fence is line 1
  const result: FrontMatterSplit = { meta: {}, body, bodyStartLine, present: true, issues: [] };
  const block = text.slice(fences.yamlStart, fences.yamlEnd);
  if (fences.syntax === 'toml') {
    const toml = readTomlFrontMatter(block);
    if ('error' in toml) {
      result.issues.push({ severity: 'error', code: 'front-matter-toml', line: fileLine(toml.line), message: `front matter is not valid TOML: ${toml.error}` });
      return result;
    }
    result.meta = validateFields(
      toml.fields.map((f) => ({ key: f.key, value: f.value, line: fileLine(f.line) })),
      result.issues,
    );
    return result;
  }
  const { doc, lines } = parseYaml(block);

  if (doc.errors.length > 0) {
    for (const error of doc.errors) {
      const at = error.linePos?.[0]?.line;
      result.issues.push({
        severity: 'error',
        code: 'front-matter-yaml',
        // yaml's own position is relative to the block; the file line is reported instead.
        message: `front matter is not valid YAML: ${error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '')}`,
        ...(at !== undefined ? { line: fileLine(at) } : {}),
      });
    }
    return result;
  }
  if (doc.contents === null) return result;
  if (!isMap(doc.contents)) {
    result.issues.push({ severity: 'error', code: 'front-matter-shape', line: 2, message: 'front matter must be `key: value` lines' });
    return result;
  }
  const fields = doc.contents.items.map((pair) => {
    const keyNode = pair.key;
    const offset = isScalar(keyNode) && keyNode.range ? keyNode.range[0] : 0;
    const value: unknown = isScalar(pair.value) ? pair.value.toJSON() : (pair.value as { toJSON?: () => unknown } | null)?.toJSON?.() ?? null;
    return { key: isScalar(keyNode) ? String(keyNode.value) : String(keyNode), value, line: fileLine(lines.linePos(offset).line) };
  });
  result.meta = validateFields(fields, result.issues);
  return result;
}

/** Each field checked against its schema: the valid ones kept, every other one reported on its line. */
function validateFields(fields: readonly { key: string; value: unknown; line: number }[], issues: SourceIssue[]): FrontMatter {
  const meta: Record<string, unknown> = {};
  for (const { key, value, line } of fields) {
    const schema = (FIELD_SCHEMAS as Record<string, z.ZodType>)[key];
    if (!schema) {
      // Keys are read as written, so `Locked: true` protects nothing: said, since the writer meant `locked`.
      const spelled = FRONT_MATTER_KEYS.find((known) => known === key.toLowerCase());
      if (spelled) {
        issues.push({ severity: 'warning', code: 'front-matter-key-case', line, message: `front matter key '${key}' is ignored: keys are case-sensitive; write '${spelled}'` });
        continue;
      }
      const suggestion = nearestKey(key);
      if (suggestion) {
        issues.push({ severity: 'warning', code: 'front-matter-unknown-key', line, message: `unknown front matter key '${key}' is ignored; did you mean '${suggestion}'?` });
      }
      continue;
    }
    const parsed = schema.safeParse(value);
    if (parsed.success) {
      meta[key] = parsed.data;
    } else {
      const shown = value === null ? 'empty' : `'${typeof value === 'string' ? value : JSON.stringify(value)}'`;
      const reason = parsed.error.issues[0]?.message ?? 'is not valid';
      const code = key === 'class' ? 'front-matter-class' : 'front-matter-field';
      issues.push({ severity: 'error', code, line, message: `front matter '${key}' is ${shown}: ${reason}` });
    }
  }
  return meta as FrontMatter;
}

/** A file's front matter, opened for an edit that changes nothing else: its line ending, fences and YAML. */
interface EditableFrontMatter {
  eol: string;
  /** Absent when the file has no front matter yet. */
  block?: { fences: FenceLocation; doc: Document.Parsed };
}

/** Throws when the existing front matter cannot be edited safely (never closed, not YAML, not a map). */
function openForEdit(text: string): EditableFrontMatter {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const fences = locateFences(text);
  if (fences === undefined) return { eol };
  if (fences === 'unclosed') throw new Error('front matter is never closed; fix it before editing');
  if (fences.syntax === 'toml') throw new Error('front matter is TOML (+++); edit it by hand, or write it as YAML between --- lines');
  const { doc } = parseYaml(text.slice(fences.yamlStart, fences.yamlEnd));
  if (doc.errors.length > 0) throw new Error('front matter is not valid YAML; fix it before editing');
  if (doc.contents !== null && !isMap(doc.contents)) throw new Error('front matter is not `key: value` lines; fix it before editing');
  return { eol, block: { fences, doc } };
}

/** `lines` (a new key and its value) added before the closing fence, or as a new front matter block. */
function withNewKey(text: string, open: EditableFrontMatter, lines: string): string {
  if (!open.block) return `---${open.eol}${lines}---${open.eol}${text}`;
  const at = open.block.fences.yamlEnd;
  return text.slice(0, at) + lines + text.slice(at);
}

/**
 * Returns `text` with one top-level front-matter field set to `value`, every other byte unchanged: the
 * value is replaced in place when the key exists, added before the closing fence otherwise, and a front
 * matter block is created when the file has none. This is how surfaces enable or disable a source — the
 * file stays the truth, and the reindex that follows picks the change up.
 * Throws when the existing front matter cannot be edited safely (not YAML, not a map, never closed).
 */
export function withFrontMatterField(text: string, key: keyof FrontMatter, value: string | boolean | number): string {
  const rendered = typeof value === 'string' ? renderScalar(value) : String(value);
  const open = openForEdit(text);
  const valueNode = open.block?.doc.get(key, true);
  if (valueNode === undefined) return withNewKey(text, open, `${key}: ${rendered}${open.eol}`);
  if (isScalar(valueNode) && valueNode.range) {
    const base = open.block!.fences.yamlStart;
    return text.slice(0, base + valueNode.range[0]) + rendered + text.slice(base + valueNode.range[1]);
  }
  throw new Error(`front matter '${key}' is not a single value; edit it by hand`);
}

/**
 * Returns `text` with `item` added to a top-level front-matter list, every other byte unchanged, or `text`
 * itself when the list already holds it: a block list gains a line indented like its items, a flow list or
 * a single value becomes a flow list, a missing key is added as a block list. Throws as withFrontMatterField.
 */
export function withFrontMatterListItem(text: string, key: 'supersedes' | 'tags' | 'entities', item: string): string {
  const open = openForEdit(text);
  const entry = renderScalar(item);
  const node = open.block?.doc.get(key, true);
  if (node === undefined) return withNewKey(text, open, `${key}:${open.eol}  - ${entry}${open.eol}`);
  const existing = isSeq(node) ? node.items.map((i) => (isScalar(i) ? String(i.value) : '')) : isScalar(node) ? [String(node.value ?? '')] : [];
  if (existing.includes(item)) return text;
  const base = open.block!.fences.yamlStart;
  if (isSeq(node) && !node.flow && node.items.length > 0) {
    const first = node.items[0];
    const last = node.items[node.items.length - 1];
    if (!isScalar(first) || !isScalar(last) || !first.range || !last.range) throw new Error(`front matter '${key}': every entry must be a single value`);
    const firstStart = base + first.range[0];
    const itemPrefix = text.slice(text.lastIndexOf('\n', firstStart - 1) + 1, firstStart);
    const at = base + last.range[1];
    return text.slice(0, at) + `${open.eol}${itemPrefix}${entry}` + text.slice(at);
  }
  if (isCollection(node) && !isSeq(node)) throw new Error(`front matter '${key}' must be a list`);
  const range = (node as { range?: [number, number, number] }).range;
  if (!range) throw new Error(`front matter '${key}' cannot be read; edit it by hand`);
  const values = [...existing.filter(Boolean), item].map(renderScalar);
  return text.slice(0, base + range[0]) + `[${values.join(', ')}]` + text.slice(base + range[1]);
}

/**
 * `text` with every top-level front-matter field `drop` picks removed, line by line, every other byte unchanged,
 * and the keys it removed as written. Throws as withFrontMatterField when the front matter cannot be edited
 * safely, or when it is one `{…}` map (whose fields share a line).
 */
export function withoutFrontMatterFields(text: string, drop: (key: string) => boolean): { text: string; dropped: string[] } {
  const open = openForEdit(text);
  const map = open.block?.doc.contents;
  if (!open.block || !isMap(map)) return { text, dropped: [] };
  const keyOf = (pair: (typeof map.items)[number]) => String(isScalar(pair.key) ? pair.key.value : pair.key);
  const doomed = map.items.filter((pair) => drop(keyOf(pair)));
  if (doomed.length === 0) return { text, dropped: [] };
  if (map.flow) throw new Error('front matter is one {…} map; write it as `key: value` lines');
  const base = open.block.fences.yamlStart;
  const block = text.slice(base, open.block.fences.yamlEnd);
  // Each pair's lines: from its key's line to the end of the line its value ends on (a list's last item).
  const spans = doomed.map((pair) => {
    const keyRange = (pair.key as { range?: [number, number, number] } | null)?.range;
    if (!keyRange) throw new Error(`front matter '${keyOf(pair)}' cannot be read; edit it by hand`);
    const from = block.lastIndexOf('\n', keyRange[0] - 1) + 1;
    const last = Math.max((pair.value as { range?: [number, number, number] } | null)?.range?.[1] ?? keyRange[1], keyRange[1]);
    const lineBreak = block.indexOf('\n', last - 1);
    return { from, to: lineBreak === -1 ? block.length : lineBreak + 1 };
  });
  let kept = block;
  for (const { from, to } of spans.reverse()) kept = kept.slice(0, from) + kept.slice(to);
  return { text: text.slice(0, base) + kept + text.slice(open.block.fences.yamlEnd), dropped: doomed.map(keyOf) };
}

function renderScalar(value: string): string {
  return YAML.stringify(value).replace(/\n$/, '');
}

/**
 * Every field of a source's front matter as data, including keys this product does not read (other tools'
 * fields, such as a lorebook's `sillytavern:` map). Empty when there is no front matter or it is not a valid map.
 */
export function frontMatterData(text: string): Record<string, unknown> {
  const fences = locateFences(text);
  if (fences === undefined || fences === 'unclosed' || fences.syntax === 'toml') return {};
  const { doc } = parseYaml(text.slice(fences.yamlStart, fences.yamlEnd));
  if (doc.errors.length > 0 || !isMap(doc.contents)) return {};
  return doc.toJSON() as Record<string, unknown>;
}
