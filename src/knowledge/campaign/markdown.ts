/** One ATX heading line (`## The Crypt ##`): its level and its text as written, closing hashes removed. */
export interface AtxHeading {
  level: number;
  text: string;
}

// CommonMark: up to three spaces of indent, 1–6 hashes, then a space; a closing run of hashes counts only after a space.
const ATX = /^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/;

/**
 * The heading a markdown line is, or null: every surface that reads headings line by line asks this.
 * A heading with no text names nothing (the chunker skips it too), so it is null as well.
 */
export function atxHeading(line: string): AtxHeading | null {
  const match = ATX.exec(line);
  return match && match[2] ? { level: match[1]!.length, text: match[2] } : null;
}
