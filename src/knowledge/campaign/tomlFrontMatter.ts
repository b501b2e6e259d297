/**
 * Hugo-style TOML front matter (between `+++` lines), read as far as this product's fields need: top-level
 * `key = value` lines whose value is a string, a number, true/false or a one-line list of those. Tables
 * (`[params]`), inline tables and multi-line values are other tools' business; a field of ours written in one
 * is reported, never guessed.
 */

export type TomlScalar = string | number | boolean;
export type TomlValue = TomlScalar | TomlValue[];

export interface TomlField {
  key: string;
  /** undefined when the value is one this reader does not understand. */
  value: TomlValue | undefined;
  /** 1-based line inside the block. */
  line: number;
}

export interface TomlTable {
  name: string;
  line: number;
}

const KEY_LINE = /^\s*([A-Za-z0-9_-]+|"[^"\\]*")\s*=\s*(.*)$/;
const TABLE_LINE = /^\s*\[\[?\s*([^\]]*?)\s*\]\]?\s*(#.*)?$/;
const NUMBER = /^[+-]?(\d[\d_]*)(\.\d[\d_]*)?([eE][+-]?\d+)?/;

/** One value at `at`: its value and where it ends, or undefined when it is not one this reader knows. */
function valueAt(text: string, at: number): { value: TomlValue; end: number } | undefined {
  const ch = text[at];
  if (ch === '"') {
    for (let i = at + 1; i < text.length; i++) {
      if (text[i] === '\\') i++;
      else if (text[i] === '"') {
        try {
          // A TOML basic string's escapes are JSON's (\U and \e aside, which JSON refuses: reported, not guessed).
          return { value: JSON.parse(text.slice(at, i + 1)) as string, end: i + 1 };
        } catch {
          return undefined;
        }
      }
    }
    return undefined;
  }
  if (ch === "'") {
    const close = text.indexOf("'", at + 1);
    return close === -1 ? undefined : { value: text.slice(at + 1, close), end: close + 1 };
  }
  if (ch === '[') {
    const items: TomlValue[] = [];
    let i = at + 1;
    for (;;) {
      while (text[i] === ' ' || text[i] === '\t') i++;
      if (text[i] === ']') return { value: items, end: i + 1 };
      const item = valueAt(text, i);
      if (!item) return undefined;
      items.push(item.value);
      i = item.end;
      while (text[i] === ' ' || text[i] === '\t') i++;
      if (text[i] === ',') i++;
      else if (text[i] !== ']') return undefined;
    }
  }
  for (const word of ['true', 'false'] as const) {
    if (text.startsWith(word, at)) return { value: word === 'true', end: at + word.length };
  }
  const number = NUMBER.exec(text.slice(at));
  if (number) return { value: Number(number[0].replaceAll('_', '')), end: at + number[0].length };
  return undefined;
}

/** The block's top-level fields and its table headers; lines that are neither (continuations, comments) are skipped. */
export function readTomlFrontMatter(block: string): { fields: TomlField[]; tables: TomlTable[] } {
  const fields: TomlField[] = [];
  const tables: TomlTable[] = [];
  const lines = block.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const table = TABLE_LINE.exec(lines[i]!);
    if (table) {
      // Every key after a table header belongs to that table, not to the file.
      for (let j = i; j < lines.length; j++) {
        const header = TABLE_LINE.exec(lines[j]!);
        if (header) tables.push({ name: header[1]!, line: j + 1 });
      }
      break;
    }
    const match = KEY_LINE.exec(lines[i]!);
    if (!match) continue;
    const key = match[1]!.replace(/^"|"$/g, '');
    const raw = match[2]!;
    const parsed = valueAt(raw, 0);
    const rest = parsed ? raw.slice(parsed.end).trim() : '';
    fields.push({ key, value: parsed && (rest === '' || rest.startsWith('#')) ? parsed.value : undefined, line: i + 1 });
  }
  return { fields, tables };
}
