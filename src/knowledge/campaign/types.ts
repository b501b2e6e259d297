// Shared vocabulary of the knowledge core. Every surface (CLI, extension, tests) speaks these types.

export const KNOWLEDGE_CLASSES = ['canon', 'reference', 'inspiration'] as const;
export type KnowledgeClass = (typeof KNOWLEDGE_CLASSES)[number];

export const VISIBILITIES = ['normal', 'hidden'] as const;
/** `hidden` = narrator-only: reaches the narrator marked secret, never player-facing text. */
export type Visibility = (typeof VISIBILITIES)[number];

export const PRIORITIES = ['low', 'normal', 'high'] as const;
export type Priority = (typeof PRIORITIES)[number];

export const SCOPES = ['invariant', 'initial', 'descriptive', 'historical'] as const;
export type Scope = (typeof SCOPES)[number];

/** SillyTavern's `selectiveLogic` numbers, in order: 0 AND ANY, 1 NOT ALL, 2 NOT ANY, 3 AND ALL. */
export const SELECTIVE_LOGIC = ['and_any', 'not_all', 'not_any', 'and_all'] as const;
export type SelectiveLogic = (typeof SELECTIVE_LOGIC)[number];

/** Where a source's class came from, so every surface can say why a file is Canon. */
export type ClassOrigin =
  | { kind: 'front-matter' }
  | { kind: 'folder-rule'; folder: string }
  | { kind: 'campaign-default' };

export type LexicalState = 'pending' | 'ready' | 'error' | 'duplicate';
export type SemanticState = 'off' | 'pending' | 'ready' | 'error' | 'stale';

/** A problem with one file, located so the editor can show it (lines are 1-based). */
export interface SourceIssue {
  severity: 'error' | 'warning';
  code: string;
  message: string;
  line?: number;
}

export interface SourceRecord {
  id: string;
  campaignId: string;
  /** Campaign-relative POSIX path. */
  path: string;
  title: string;
  class: KnowledgeClass;
  classOrigin: ClassOrigin;
  enabled: boolean;
  visibility: Visibility;
  alwaysInclude: boolean;
  priority: Priority;
  scope: Scope | null;
  tags: string[];
  entities: string[];
  notes: string | null;
  sha256: string;
  size: number;
  mtimeMs: number;
  importedAt: string;
  updatedAt: string;
  parserVersion: number;
  chunkingVersion: number;
  lexicalState: LexicalState;
  semanticState: SemanticState;
  duplicateOf: string | null;
  issues: SourceIssue[];
}

/** A passage before it belongs to a source: ids and class are assigned by the importer. */
export interface DraftPassage {
  headingPath: string[];
  text: string;
  tokenCount: number;
  /** SHA-256 of the passage text as indexed (NFC); the embedding cache is keyed by it. */
  contentHash: string;
  /** 1-based inclusive line range in the original file. */
  startLine: number;
  endLine: number;
}

export interface PassageRecord extends DraftPassage {
  id: string;
  sourceId: string;
  campaignId: string;
  index: number;
  class: KnowledgeClass;
}

/**
 * A source indexed by another parser or chunking is parsed again. 2: markdown-it replaced remark (CRLF
 * paragraphs, task-list boxes, footnote labels, table rows as written). The parser, not the chunking, so
 * the vectors of passages whose text did not change stay current. Chunking 4: markdown headings written
 * inside a front-matter value (Torys' `### The Farm`) head the text after them. 5: a passage running on into
 * a section outside its trail is headed by the trail they share, with its opening heading written in.
 * Parser 3: a file's `sillytavern.entry` fields are read into its triggers (SillyTavern's activation in play).
 * Parser 4: a World Info regex key the linear-time engine cannot run is a warning on its file.
 * Parser 5: with its uid (book order) and `character:` (whom `{{char}}` names).
 */
export const PARSER_VERSION = 5;
export const CHUNKING_VERSION = 5;
