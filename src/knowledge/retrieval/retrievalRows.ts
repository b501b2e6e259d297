import type { PassageRow } from '../indexing';
import type { LexicalState, Priority, SourceRecord } from '../campaign';
import type { PassageIdentity, SelectedPassage } from './retrievalTypes';

/** A passage with the source fields retrieval decides on, as both candidate paths read it. */
export interface CandidateRow extends Omit<PassageRow, 'campaign_id'> {
  path: string;
  title: string;
  enabled: number;
  visibility: 'normal' | 'hidden';
  always_include: number;
  priority: Priority;
  tags: string;
  entities: string;
  lexical_state: string;
  duplicate_of: string | null;
}

export const CANDIDATE_COLUMNS = `p.rowid AS rowid, p.id, p.source_id, p.idx, p.class, p.heading_path, p.text, p.token_count,
  p.content_hash, p.start_line, p.end_line, s.path, s.title, s.enabled, s.visibility, s.always_include, s.priority,
  s.tags, s.entities, s.lexical_state, s.duplicate_of`;

/** SQL for "this source may reach this stage at all", shared by every candidate query. */
export { ELIGIBLE_SQL as ELIGIBLE } from '../campaign';

/** The source fields of a candidate row, as the campaign's source rules read them. */
export function rowSource(row: CandidateRow): Pick<SourceRecord, 'enabled' | 'lexicalState' | 'visibility' | 'class' | 'alwaysInclude'> {
  return { enabled: row.enabled === 1, lexicalState: row.lexical_state as LexicalState, visibility: row.visibility, class: row.class, alwaysInclude: row.always_include === 1 };
}


/** Which passage a row is, as every record of it names it. */
export function rowIdentity(row: Pick<CandidateRow, 'id' | 'source_id' | 'path' | 'title' | 'class'>, headingPath: string[], tokenCount: number): PassageIdentity {
  return { passageId: row.id, sourceId: row.source_id, sourcePath: row.path, sourceTitle: row.title, class: row.class, headingPath, tokenCount };
}

/** A passage row as a prompt receives it (a narrator's turn: hidden canon is sent as secret). */
export function rowSelected(
  row: Pick<CandidateRow, 'id' | 'source_id' | 'path' | 'title' | 'class' | 'text' | 'visibility' | 'start_line' | 'end_line'>,
  headingPath: string[],
  tokenCount: number,
  score: number | null,
  reason: string,
): SelectedPassage {
  return {
    ...rowIdentity(row, headingPath, tokenCount),
    text: row.text,
    hidden: row.visibility === 'hidden',
    score,
    reason,
    startLine: row.start_line,
    endLine: row.end_line,
  };
}

/** A candidate row's fields that are its source's: kept once per source, not once per passage. */
type SourceFields = Pick<CandidateRow, 'source_id' | 'path' | 'title' | 'enabled' | 'visibility' | 'always_include' | 'priority' | 'tags' | 'entities' | 'lexical_state' | 'duplicate_of'>;
/** A kept passage: its own fields, its source's (shared), and where its text lies in the text blocks. */
type KeptPassage = Omit<CandidateRow, keyof SourceFields | 'text'> & { source: SourceFields; block: Buffer; start: number; end: number; textLength: number };

/** Bytes of one block of kept text: a thousand passages share one buffer outside V8's heap. */
const TEXT_BLOCK = 1 << 20;

/**
 * Candidate rows kept across turns with as little as possible on V8's heap: every object kept survives into
 * its old generation, and V8 widens its young generation for what survives (docs/benchmarks.md, issue 50).
 * A passage's text is kept as UTF-8 in large buffers outside the heap, and its source's fields once per
 * source; each turn gets rows of its own (see KeptRow), which die young.
 */
export class KeptRows {
  private readonly passages = new Map<number, KeptPassage>();
  private readonly sources = new Map<string, SourceFields>();
  private block = Buffer.alloc(0);
  private used = 0;
  /** Bytes of text kept. */
  textBytes = 0;

  has(rowid: number): boolean {
    return this.passages.has(rowid);
  }

  keep(row: CandidateRow): void {
    let source = this.sources.get(row.source_id);
    if (!source) {
      const { source_id, path, title, enabled, visibility, always_include, priority, tags, entities, lexical_state, duplicate_of } = row;
      this.sources.set(row.source_id, (source = { source_id, path, title, enabled, visibility, always_include, priority, tags, entities, lexical_state, duplicate_of }));
    }
    const length = Buffer.byteLength(row.text);
    if (this.used + length > this.block.length) {
      this.block = Buffer.allocUnsafeSlow(Math.max(TEXT_BLOCK, length));
      this.used = 0;
    }
    const start = this.used;
    this.used += this.block.write(row.text, start, 'utf8');
    this.textBytes += length;
    const { rowid, id, idx, heading_path, token_count, content_hash, start_line, end_line } = row;
    this.passages.set(rowid, { rowid, id, idx, class: row.class, heading_path, token_count, content_hash, start_line, end_line, source, block: this.block, start, end: this.used, textLength: row.text.length });
  }

  row(rowid: number): CandidateRow | undefined {
    const kept = this.passages.get(rowid);
    return kept && new KeptRow(kept);
  }
}

/** A kept passage's row for one turn: its text is decoded only when read (most candidates' never are). */
class KeptRow implements CandidateRow {
  readonly rowid: number;
  readonly id: string;
  readonly source_id: string;
  readonly idx: number;
  readonly class: CandidateRow['class'];
  readonly heading_path: string;
  readonly token_count: number;
  readonly content_hash: string;
  readonly start_line: number;
  readonly end_line: number;
  readonly path: string;
  readonly title: string;
  readonly enabled: number;
  readonly visibility: CandidateRow['visibility'];
  readonly always_include: number;
  readonly priority: CandidateRow['priority'];
  readonly tags: string;
  readonly entities: string;
  readonly lexical_state: string;
  readonly duplicate_of: string | null;
  readonly textLength: number;
  private readonly block: Buffer;
  private readonly start: number;
  private readonly end: number;

  constructor(kept: KeptPassage) {
    const source = kept.source;
    this.rowid = kept.rowid;
    this.id = kept.id;
    this.source_id = source.source_id;
    this.idx = kept.idx;
    this.class = kept.class;
    this.heading_path = kept.heading_path;
    this.token_count = kept.token_count;
    this.content_hash = kept.content_hash;
    this.start_line = kept.start_line;
    this.end_line = kept.end_line;
    this.path = source.path;
    this.title = source.title;
    this.enabled = source.enabled;
    this.visibility = source.visibility;
    this.always_include = source.always_include;
    this.priority = source.priority;
    this.tags = source.tags;
    this.entities = source.entities;
    this.lexical_state = source.lexical_state;
    this.duplicate_of = source.duplicate_of;
    this.textLength = kept.textLength;
    this.block = kept.block;
    this.start = kept.start;
    this.end = kept.end;
  }

  get text(): string {
    return this.block.toString('utf8', this.start, this.end);
  }
}

/** A row's text's length (UTF-16 code units, as `text.length`), without decoding a kept row's text. */
export function textLength(row: CandidateRow): number {
  return row instanceof KeptRow ? row.textLength : row.text.length;
}
