import YAML, { isCollection, isScalar, isSeq } from 'yaml';
import { splitFrontMatter } from '../campaign';

/**
 * "Mark as superseding": the winning source's front matter gains `supersedes: [<loser path>]`.
 *
 * Shape: `supersedes` is a list of campaign-relative POSIX paths. The source declaring it wins over each
 * listed source wherever the two disagree (and transitively over what those supersede); agreeing facts are
 * untouched, and the superseded file keeps all its text — the conflict is shown as resolved, not deleted.
 *
 * The edit is minimal: one insertion or one replaced value, so the rest of the file — body, comments,
 * quoting, key order — stays byte for byte as the writer left it.
 */

/** A replacement of one range; lines and columns are 0-based, as in editors. */
export interface TextEdit {
  startLine: number;
  startColumn: number;
  endLine: number;
  endColumn: number;
  newText: string;
}

function yamlScalar(value: string): string {
  return YAML.stringify(value).trimEnd();
}

function offsetToPosition(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split('\n').length - 1;
  return { line, column: offset - (before.lastIndexOf('\n') + 1) };
}

function insertionAt(text: string, offset: number, newText: string): TextEdit {
  const { line, column } = offsetToPosition(text, offset);
  return { startLine: line, startColumn: column, endLine: line, endColumn: column, newText };
}

/**
 * The edit that makes the file `text` declare that it supersedes `supersededPath`, or null when it already
 * does. Throws when the front matter is not valid YAML (the writer must fix it first; nothing is changed).
 */
export function supersedesEdit(text: string, supersededPath: string): TextEdit | null {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const entry = yamlScalar(supersededPath);
  const split = splitFrontMatter(text);
  if (!split.present) return insertionAt(text, 0, `---${eol}supersedes:${eol}  - ${entry}${eol}---${eol}`);
  const broken = split.issues.find((i) => i.code === 'front-matter-yaml' || i.code === 'front-matter-unclosed' || i.code === 'front-matter-shape');
  if (broken) throw new Error(broken.message);

  // The YAML lies between the opening fence (line 1) and the closing fence (the line before the body).
  const yamlStart = text.indexOf('\n') + 1;
  let closingFence = yamlStart;
  for (let line = 2; line < split.bodyStartLine - 1; line++) closingFence = text.indexOf('\n', closingFence) + 1;
  const doc = YAML.parseDocument(text.slice(yamlStart, closingFence));
  const node = doc.get('supersedes', true);

  if (node === undefined) {
    return insertionAt(text, closingFence, `supersedes:${eol}  - ${entry}${eol}`);
  }
  const existing = isSeq(node) ? node.items.map((i) => (isScalar(i) ? String(i.value) : '')) : isScalar(node) ? [String(node.value ?? '')] : [];
  if (existing.includes(supersededPath)) return null;

  if (isSeq(node) && !node.flow && node.items.length > 0) {
    const first = node.items[0]!;
    const last = node.items[node.items.length - 1]!;
    if (!isScalar(first) || !isScalar(last) || !first.range || !last.range) throw new Error('supersedes: every entry must be a path');
    const firstStart = yamlStart + first.range[0];
    const lineStart = text.lastIndexOf('\n', firstStart - 1) + 1;
    const itemPrefix = text.slice(lineStart, firstStart);
    return insertionAt(text, yamlStart + last.range[1], `${eol}${itemPrefix}${entry}`);
  }
  if (isCollection(node) && !isSeq(node)) throw new Error('supersedes: must be a list of paths');
  const range = (node as { range?: [number, number, number] }).range;
  if (!range) throw new Error('supersedes: unreadable value');
  const start = offsetToPosition(text, yamlStart + range[0]);
  const end = offsetToPosition(text, yamlStart + range[1]);
  const values = [...existing.filter(Boolean), supersededPath].map(yamlScalar);
  return { startLine: start.line, startColumn: start.column, endLine: end.line, endColumn: end.column, newText: `[${values.join(', ')}]` };
}

export function applyTextEdit(text: string, edit: TextEdit): string {
  const lineOffsets = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') lineOffsets.push(i + 1);
  const offset = (line: number, column: number) => (lineOffsets[line] ?? text.length) + column;
  return text.slice(0, offset(edit.startLine, edit.startColumn)) + edit.newText + text.slice(offset(edit.endLine, edit.endColumn));
}
