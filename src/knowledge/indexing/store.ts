import fs from 'node:fs';
import type { Campaign } from '../campaign';
import { INDEX_MIGRATIONS } from './indexSchema';
import type { Statement } from 'better-sqlite3';
import { assertFts5, isDamagedDatabase, openDatabase, statementCache, type Db } from './sqlite';
import { ftsHeading, ftsText } from './indexText';
import type { ClassOrigin, PassageRecord, SourceIssue, SourceRecord, SourceTriggers } from '../campaign';

interface SourceRow {
  id: string;
  campaign_id: string;
  path: string;
  title: string;
  class: SourceRecord['class'];
  class_origin: string;
  enabled: number;
  visibility: SourceRecord['visibility'];
  always_include: number;
  priority: SourceRecord['priority'];
  scope: SourceRecord['scope'];
  tags: string;
  entities: string;
  notes: string | null;
  sha256: string;
  size: number;
  mtime_ms: number;
  imported_at: string;
  updated_at: string;
  parser_version: number;
  chunking_version: number;
  lexical_state: SourceRecord['lexicalState'];
  semantic_state: SourceRecord['semanticState'];
  duplicate_of: string | null;
  issues: string;
}

export interface PassageRow {
  rowid: number;
  id: string;
  source_id: string;
  campaign_id: string;
  idx: number;
  class: PassageRecord['class'];
  heading_path: string;
  text: string;
  token_count: number;
  content_hash: string;
  start_line: number;
  end_line: number;
}

function toSource(row: SourceRow): SourceRecord {
  return {
    id: row.id,
    campaignId: row.campaign_id,
    path: row.path,
    title: row.title,
    class: row.class,
    classOrigin: JSON.parse(row.class_origin) as ClassOrigin,
    enabled: row.enabled === 1,
    visibility: row.visibility,
    alwaysInclude: row.always_include === 1,
    priority: row.priority,
    scope: row.scope,
    tags: JSON.parse(row.tags) as string[],
    entities: JSON.parse(row.entities) as string[],
    notes: row.notes,
    sha256: row.sha256,
    size: row.size,
    mtimeMs: row.mtime_ms,
    importedAt: row.imported_at,
    updatedAt: row.updated_at,
    parserVersion: row.parser_version,
    chunkingVersion: row.chunking_version,
    lexicalState: row.lexical_state,
    semanticState: row.semantic_state,
    duplicateOf: row.duplicate_of,
    issues: JSON.parse(row.issues) as SourceIssue[],
  };
}

export function toPassage(row: PassageRow): PassageRecord {
  return {
    id: row.id,
    sourceId: row.source_id,
    campaignId: row.campaign_id,
    index: row.idx,
    class: row.class,
    headingPath: JSON.parse(row.heading_path) as string[],
    text: row.text,
    tokenCount: row.token_count,
    contentHash: row.content_hash,
    startLine: row.start_line,
    endLine: row.end_line,
  };
}

/**
 * Every column of a source but its text: listing and looking up sources is metadata; the text (up to the
 * size cap per file, 27 MB for the SRD x10) is read only where it is shown, by `getSourceContent`.
 */
const SOURCE_COLUMNS = `id, campaign_id, path, title, class, class_origin, enabled, visibility, always_include, priority, scope,
  tags, entities, notes, sha256, size, mtime_ms, imported_at, updated_at, parser_version, chunking_version, lexical_state,
  semantic_state, duplicate_of, issues`;

/**
 * Page cache per open index. Nothing is memory-mapped: every page a mapped file is read through stays in the
 * process's memory, and the kernel maps the pages around each one read, so a search over SRD x30 (a 240 MB
 * index) grew to 585–628 MB; read through a 16 MB cache, 380–400 MB for the same answers and 3% more CPU
 * (a 64 MB cache: 430 MB, no faster). The floor's own search holds 82 MB. A full import needs it too: the
 * indexes keyed by hashes and ids (~6 MB at SRD x10) are written all over by every batch of files, and with
 * SQLite's default 2 MB their pages were read back at every batch (~7% more CPU for a fresh SRD x10).
 */
const INDEX_CACHE_KIB = 16 * 1024;
/**
 * Page cache while an import writes. Each batch dirties pages all over the indexes keyed by hashes and ids
 * (~20 MB at SRD x30) besides the pages it appends; past 16 MB SQLite spilled them to the WAL mid-batch and
 * read them back (and every frame after the first rewritten one, to checksum them again at commit): SRD x30
 * read 320,000 pages for a 60,000-page index. At 32 MB nothing spills: 195,000, ten copies' 40,000 three times over.
 */
