import { RE2JS, RE2JSException, RE2JSSyntaxException } from 're2js';

/**
 * The one door for every regular expression that comes from a file (a lorebook's `/pattern/flags` key, a
 * campaign's front matter): it is read as JavaScript reads it, as SillyTavern writes it, and run by re2js, a
 * linear-time engine, so no pattern and no text (a writer's, a book's, the narrator's own reply) can make a
 * turn run on. What that engine cannot run (a backreference, a lookahead) is refused with the reason, never
 * run another way. Patterns our own code builds from escaped words do not come through here.
 */

/** A pattern from a file, ready to run: linear in the text's length whatever the pattern. */
export interface FilePattern {
  /**
   * Whether the pattern matches anywhere in the text, as RegExp.prototype.test says (without `g`'s state).
   * `lowerCased`, the same text lower-cased when the caller already holds it, spares the quick check below
   * lower-casing it again.
   */
  test(text: string, lowerCased?: string): boolean;
}

/** A pattern compiled, or refused with the reason (a phrase: "uses a backreference \1, which …"). */
export type CompiledPattern = { pattern: FilePattern } | { refused: string };

/** `/pattern/flags`, as SillyTavern's World Info writes a regular-expression key. */
const REGEX_KEY = /^\/(.+)\/([dgimsuvy]*)$/s;

/** Whether a key is a pattern: World Info activation runs it through this door; a search's mentions never read it. */
export const isRegexKey = (key: string): boolean => REGEX_KEY.test(key.trim());

/** A key's pattern compiled, or null for a plain key. */
export function regexKey(key: string): CompiledPattern | null {
  const m = REGEX_KEY.exec(key.trim());
  return m ? compileFilePattern(m[1]!, m[2]!) : null;
}

/** How a refused key is named everywhere it is reported: at import, in lint and in the activation verdict. */
export const regexKeyRefusal = (key: string, reason: string): string => `regex key not run: ${key.trim()} ${reason}`;

/** The regex keys among these that will never run, each with its reason. */
export function refusedRegexKeys(keys: readonly string[]): { key: string; reason: string }[] {
  return keys.flatMap((key) => {
    const compiled = regexKey(key);
    return compiled && 'refused' in compiled ? [{ key, reason: compiled.refused }] : [];
  });
}

const CANNOT_RUN = 'which a linear-time engine cannot run';

/** What JavaScript's `\s` matches; the engine's own `\s` is ASCII only. */
const JS_SPACE = '\\t\\n\\v\\f\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}\\x{feff}';
/** What JavaScript's `.` matches without the `s` flag: anything but a line terminator. */
const JS_DOT = '[^\\n\\r\\x{2028}\\x{2029}]';

/**
 * Compiles a pattern written for JavaScript's RegExp with its flags: `i`, `m`, `s` and `u` mean what they mean
 * there; `g`, `y` and `d` change nothing a test sees. Never runs JavaScript's engine on it.
 */
export function compileFilePattern(source: string, flags: string): CompiledPattern {
  try {
    // Only parsed, never run: JavaScript's own verdict on whether the pattern is valid, with its words.
    new RegExp(source, flags);
  } catch (error) {
    const why = error instanceof Error ? error.message.replace(/^Invalid (regular expression|flags)[^:]*: (\/.*\/\w*: )?/, '') : String(error);
    return { refused: `is not a valid regular expression (${why})` };
  }
  if (flags.includes('v')) return { refused: 'uses the v flag, whose set notation a linear-time engine cannot read' };
  const translated = translate(source, flags.includes('u'), flags.includes('s'));
  if ('refused' in translated) return translated;
  const engineFlags = (flags.includes('i') ? RE2JS.CASE_INSENSITIVE : 0) | (flags.includes('m') ? RE2JS.MULTILINE : 0) | (flags.includes('s') ? RE2JS.DOTALL : 0);
  try {
    const compiled = RE2JS.compile(RE2JS.translateRegExp(translated.source), engineFlags | RE2JS.LOOKBEHINDS);
    const ignoreCase = flags.includes('i');
    const required = requiredRun(source, ignoreCase);
    // A text without the run every match holds is ruled out by a string search, far quicker than the engine's walk.
    if (required === '') return { pattern: { test: (text) => compiled.test(text) } };
    if (!ignoreCase) return { pattern: { test: (text) => text.includes(required) && compiled.test(text) } };
    return { pattern: { test: (text, lowerCased) => (lowerCased ?? text.toLowerCase()).includes(required) && compiled.test(text) } };
  } catch (error) {
    if (error instanceof RE2JSSyntaxException) return { refused: `uses ${error.getPattern() ?? 'a construct'} (${error.getDescription()}), ${CANNOT_RUN}` };
    if (error instanceof RE2JSException) return { refused: `is more than a linear-time engine runs (${error.message})` };
    throw error;
  }
}

