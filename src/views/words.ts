/** "1 passage", "3 passages": a count with its noun in the number the writer reads. */
export function plural(count: number, noun: string, nounPlural = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : nounPlural}`;
}