const BULK_CACHE_KIB = 32 * 1024;

export type SourceStat = Pick<SourceRecord, 'id' | 'path' | 'class' | 'classOrigin' | 'sha256' | 'size' | 'mtimeMs' | 'parserVersion' | 'chunkingVersion' | 'lexicalState' | 'issues'>;

/**
 * The derived knowledge index of one campaign. Every write of a source — its row, its passages and their
 * FTS rows — is one transaction, so a failure leaves the previous state, never half a source.
 */
export class KnowledgeStore {
  readonly db: Db;

  /** Compiled once per store: importing a large library runs the same few statements per file. */
  readonly statement: (sql: string) => Statement;

  private constructor(
    readonly campaignId: string,
    db: Db,
  ) {
    this.db = db;
    this.statement = statementCache(db);
  }

  /** Where a damaged index file was moved when this store replaced it with a new, empty one. */
  damagedIndexMovedTo: string | undefined;

  /**
   * Opens (or creates) the index. A damaged index file is moved aside, named in `damagedIndexMovedTo`, and
   * a new one started: the index is derived from the campaign's files, so the next import rebuilds all of it.
   */
  static open(campaign: Pick<Campaign, 'id' | 'indexPath'>): KnowledgeStore {
    let db: Db;
    let movedTo: string | undefined;
    try {
      db = openDatabase(campaign.indexPath, INDEX_MIGRATIONS, 'normal');
    } catch (error) {
      if (!isDamagedDatabase(error)) throw error;
      movedTo = `${campaign.indexPath}.damaged-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      fs.renameSync(campaign.indexPath, movedTo);
      for (const suffix of ['-wal', '-shm']) fs.rmSync(`${campaign.indexPath}${suffix}`, { force: true });
      db = openDatabase(campaign.indexPath, INDEX_MIGRATIONS, 'normal');
    }
    // The SRD ×10 index is ~90 MB; SQLite's default 2 MB page cache would reread it on every search.
    db.pragma(`cache_size = -${INDEX_CACHE_KIB}`);
    assertFts5(db);
    const store = new KnowledgeStore(campaign.id, db);
    store.damagedIndexMovedTo = movedTo;
    return store;
  }

  /** While a bulk import writes inside one transaction of its own: whether a write failed in it (see `atomically`). */
  private bulk: { failed: boolean } | undefined;

  /**
   * Runs `work` all or nothing: as a transaction (a savepoint inside another), or, during a bulk import, as
   * part of the import's one transaction, which is rolled back whole when a write fails (`endBulk`). A
   * savepoint per source would make FTS5 flush its pending terms into a segment of their own at every file.
   */
  atomically<T>(work: () => T): T {
    const bulk = this.bulk;
    if (!bulk) return this.db.transaction(work)();
    try {
      return work();
    } catch (error) {
      bulk.failed = true;
      throw error;
    }
  }

  /** Writes from here to `endBulk` run in the transaction the caller holds (see `atomically`). */
  beginBulk(): void {
    if (!this.db.inTransaction) throw new Error('a bulk import writes inside a transaction it holds');
    this.bulk = { failed: false };
    this.db.pragma(`cache_size = -${BULK_CACHE_KIB}`);
  }

  /** Ends bulk writing; true when a write failed, and the caller's transaction must be rolled back whole. */
  endBulk(): boolean {
    const failed = this.bulk?.failed ?? false;
    this.bulk = undefined;
    // Back to the reading size: SQLite frees the pages above it.
    this.db.pragma(`cache_size = -${INDEX_CACHE_KIB}`);
    return failed;
  }

  /** For tests and throwaway previews. */
  static inMemory(campaignId: string): KnowledgeStore {
    return KnowledgeStore.open({ id: campaignId, indexPath: ':memory:' });
  }

  close(): void {
    this.db.close();
  }

  /**
   * Replaces a source and all its passages atomically. `content` is the original text as read. `triggers`
   * replaces what the source declares it is triggered by (null: nothing); undefined keeps what is stored.
   * `supersedes`, its front matter's list of the paths it supersedes, likewise.
   */
  writeSource(source: SourceRecord, content: string, passages: readonly PassageRecord[], triggers?: SourceTriggers | null, supersedes?: readonly string[]): void {
    if (source.campaignId !== this.campaignId) {
      throw new Error(`source ${source.path} belongs to campaign ${source.campaignId}, not ${this.campaignId}`);
    }
    this.atomically(() => {
      this
        .statement(
          `INSERT INTO sources (id, campaign_id, path, title, class, class_origin, enabled, visibility,
             always_include, priority, scope, tags, entities, notes, sha256, size, mtime_ms, imported_at,
             updated_at, parser_version, chunking_version, lexical_state, semantic_state, duplicate_of,
             issues)
           VALUES (@id, @campaign_id, @path, @title, @class, @class_origin, @enabled, @visibility,
             @always_include, @priority, @scope, @tags, @entities, @notes, @sha256, @size, @mtime_ms,
             @imported_at, @updated_at, @parser_version, @chunking_version, @lexical_state,
             @semantic_state, @duplicate_of, @issues)
           ON CONFLICT (id) DO UPDATE SET
             path = excluded.path, title = excluded.title, class = excluded.class,
             class_origin = excluded.class_origin, enabled = excluded.enabled,
             visibility = excluded.visibility, always_include = excluded.always_include,
             priority = excluded.priority, scope = excluded.scope, tags = excluded.tags,
             entities = excluded.entities, notes = excluded.notes, sha256 = excluded.sha256,
             size = excluded.size, mtime_ms = excluded.mtime_ms, updated_at = excluded.updated_at,
             parser_version = excluded.parser_version, chunking_version = excluded.chunking_version,
             lexical_state = excluded.lexical_state, semantic_state = excluded.semantic_state,
             duplicate_of = excluded.duplicate_of, issues = excluded.issues`,
        )
        .run({
          id: source.id,
          campaign_id: source.campaignId,
          path: source.path,
          title: source.title,
          class: source.class,
          class_origin: JSON.stringify(source.classOrigin),
          enabled: source.enabled ? 1 : 0,
          visibility: source.visibility,
          always_include: source.alwaysInclude ? 1 : 0,
          priority: source.priority,
          scope: source.scope,
          tags: JSON.stringify(source.tags),
          entities: JSON.stringify(source.entities),
          notes: source.notes,
          sha256: source.sha256,
          size: source.size,
          mtime_ms: Math.trunc(source.mtimeMs),
          imported_at: source.importedAt,
          updated_at: source.updatedAt,
          parser_version: source.parserVersion,
          chunking_version: source.chunkingVersion,
          lexical_state: source.lexicalState,
          semantic_state: source.semanticState,
          duplicate_of: source.duplicateOf,
          issues: JSON.stringify(source.issues),
        });
      this
        .statement('INSERT INTO source_contents (source_id, content) VALUES (?, ?) ON CONFLICT (source_id) DO UPDATE SET content = excluded.content')
        .run(source.id, content);
      this.replacePassages(source, passages);
      if (triggers !== undefined) {
        this.statement('DELETE FROM source_triggers WHERE source_id = ?').run(source.id);
        if (triggers) {
          this.statement('INSERT INTO source_triggers (source_id, campaign_id, triggers) VALUES (?, ?, ?)').run(source.id, source.campaignId, JSON.stringify(triggers));
        }
      }
      if (supersedes !== undefined) {
        this.statement('DELETE FROM source_supersedes WHERE source_id = ?').run(source.id);
        const insert = this.statement('INSERT OR IGNORE INTO source_supersedes (source_id, campaign_id, target) VALUES (?, ?, ?)');
        for (const target of supersedes) insert.run(source.id, source.campaignId, target);
      }
    });
  }

  /** Every `supersedes:` declaration of this campaign's sources, by the declaring source's id and path, as indexed. */
  supersessions(): { sourceId: string; path: string; target: string }[] {
    return this.statement(
      `SELECT s.id AS sourceId, s.path AS path, d.target AS target FROM source_supersedes d CROSS JOIN sources s ON s.id = d.source_id WHERE d.campaign_id = ?`,
    ).all(this.campaignId) as { sourceId: string; path: string; target: string }[];
  }

  /** Records a file's size and mtime after it was found unchanged by its content, so the next run can trust its stat. */
  recordFileStat(sourceId: string, size: number, mtimeMs: number): void {
    this.statement('UPDATE sources SET size = ?, mtime_ms = ? WHERE id = ?').run(size, Math.trunc(mtimeMs), sourceId);
  }

  /** Removes the source, its passages and index rows. Play data (turn snapshots) is elsewhere and untouched. */
  deleteSource(sourceId: string): boolean {
    return this.atomically(() => {
      this.deletePassages(sourceId);
      return this.statement('DELETE FROM sources WHERE id = ?').run(sourceId).changes > 0;
    });
  }

  /**
   * Makes the source's passages these: a passage whose heading trail and text are what its place already
   * holds stays where it is (its line range, class and count updated in place), and only the others are
   * deleted and written again with their full-text rows. An edit to one paragraph of a long file rewrites
   * that passage, not the file's: a save writes a few pages, not every passage and its index entries.
   */
  private replacePassages(source: SourceRecord, passages: readonly PassageRecord[]): void {
    const rows = this.statement(
      'SELECT rowid, id, idx, class, heading_path, text, token_count, content_hash, start_line, end_line FROM passages WHERE source_id = ?',
    ).all(source.id) as Omit<PassageRow, 'source_id' | 'campaign_id'>[];
    const stored = new Map(rows.map((row) => [row.idx, row]));
    // Only what can differ for the same text under the same heading (and only when it does): an UPDATE
    // naming an indexed column rewrites that index's entry even when the value is the same.
    const update = this.statement('UPDATE passages SET class = ?, token_count = ?, content_hash = ?, start_line = ?, end_line = ? WHERE rowid = ?');
    const insertPassage = this.statement(
      `INSERT INTO passages (id, source_id, campaign_id, idx, class, heading_path, text, token_count,
         content_hash, start_line, end_line)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const insertFts = this.statement('INSERT INTO passages_fts (rowid, heading, body) VALUES (?, ?, ?)');
    const deleteRow = (rowid: number): void => {
      this.statement('DELETE FROM passages_fts WHERE rowid = ?').run(rowid);
      this.statement('DELETE FROM passages WHERE rowid = ?').run(rowid);
    };
    for (const p of passages) {
      const headingPath = JSON.stringify(p.headingPath);
      const held = stored.get(p.index);
      stored.delete(p.index);
      if (held && held.id === p.id && held.heading_path === headingPath && held.text === p.text) {
        const moved =
          held.class !== source.class || held.token_count !== p.tokenCount || held.content_hash !== p.contentHash || held.start_line !== p.startLine || held.end_line !== p.endLine;
        if (moved) update.run(source.class, p.tokenCount, p.contentHash, p.startLine, p.endLine, held.rowid);
        continue;
      }
      if (held) deleteRow(held.rowid);
      const { lastInsertRowid } = insertPassage.run(p.id, source.id, source.campaignId, p.index, source.class, headingPath, p.text, p.tokenCount, p.contentHash, p.startLine, p.endLine);
      insertFts.run(lastInsertRowid, ftsHeading(p.headingPath), ftsText(p.text));
    }
    for (const gone of stored.values()) deleteRow(gone.rowid);
  }

  private deletePassages(sourceId: string): void {
    const rows = this.statement('SELECT rowid FROM passages WHERE source_id = ?').all(sourceId) as { rowid: number }[];
    const deleteFts = this.statement('DELETE FROM passages_fts WHERE rowid = ?');
    for (const row of rows) deleteFts.run(row.rowid);
    this.statement('DELETE FROM passages WHERE source_id = ?').run(sourceId);
  }

  /** What a run needs to tell an unchanged file by its stat, for every source: a fraction of `listSources`. */
  listSourceStats(): SourceStat[] {
    const rows = this.statement(
      `SELECT id, path, class, class_origin, sha256, size, mtime_ms, parser_version, chunking_version, lexical_state, issues FROM sources WHERE campaign_id = ?`,
    ).all(this.campaignId) as Pick<SourceRow, 'id' | 'path' | 'class' | 'class_origin' | 'sha256' | 'size' | 'mtime_ms' | 'parser_version' | 'chunking_version' | 'lexical_state' | 'issues'>[];
    return rows.map((row) => ({
      id: row.id,
      path: row.path,
      class: row.class,
      classOrigin: JSON.parse(row.class_origin) as ClassOrigin,
      sha256: row.sha256,
      size: row.size,
      mtimeMs: row.mtime_ms,
      parserVersion: row.parser_version,
      chunkingVersion: row.chunking_version,
      lexicalState: row.lexical_state,
      issues: JSON.parse(row.issues) as SourceIssue[],
    }));
  }

  listSources(): SourceRecord[] {
    return (this.statement(`SELECT ${SOURCE_COLUMNS} FROM sources WHERE campaign_id = ? ORDER BY path`).all(this.campaignId) as SourceRow[]).map(
      toSource,
    );
  }

  getSource(sourceId: string): SourceRecord | undefined {
    const row = this.statement(`SELECT ${SOURCE_COLUMNS} FROM sources WHERE id = ? AND campaign_id = ?`).get(sourceId, this.campaignId) as
      | SourceRow
      | undefined;
    return row && toSource(row);
  }

  getSourceByPath(relPath: string): SourceRecord | undefined {
    const row = this.statement(`SELECT ${SOURCE_COLUMNS} FROM sources WHERE path = ? AND campaign_id = ?`).get(relPath, this.campaignId) as
      | SourceRow
      | undefined;
    return row && toSource(row);
  }

  getSourceContent(sourceId: string): string | undefined {
    const row = this.statement('SELECT content FROM source_contents WHERE source_id = ?').get(sourceId) as { content: string } | undefined;
    return row?.content;
  }

  /**
   * The first row in `orderBy`'s order of those `sql` selects. They are read unordered first: nearly always
   * one or none match, and inside an import's transaction the sort of ORDER BY costs ~25 µs a statement
   * against ~2 µs for the lookup itself (a tenth of a fresh import's CPU, looked up per file and per
   * passage); the ordered statement runs only when several match.
   */
  firstMatch<T>(sql: string, orderBy: string, ...params: unknown[]): T | undefined {
    const rows = this.statement(sql).all(...params) as T[];
    return rows.length > 1 ? (this.statement(`${sql} ORDER BY ${orderBy} LIMIT 1`).get(...params) as T) : rows[0];
  }

  /** The source already holding this exact content, if another one does (the first in path order). */
  findByHash(sha256: string, exceptId: string): SourceRecord | undefined {
    // `+path`: ordering by the (campaign_id, path) index would walk every source; the hash index finds the few.
    const sql = `SELECT ${SOURCE_COLUMNS} FROM sources WHERE campaign_id = ? AND sha256 = ? AND id <> ? AND lexical_state = 'ready'`;
    const row = this.firstMatch<SourceRow>(sql, '+path', this.campaignId, sha256, exceptId);
    return row && toSource(row);
  }

  /** Which sources hold the passages each source repeats and leaves out (a whole duplicate names its holder itself). */
  repeatedPassageHolders(): { sourceId: string; holderId: string }[] {
    const sql = `SELECT DISTINCT d.source_id AS sourceId, d.holder_id AS holderId FROM duplicate_passages d
                 JOIN sources s ON s.id = d.source_id WHERE s.campaign_id = ? ORDER BY d.source_id, d.holder_id`;
    return this.statement(sql).all(this.campaignId) as {
      sourceId: string;
      holderId: string;
    }[];
  }

  listPassages(sourceId: string): PassageRecord[] {
    return (this.statement('SELECT * FROM passages WHERE source_id = ? ORDER BY idx').all(sourceId) as PassageRow[]).map(toPassage);
  }

  getPassage(passageId: string): PassageRecord | undefined {
    const row = this.statement('SELECT * FROM passages WHERE id = ?').get(passageId) as PassageRow | undefined;
    return row && toPassage(row);
  }

  /** True while the index holds no source of this campaign: new, moved aside when damaged, or never built. */
  isEmpty(): boolean {
    return this.statement('SELECT 1 FROM sources WHERE campaign_id = ? LIMIT 1').get(this.campaignId) === undefined;
  }

  counts(): { sources: number; passages: number } {
    const sources = (this.statement('SELECT count(*) n FROM sources WHERE campaign_id = ?').get(this.campaignId) as { n: number }).n;
    const passages = (this.statement('SELECT count(*) n FROM passages WHERE campaign_id = ?').get(this.campaignId) as { n: number }).n;
    return { sources, passages };
  }

  /** Empties the derived index (sources, passages, FTS) while keeping the embedding cache, which is keyed by content. */
  clear(): void {
    this.db.transaction(() => {
      this.db.exec('DELETE FROM passages_fts; DELETE FROM passages; DELETE FROM source_triggers; DELETE FROM source_supersedes; DELETE FROM source_contents; DELETE FROM sources;');
    })();
  }
}
