import type { EntityModel, TextSpan } from './entityModel';

/**
 * Renaming one spelling of an entity everywhere it is written: its title, its `entities:` entries, the
 * links to it and the names in prose — and, inside each of those, only that spelling (renaming `Mara` to
 * `Marra` makes `Sister Mara` `Sister Marra`; renaming `Sister Mara` leaves a bare `Mara` alone).
 * Adventure transcripts are play history and are never rewritten.
 */

export interface FileEdit extends TextSpan {
  newText: string;
}

export class RenameError extends Error {}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `the Abbey` also matches `The Abbey` (a sentence start); everything else is matched as written. */
function spellingPattern(name: string): RegExp {
  const article = /^(the|a|an)(\s+)/i.exec(name);
  const body = article ? `(?:${article[1]!.replace(/^./, (c) => `[${c.toLowerCase()}${c.toUpperCase()}]`)})\\s+${escape(name.slice(article[0].length))}` : escape(name);
  return new RegExp(`(?<![\\p{L}\\p{N}])${body}(?![\\p{L}\\p{N}])`, 'gu');
}

/** Keeps a sentence-initial capital: `The Abbey` renamed to `the Priory` stays `The Priory`. */
function asWritten(written: string, newName: string): string {
  return /^\p{Lu}/u.test(written) && /^\p{Ll}/u.test(newName) ? newName[0]!.toUpperCase() + newName.slice(1) : newName;
}

export function validateNewName(newName: string): string {
  const name = newName.trim();
  if (!name) throw new RenameError('a name cannot be empty');
  if (/[\n\r[\]|#]/.test(name)) throw new RenameError(`"${name}" cannot be a name: it contains a line break, a bracket, | or #`);
  return name;
}

/**
 * The edits renaming `oldName` (one of the entity's spellings) to `newName` in every campaign file.
 * `texts` overrides a file's text (an editor's unsaved buffer), so edits match what the writer sees.
 */
export function renameEdits(model: EntityModel, entityKey: string, oldName: string, newName: string, texts: ReadonlyMap<string, string> = new Map()): FileEdit[] {
  const name = validateNewName(newName);
  const entity = model.entity(entityKey);
  if (!entity) throw new RenameError(`no entity ${entityKey}`);
  const pattern = spellingPattern(oldName);
  const edits: FileEdit[] = [];
  for (const source of model.sources) {
    const text = texts.get(source.path) ?? source.text;
    const lines = text.split(/\r?\n/);
    for (const mention of model.mentionsIn(source.path, text)) {
      // A weak mention ("Ice" in a rules page's "Ice Devil") is some other thing's word: never renamed.
      if (mention.entityKey !== entityKey || mention.weak) continue;
      const lineText = lines[mention.line]!;
      for (const found of lineText.slice(mention.start, mention.end).matchAll(pattern)) {
        const start = mention.start + found.index;
        edits.push({ path: source.path, line: mention.line, start, end: start + found[0].length, newText: asWritten(found[0], name) });
      }
    }
  }
  return edits;
}

/** A file name for a page titled so: `Trapwater Bay` → `trapwater-bay.md` (new pages are named so, and renamed files). */
export function fileNameFor(title: string): string {
  const slug = title
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '-')
    .replace(/^-+|-+$/g, '');
  return `${slug || 'untitled'}.md`;
}

/**
 * The defining file to rename with the entity, as Obsidian offers: one named after the old spelling
 * (`characters/mara.md` when `Mara` becomes `Marra`) gets the new one's name in the same folder, keeping its
 * extension. None when no defining file is named so, or the name would not change.
 */
export function renamedFile(model: EntityModel, entityKey: string, oldName: string, newName: string): { from: string; to: string } | undefined {
  const stem = (file: string) => file.replace(/\.[^.]*$/, '');
  const [from, to] = [fileNameFor(oldName), fileNameFor(validateNewName(newName))].map(stem) as [string, string];
  if (from === to) return undefined;
  for (const definition of model.entity(entityKey)?.definitions ?? []) {
    const slash = definition.path.lastIndexOf('/');
    const [folder, file] = [definition.path.slice(0, slash + 1), definition.path.slice(slash + 1)];
    const dot = file.lastIndexOf('.');
    const [base, extension] = dot > 0 ? [file.slice(0, dot), file.slice(dot)] : [file, ''];
    if (stem(fileNameFor(base)) === from) return { from: definition.path, to: `${folder}${to}${extension}` };
  }
  return undefined;
}
