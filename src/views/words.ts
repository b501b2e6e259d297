/** "1 passage", "3 passages": a count with its noun in the number the writer reads. */
export function plural(count: number, noun: string, nounPlural = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : nounPlural}`;
}

/**
 * `text` broken between words into lines of at most `width` characters (a longer word stands alone): a tree
 * row cannot wrap, and one cut at the side bar's width hides the end of what it says.
 */
export function shortLines(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  return line ? [...lines, line] : lines;
}