/** Characters that are themselves wherever a pattern holds them outside a class, an escape and a group. */
const PLAIN = /[A-Za-z0-9 _\-,'":;!@#%&=<>~/]/;

/**
 * The longest run of plain characters that every match of the pattern holds, lower-cased when it ignores
 * case; '' when there is none to rely on (an alternative at the top, only groups and classes). Read from what
 * stands outside any group, class or escape, without a quantifier after it. Ignoring case, only ASCII counts,
 * and not `s`: the engine matches ſ for it, which lower-cases to itself; every other ASCII character's case
 * variants (the Kelvin sign for `k`) lower-case to it.
 */
function requiredRun(source: string, ignoreCase: boolean): string {
  const runs: string[] = [];
  let run = '';
  const end = () => {
    if (run !== '') runs.push(run);
    run = '';
  };
  for (let i = 0; i < source.length; ) {
    const c = source[i]!;
    if (c === '|') return '';
    if (c === '\\') {
      end();
      // Past the whole escape, or more: a character it holds taken as plain would be wrong, one left out is not.
      const next = source[i + 1] ?? '';
      const braced = /^[upPk][{<][^}>]*[}>]/.exec(source.slice(i + 1))?.[0];
      i += 2 + (braced ? braced.length - 1 : next === 'u' ? 4 : next === 'x' ? 2 : next === 'c' ? 1 : /^\d*/.exec(source.slice(i + 2))![0].length);
      continue;
    }
    if (c === '[' || c === '(') {
      end();
      i = pastGroupOrClass(source, i);
      continue;
    }
    if ('?*+{'.includes(c)) {
      // The quantified character may be absent or repeated, and a count is no text.
      run = run.slice(0, -1);
      end();
      i += c === '{' ? (/^\{\d+(?:,\d*)?\}/.exec(source.slice(i))?.[0].length ?? 1) : 1;
      continue;
    }
    const code = c.charCodeAt(0);
    const plain = ignoreCase ? PLAIN.test(c) && c !== 's' && c !== 'S' : PLAIN.test(c) || (code > 0x7f && (code < 0xd800 || code > 0xdfff));
    if (plain) run += ignoreCase ? c.toLowerCase() : c;
    else end();
    i++;
  }
  end();
  return runs.reduce((a, b) => (b.length > a.length ? b : a), '');
}

/** Where the group or class opening at `at` ends (just past it). */
function pastGroupOrClass(source: string, at: number): number {
  if (source[at] === '[') {
    let i = at + 1;
    while (i < source.length && source[i] !== ']') i += source[i] === '\\' ? 2 : 1;
    return i + 1;
  }
  let depth = 0;
  for (let i = at; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') i++;
    else if (c === '[') i = pastGroupOrClass(source, i) - 1;
    else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i + 1;
  }
  return source.length;
}

/**
 * A JavaScript pattern in the engine's syntax, where the two read the same text differently: `\s` and `.`
 * as JavaScript means them, its legacy escapes (`\a` is `a`, `\12` an octal code without the `u` flag), and
 * every group non-capturing (a test reads no captures, and a lookbehind may then hold one). A backreference
 * or a lookahead is refused here, named as written.
 */
function translate(source: string, unicode: boolean, dotAll: boolean): { source: string } | { refused: string } {
  const groups = capturingGroups(source);
  const named = /\(\?<[^=!]/.test(source);
  let out = '';
  let inClass = false;
  for (let i = 0; i < source.length; ) {
    const c = source[i]!;
    if (c === '\\') {
      const next = String.fromCodePoint(source.codePointAt(i + 1)!);
      const digits = /^\d+/.exec(source.slice(i + 1))?.[0] ?? '';
      // JavaScript reads every digit as the group's number; one naming no group is an octal code or the digit.
      if (!inClass && digits !== '' && digits[0] !== '0' && Number(digits) <= groups) return { refused: `uses a backreference \\${digits}, ${CANNOT_RUN}` };
      if (next === 'k' && !inClass && (unicode || named)) {
        return { refused: `uses a backreference ${/^\\k<[^>]*>/.exec(source.slice(i))?.[0] ?? '\\k'}, ${CANNOT_RUN}` };
      }
      if (/[0-7]/.test(next) && !unicode) {
        // Annex B's octal escape: up to three digits, at most \377.
        const octal = /^[0-3]?[0-7]{1,2}|^[0-7]/.exec(source.slice(i + 1))![0];
        out += `\\x{${parseInt(octal, 8).toString(16)}}`;
        i += 1 + octal.length;
        continue;
      }
      if (next === '0') out += '\\x{0}';
      else if (next === 's') out += inClass ? JS_SPACE : `[${JS_SPACE}]`;
      else if (next === 'S' && !inClass) out += `[^${JS_SPACE}]`;
      else if (next === 'b' && inClass) out += '\\x{8}';
      else if ('dDwWSbBnrtvfcxu'.includes(next) || ((next === 'p' || next === 'P') && unicode)) out += `\\${next}`;
      else out += RE2JS.quote(next); // an identity escape: the character itself
      i += 1 + next.length;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      out += c;
      i++;
      continue;
    }
    if (c === '[') {
      inClass = true;
      const negated = source[i + 1] === '^';
      out += negated ? '[^' : '[';
      i += negated ? 2 : 1;
      continue;
    }
    if (c === '(') {
      const opening = /^\((?:\?(?:<=|<!|=|!|<[^>]*>|:)?)?/.exec(source.slice(i))![0];
      if (opening === '(?=' || opening === '(?!') return { refused: `uses a lookahead ${opening}…), ${CANNOT_RUN}` };
      out += opening === '(?<=' || opening === '(?<!' || opening === '(?' ? opening : '(?:';
      i += opening.length;
      continue;
    }
    out += c === '.' && !dotAll ? JS_DOT : c;
    i++;
  }
  return { source: out };
}

/** The capturing groups a pattern opens: `(` not followed by `?`, and named groups. */
function capturingGroups(source: string): number {
  let count = 0;
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') i++;
    else if (inClass) inClass = c !== ']';
    else if (c === '[') inClass = true;
    else if (c === '(' && (source[i + 1] !== '?' || /^<[^=!]/.test(source.slice(i + 2)))) count++;
  }
  return count;
}
