/** A replacement of one range; lines and columns are 0-based, as in editors. */
export interface TextEdit {
  startLine: number;
  startColumn: number;
  endLine: number;
  endColumn: number;
  newText: string;
}

function positionAt(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split('\n').length - 1;
  return { line, column: offset - (before.lastIndexOf('\n') + 1) };
}

/**
 * The smallest single edit that turns `before` into `after`, or null when they are equal: an open editor's
 * cursor, folding and undo stack see the changed span, not a whole-file rewrite.
 */
export function changeBetween(before: string, after: string): TextEdit | null {
  if (before === after) return null;
  let start = 0;
  while (start < before.length && start < after.length && before[start] === after[start]) start++;
  let end = 0;
  while (end < before.length - start && end < after.length - start && before[before.length - 1 - end] === after[after.length - 1 - end]) end++;
  const from = positionAt(before, start);
  const to = positionAt(before, before.length - end);
  return { startLine: from.line, startColumn: from.column, endLine: to.line, endColumn: to.column, newText: after.slice(start, after.length - end) };
}

export function applyTextEdit(text: string, edit: TextEdit): string {
  const lineOffsets = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') lineOffsets.push(i + 1);
  const offset = (line: number, column: number) => (lineOffsets[line] ?? text.length) + column;
  return text.slice(0, offset(edit.startLine, edit.startColumn)) + edit.newText + text.slice(offset(edit.endLine, edit.endColumn));
}
