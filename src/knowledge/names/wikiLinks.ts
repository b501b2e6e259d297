/**
 * `[[wiki links]]` as writers type them. Four spellings are read:
 * - `[[Page]]`;
 * - `[[Page|shown text]]` and `[[Page#Heading]]` (Obsidian, Foam);
 * - `[[Heading:Page]]` (Torys: the heading `Bekebel Citadel` on the page `Bekebel`).
 * The colon form is ambiguous in general (`[[Oro-oro: a note]]`), so both readings are kept and the
 * entity model decides which one names something.
 */

export interface WikiLink {
  /** 0-based line and UTF-16 columns of the whole `[[…]]`. */
  line: number;
  start: number;
  end: number;
  /** The page the link names, as written, and its columns (what a rename replaces). */
  target: string;
  targetStart: number;
  targetEnd: number;
  /** A heading inside the page, when the link names one. */
  heading?: string;
  /** `[[A:B]]` read the other way round: page `A`, heading `B`. */
  alternative?: { target: string; targetStart: number; targetEnd: number; heading: string };
}

const LINK = /\[\[([^\][\n]+?)\]\]/g;

function trimmedSpan(text: string, from: number, to: number): { text: string; start: number; end: number } {
  const raw = text.slice(from, to);
  const lead = raw.length - raw.trimStart().length;
  const trimmed = raw.trim();
  return { text: trimmed, start: from + lead, end: from + lead + trimmed.length };
}

/** The links on one line of text. */
export function findWikiLinks(lineText: string, line: number): WikiLink[] {
  const links: WikiLink[] = [];
  for (const match of lineText.matchAll(LINK)) {
    const start = match.index;
    const innerStart = start + 2;
    const inner = match[1]!;
    const innerEnd = innerStart + inner.length;
    const end = innerEnd + 2;
    const pipe = inner.indexOf('|');
    const pageEnd = pipe === -1 ? innerEnd : innerStart + pipe;
    const hash = inner.slice(0, pageEnd - innerStart).indexOf('#');
    if (hash !== -1) {
      const page = trimmedSpan(lineText, innerStart, innerStart + hash);
      const heading = trimmedSpan(lineText, innerStart + hash + 1, pageEnd).text;
      links.push({ line, start, end, target: page.text, targetStart: page.start, targetEnd: page.end, ...(heading ? { heading } : {}) });
      continue;
    }
    const colon = pipe === -1 ? inner.indexOf(':') : -1;
    if (colon !== -1) {
      const first = trimmedSpan(lineText, innerStart, innerStart + colon);
      const second = trimmedSpan(lineText, innerStart + colon + 1, innerEnd);
      if (first.text && second.text) {
        links.push({
          line, start, end,
          target: second.text, targetStart: second.start, targetEnd: second.end, heading: first.text,
          alternative: { target: first.text, targetStart: first.start, targetEnd: first.end, heading: second.text },
        });
        continue;
      }
    }
    const page = trimmedSpan(lineText, innerStart, pageEnd);
    if (page.text) links.push({ line, start, end, target: page.text, targetStart: page.start, targetEnd: page.end });
  }
  return links;
}

/** The text before `column` ends inside an unclosed `[[`: what has been typed of the target so far. */
export function openLinkPrefix(lineText: string, column: number): string | undefined {
  const before = lineText.slice(0, column);
  const open = before.lastIndexOf('[[');
  if (open === -1 || before.indexOf(']]', open) !== -1) return undefined;
  const typed = before.slice(open + 2);
  return /[|#\n]/.test(typed) ? undefined : typed;
}
