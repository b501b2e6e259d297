import { parse, TomlError } from 'smol-toml';

/**
 * Hugo-style TOML front matter (between `+++` lines), read by a complete TOML parser: a `locked = true` line
 * inside a multi-line string is text, never a field, and tables (`[params]`) hold their own keys, not the file's.
 */

export interface TomlField {
  key: string;
  /** The value as data; dates are their TOML text, as YAML front matter reads them. */
  value: unknown;
  /** 1-based line inside the block where the key is written. */
  line: number;
}

export type TomlFrontMatter = { fields: TomlField[] } | { error: string; /** 1-based line inside the block. */ line: number };

/** A line that starts a key (`key =`, `"key" =`, `key.sub =`) or a table (`[key]`, `[[key]]`, `[key.sub]`). */
const KEY_START = /^(\s*(?:\[\[?\s*)?)([A-Za-z0-9_-]+|"[^"\\\r\n]*"|'[^'\r\n]*')(?=\s*[.=\]])/;

function plain(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}

/**
 * The line each top-level key is written on. The parser gives no positions, so every line that looks like a
 * key has its first key renamed to carry its line number, and the renamed text is parsed again: only lines
 * that are really keys of the top-level table come back as top-level keys (a look-alike inside a string just
 * changes that string). A key found nowhere is placed on the block's first line.
 */
function keyLines(lines: readonly string[]): Map<string, number> {
  const renamed = lines.map((text, i) =>
    text.replace(KEY_START, (_, lead: string, key: string) => lead + JSON.stringify(`${i + 1}:${key.startsWith('"') || key.startsWith("'") ? key.slice(1, -1) : key}`)),
  );
  const found = new Map<string, number>();
  try {
    for (const numbered of Object.keys(parse(renamed.join('\n'), { unsafeKeyBehaviour: 'drop' }))) {
      const colon = numbered.indexOf(':');
      const line = Number(numbered.slice(0, colon));
      const key = numbered.slice(colon + 1);
      const earlier = found.get(key);
      if (earlier === undefined || line < earlier) found.set(key, line);
    }
  } catch {
    // The renaming made the text invalid where the original was not: the keys keep the first line.
  }
  return found;
}

/** The block's top-level keys with their values and lines, or why the block is not TOML and on which line. */
export function readTomlFrontMatter(block: string): TomlFrontMatter {
  let table: Record<string, unknown>;
  try {
    table = parse(block, { unsafeKeyBehaviour: 'drop' });
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    return { error: error.message.split('\n')[0]!.replace(/^Invalid TOML document: /, ''), line: error.line };
  }
  const lines = keyLines(block.split(/\r?\n/));
  return { fields: Object.entries(table).map(([key, value]) => ({ key, value: plain(value), line: lines.get(key) ?? 1 })) };
}
