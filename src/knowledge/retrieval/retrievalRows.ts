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
