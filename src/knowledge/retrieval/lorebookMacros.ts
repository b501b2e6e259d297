/**
 * SillyTavern's macros in a lorebook's keys and content (its substituteParams, learned from its source, not
 * copied): the names, its legacy tags, and the text helpers a book uses. What needs a clock, a roll outside
 * the turn's seed, SillyTavern's variables or its character card stays as written (docs/lorebooks.md says
 * which). One function for activation (keys, recursion, pricing) and the prompt, so what is priced is sent.
 */

export interface MacroNames {
  /** `{{user}}`: the player character. */
  user: string;
  /** `{{char}}`: the entry's card character, else the narrator. */
  char: string;
}

/** Whether the text holds anything the substitution would change: most passages hold none and are left alone. */
export function hasLorebookMacro(text: string): boolean {
  return text.includes('{{') || /<(?:user|bot|char|charifnotgroup|group)>/i.test(text);
}

/** Runs of text with a macro in them, by name: case-insensitive, as SillyTavern's are. */
const NAMED = /\{\{(user|char|group|charIfNotGroup)\}\}/gi;

export function substituteLorebookMacros(text: string, names: MacroNames): string {
  if (!hasLorebookMacro(text)) return text;
  // Its legacy tags first, as it substitutes them before anything else.
  let out = text
    .replace(/<USER>/gi, () => names.user)
    .replace(/<(?:BOT|CHAR|CHARIFNOTGROUP|GROUP)>/gi, () => names.char);
  if (!out.includes('{{')) return out;
  out = out
    .replace(/\{\{newline\}\}/gi, '\n')
    .replace(/(?:\r?\n)*\{\{trim\}\}(?:\r?\n)*/gi, '')
    .replace(/\{\{noop\}\}/gi, '')
    // A one-to-one chat has no group: SillyTavern's {{group}} is then the character.
    .replace(NAMED, (_m, name: string) => (name.toLowerCase() === 'user' ? names.user : names.char))
    .replace(/\{\{reverse:(.+?)\}\}/gi, (_m, inner: string) => Array.from(inner).reverse().join(''))
    // A writer's note to themselves: `{{// …}}` is never sent.
    .replace(/\{\{\/\/[\s\S]*?\}\}/g, '');
  return out;
}
