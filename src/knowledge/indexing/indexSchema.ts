import type { Db, Migration } from './sqlite';
import { ftsHeading, ftsText } from './indexText';
import { splitFrontMatter } from '../campaign';

/** Writes the full-text rows of the passages `where` selects anew from their text, as an import writes them. */
function reindexPassages(db: Db, where: string): void {
  // Read all first: better-sqlite3 cannot write on a connection while a read is still being iterated.
  const rows = db.prepare(`SELECT rowid, heading_path, text FROM passages ${where}`).all() as { rowid: number; heading_path: string; text: string }[];
  const remove = db.prepare('DELETE FROM passages_fts WHERE rowid = ?');
  const insert = db.prepare('INSERT INTO passages_fts (rowid, heading, body) VALUES (?, ?, ?)');
  for (const row of rows) {
    remove.run(row.rowid);
    insert.run(row.rowid, ftsHeading(JSON.parse(row.heading_path) as string[]), ftsText(row.text));
  }
}

/**
 * The knowledge index (`<campaign>/.storyteller/index.db`) is derived from the campaign's files and can be
 * deleted and rebuilt at any time. Play data lives in a separate database (playSchema.ts, beside this file) so that
 * a rebuild can never touch it.
 */
export const INDEX_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'sources, passages, FTS5 index, content-hash keyed embeddings, model calibrations',
    up(db) {
      db.exec(`
        CREATE TABLE sources (
          id               TEXT PRIMARY KEY,
          campaign_id      TEXT NOT NULL,
          path             TEXT NOT NULL,
          title            TEXT NOT NULL,
          class            TEXT NOT NULL CHECK (class IN ('canon','reference','inspiration')),
          class_origin     TEXT NOT NULL,            -- JSON ClassOrigin
          enabled          INTEGER NOT NULL,
          visibility       TEXT NOT NULL CHECK (visibility IN ('normal','hidden')),
          always_include   INTEGER NOT NULL,
          priority         TEXT NOT NULL CHECK (priority IN ('low','normal','high')),
          scope            TEXT,
          tags             TEXT NOT NULL,            -- JSON string[]
          entities         TEXT NOT NULL,            -- JSON string[]
          notes            TEXT,
          sha256           TEXT NOT NULL,
          size             INTEGER NOT NULL,
          mtime_ms         INTEGER NOT NULL,
          imported_at      TEXT NOT NULL,
          updated_at       TEXT NOT NULL,
          parser_version   INTEGER NOT NULL,
          chunking_version INTEGER NOT NULL,
          lexical_state    TEXT NOT NULL,
          semantic_state   TEXT NOT NULL,
          duplicate_of     TEXT,
          issues           TEXT NOT NULL,            -- JSON SourceIssue[]
          content          TEXT NOT NULL,            -- original text as read (display, export)
          UNIQUE (campaign_id, path)
        );
        CREATE INDEX sources_by_hash ON sources (campaign_id, sha256);

        CREATE TABLE passages (
          rowid        INTEGER PRIMARY KEY,
          id           TEXT NOT NULL UNIQUE,
          source_id    TEXT NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
          campaign_id  TEXT NOT NULL,
          idx          INTEGER NOT NULL,
          class        TEXT NOT NULL,
          heading_path TEXT NOT NULL,                -- JSON string[]
          text         TEXT NOT NULL,
          token_count  INTEGER NOT NULL,
          content_hash TEXT NOT NULL,
          start_line   INTEGER NOT NULL,
          end_line     INTEGER NOT NULL
        );
        CREATE INDEX passages_by_source ON passages (source_id, idx);
        CREATE INDEX passages_by_hash ON passages (content_hash);

        -- Rows are written and deleted together with their passage, inside the source's transaction.
        -- Text is NFC-normalized for matching; the passage row keeps the display text.
        CREATE VIRTUAL TABLE passages_fts USING fts5 (
          heading, body,
          tokenize = 'unicode61 remove_diacritics 2'
        );

        -- Keyed by what was embedded, not by which passage: an unchanged passage keeps its vector
        -- across edits of its neighbours, reindexing and rebuilds.
        CREATE TABLE embeddings (
          model            TEXT NOT NULL,
          content_hash     TEXT NOT NULL,
          dimensions       INTEGER NOT NULL,
          chunking_version INTEGER NOT NULL,
          vector           BLOB NOT NULL,            -- Float32Array bytes
          created_at       TEXT NOT NULL,
          PRIMARY KEY (model, content_hash)
        );

        -- A semantic floor is only meaningful for the model it was measured on.
        CREATE TABLE embedding_models (
          model         TEXT PRIMARY KEY,
          dimensions    INTEGER NOT NULL,
          floor         REAL,
          calibrated_at TEXT,
          sample_pairs  INTEGER NOT NULL DEFAULT 0,
          details       TEXT NOT NULL DEFAULT '{}'  -- JSON: distribution summary
        );
      `);
    },
  },
  {
    version: 2,
    description: 'passages left out because another source of the campaign already holds the same text',
    up(db) {
      db.exec(`
        -- A passage repeated from another source (the SRD's "(Alt)" compilations) is not indexed twice; this
        -- records what was left out and which source holds it, so the importer can restore the passage when
        -- the holder changes or goes away.
        CREATE TABLE duplicate_passages (
          source_id    TEXT NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
          idx          INTEGER NOT NULL,
          content_hash TEXT NOT NULL,
          holder_id    TEXT NOT NULL,
          PRIMARY KEY (source_id, idx)
        );
        CREATE INDEX duplicate_passages_by_holder ON duplicate_passages (holder_id);
      `);
    },
  },
  {
    version: 3,
    description: 'indexes that let retrieval count passages and read entity names without scanning every row',
    up(db) {
      db.exec(`
        -- Term rarity needs the campaign's passage count on every query; source rows carry whole files,
        -- so reading their entity lists must come from an index, not the table.
        CREATE INDEX passages_by_campaign ON passages (campaign_id);
        CREATE INDEX sources_entities ON sources (campaign_id, enabled, entities) WHERE entities <> '[]';
      `);
    },
  },
  {
    version: 4,
    description: 'full-text index stems words (porter) and holds CJK text as character pairs',
    up(db) {
      db.exec(`
        DROP TABLE passages_fts;
        CREATE VIRTUAL TABLE passages_fts USING fts5 (
          heading, body,
          tokenize = 'porter unicode61 remove_diacritics 2'
        );
      `);
      // Refilled from the passages here, so search works before the next import re-chunks them.
      reindexPassages(db, '');
    },
  },
  {
    version: 6,
    description: 'the server an embedding model ran on, recorded with its vectors',
    up(db) {
      db.exec(`
        -- One model name on two servers may be two models (another build, another quantisation, another
        -- model entirely): vectors are only comparable with those the same server makes. NULL: made before
        -- this was recorded; the next embedding run checks them.
        ALTER TABLE embedding_models ADD COLUMN server TEXT;
      `);
    },
  },
  {
    version: 7,
    description: 'what makes a source eligible by being mentioned (its keys and names); always-included sources found without a scan',
    up(db) {
      db.exec(`
        -- Read on every query (cached until the index changes), so kept apart from the wide sources rows.
        -- JSON SourceTriggers; only sources that declare keys, entities or a title have a row.
        CREATE TABLE source_triggers (
          source_id   TEXT PRIMARY KEY REFERENCES sources (id) ON DELETE CASCADE,
          campaign_id TEXT NOT NULL,
          triggers    TEXT NOT NULL
        );
        CREATE INDEX source_triggers_by_campaign ON source_triggers (campaign_id);
        -- Every turn asks for the pinned sources; a handful among thousands must not cost a scan of all.
        CREATE INDEX sources_always_included ON sources (campaign_id) WHERE always_include = 1;
      `);
    },
  },
  {
    version: 8,
    description: 'index of whole-file duplicates by the source holding their text',
    up(db) {
      // A saved file re-checks the duplicates that depend on it; without this each save scanned every source.
      db.exec(`CREATE INDEX sources_by_duplicate_of ON sources (duplicate_of) WHERE duplicate_of IS NOT NULL;`);
    },
  },
  {
    version: 10,
    description: "a source's text kept apart from its row",
    up(db) {
      // With the text inline every source row spanned a page or more, so a run that only compares sizes and
      // mtimes read the whole library's text (27 MB at SRD x10), and so did every join through sources.
      db.exec(`
        CREATE TABLE source_contents (
          source_id TEXT PRIMARY KEY REFERENCES sources (id) ON DELETE CASCADE,
          content   TEXT NOT NULL                    -- original text as read (display, export)
        );
        INSERT INTO source_contents (source_id, content) SELECT id, content FROM sources;
        ALTER TABLE sources DROP COLUMN content;
      `);
    },
  },
  {
    version: 11,
    description: 'katakana words with a long-vowel mark (パーティー) held whole as character pairs',
    up(db) {
      // Only passages holding the mark index differently; an unchanged passage is never rewritten by an import.
      reindexPassages(db, "WHERE instr(text || heading_path, 'ー') > 0 OR instr(text || heading_path, 'ｰ') > 0");
    },
  },
  {
    version: 12,
    description: 'the full-text index keeps no copy of the text it indexes',
    up(db) {
      // Passages are read from their own table, never from the full-text one, whose copy of every passage's
      // text was written on each index run for nothing. Contentless, a row is still deleted by its rowid.
      db.exec(`
        DROP TABLE passages_fts;
        CREATE VIRTUAL TABLE passages_fts USING fts5 (
          heading, body,
          content = '', contentless_delete = 1,
          tokenize = 'porter unicode61 remove_diacritics 2'
        );
      `);
      reindexPassages(db, '');
    },
  },
  {
    version: 13,
    description: "passages' sizes, and which hold a [[link]], in indexes of their own: search never reads every passage's text",
    up(db) {
      // Every search asks the campaign's passage count and average length, and each candidate file's size:
      // computed from the text, that read every passage's text (some 200 MB of a 60,000-passage index, all
      // held in the search's memory through the memory map). Generated, so it is always the text's length.
      // It leads with the campaign, so it serves all the index by campaign did.
      db.exec(`
        ALTER TABLE passages ADD COLUMN chars INTEGER GENERATED ALWAYS AS (length(text)) VIRTUAL;
        CREATE INDEX passages_sizes ON passages (campaign_id, source_id, chars);
        DROP INDEX passages_by_campaign;
        -- What the campaign's [[links]] call its files is read from the passages holding one, found without reading the rest.
        CREATE INDEX passages_with_links ON passages (campaign_id) WHERE instr(text, '[[') > 0;
      `);
    },
  },
  {
    version: 14,
    description: "what each source's front matter says it supersedes, written when it is indexed",
    up(db) {
      // Every turn asks what supersedes what: read from each canon file's front matter, that re-read the
      // whole campaign's text once per process (seconds on a 1,000-entry book). A row per declared path.
      db.exec(`
        CREATE TABLE source_supersedes (
          source_id   TEXT NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
          campaign_id TEXT NOT NULL,
          target      TEXT NOT NULL,
          PRIMARY KEY (source_id, target)
        );
        CREATE INDEX source_supersedes_by_campaign ON source_supersedes (campaign_id);
      `);
      // Filled from the text already indexed, so an index migrated in place keeps every declaration.
      const declaring = db
        .prepare(`SELECT s.id AS id, s.campaign_id AS campaign, c.content AS content FROM sources s JOIN source_contents c ON c.source_id = s.id WHERE instr(c.content, 'supersedes') > 0`)
        .all() as { id: string; campaign: string; content: string }[];
      const insert = db.prepare('INSERT OR IGNORE INTO source_supersedes (source_id, campaign_id, target) VALUES (?, ?, ?)');
      for (const row of declaring) for (const target of splitFrontMatter(row.content).meta.supersedes ?? []) insert.run(row.id, row.campaign, target);
    },
  },
];
