import type { Migration } from './sqlite';

/**
 * Play data (`<campaign>/.storyteller/play.db`) is what the writer played: it is not derived, so it is
 * never rebuilt, only migrated forward, and exported with the campaign.
 */
export const PLAY_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'adventures, turn tree, immutable prompt snapshots, memories, summaries, conflict decisions',
    up(db) {
      db.exec(`
        CREATE TABLE adventures (
          id               TEXT PRIMARY KEY,
          campaign_id      TEXT NOT NULL,
          title            TEXT NOT NULL,
          persona_name     TEXT NOT NULL DEFAULT '',
          persona_pronouns TEXT NOT NULL DEFAULT '',
          persona_desc     TEXT NOT NULL DEFAULT '',
          plot_essentials  TEXT NOT NULL DEFAULT '',
          authors_note     TEXT NOT NULL DEFAULT '',
          stat_schema      TEXT NOT NULL DEFAULT '{}',  -- JSON
          head_turn_id     TEXT,                        -- the turn the writer is looking at
          created_at       TEXT NOT NULL,
          updated_at       TEXT NOT NULL
        );

        -- A tree: retry adds a sibling, fork continues from any turn. A branch is a lineage to the root.
        CREATE TABLE turns (
          id                TEXT PRIMARY KEY,
          adventure_id      TEXT NOT NULL REFERENCES adventures (id) ON DELETE CASCADE,
          parent_id         TEXT REFERENCES turns (id),
          depth             INTEGER NOT NULL,
          action_kind       TEXT NOT NULL,             -- do | say | story | continue | start
          action            TEXT NOT NULL,
          narration         TEXT NOT NULL DEFAULT '',
          status            TEXT NOT NULL,             -- pending | streaming | complete | incomplete | error
          error             TEXT,
          model             TEXT,
          state_delta       TEXT,                      -- JSON as proposed by the model
          state_after       TEXT NOT NULL DEFAULT '{}',-- JSON world state after this turn
          refusals          TEXT NOT NULL DEFAULT '[]',-- JSON string[]
          prompt_eval_count INTEGER,
          eval_count        INTEGER,
          created_at        TEXT NOT NULL,
          updated_at        TEXT NOT NULL
        );
        CREATE INDEX turns_by_parent ON turns (adventure_id, parent_id);

        -- Written once, before generation starts: exactly what was sent, so the turn stays reproducible
        -- after its sources change or disappear.
        CREATE TABLE prompt_snapshots (
          turn_id      TEXT PRIMARY KEY REFERENCES turns (id) ON DELETE CASCADE,
          sections     TEXT NOT NULL,                  -- JSON rendered sections with token counts
          messages     TEXT NOT NULL,                  -- JSON chat messages exactly as sent
          retrieval    TEXT NOT NULL,                  -- JSON full retrieval record
          total_tokens INTEGER NOT NULL,
          model        TEXT,
          created_at   TEXT NOT NULL
        );

        -- Which passages each turn's retrieval considered, for "retrieved by N turns" and "never retrieved".
        CREATE TABLE turn_passages (
          turn_id    TEXT NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
          passage_id TEXT NOT NULL,
          source_id  TEXT NOT NULL,
          selected   INTEGER NOT NULL,
          reason     TEXT NOT NULL,
          PRIMARY KEY (turn_id, passage_id)
        );
        CREATE INDEX turn_passages_by_passage ON turn_passages (passage_id);
        CREATE INDEX turn_passages_by_source ON turn_passages (source_id);

        CREATE TABLE memories (
          id               TEXT PRIMARY KEY,
          adventure_id     TEXT NOT NULL REFERENCES adventures (id) ON DELETE CASCADE,
          anchor_turn_id   TEXT REFERENCES turns (id),  -- last turn of the block; its lineage owns the memory
          source_start     INTEGER,                     -- depth range summarized (null: hand-written)
          source_end       INTEGER,
          text             TEXT NOT NULL,
          pinned           INTEGER NOT NULL DEFAULT 0,
          retrieved_count  INTEGER NOT NULL DEFAULT 0,
          embed_model      TEXT,
          embedding        BLOB,
          created_at       TEXT NOT NULL,
          updated_at       TEXT NOT NULL
        );
        CREATE INDEX memories_by_adventure ON memories (adventure_id);

        CREATE TABLE story_summaries (
          adventure_id   TEXT NOT NULL REFERENCES adventures (id) ON DELETE CASCADE,
          anchor_turn_id TEXT NOT NULL REFERENCES turns (id),
          text           TEXT NOT NULL,
          created_at     TEXT NOT NULL,
          PRIMARY KEY (adventure_id, anchor_turn_id)
        );

        -- Estimated-to-real token ratio per model, learned from Ollama's prompt_eval_count.
        CREATE TABLE token_calibration (
          model      TEXT PRIMARY KEY,
          factor     REAL NOT NULL,
          samples    INTEGER NOT NULL,
          updated_at TEXT NOT NULL
        );

        -- The writer's decisions about detected canon conflicts (ignored pairs, accepted suggestions).
        CREATE TABLE conflict_decisions (
          campaign_id  TEXT NOT NULL,
          conflict_key TEXT NOT NULL,
          decision     TEXT NOT NULL,                  -- ignored | accepted | dismissed
          note         TEXT,
          created_at   TEXT NOT NULL,
          PRIMARY KEY (campaign_id, conflict_key)
        );
      `);
    },
  },
  {
    version: 2,
    description: 'the process generating a turn, recorded with it while it runs',
    up(db) {
      db.exec(`
        -- Crash recovery may run in any process that opens play.db (the CLI beside the extension): only a
        -- turn whose generating process is gone was cut off. JSON ProcessOwner while pending or streaming;
        -- NULL once finished, and for turns from before this was recorded.
        ALTER TABLE turns ADD COLUMN owner TEXT;
      `);
    },
  },
  {
    version: 3,
    description: 'SillyTavern World Info per turn: the seed its rolls used and the timed effects after it',
    up(db) {
      db.exec(`
        -- JSON {seed, chatLength, state: {sticky, cooldown}} when the turn's prompt had entries with SillyTavern
        -- behaviour; the next turn on a branch starts from its parent's, so undo, retry, edit and fork rewind it.
        ALTER TABLE turns ADD COLUMN world_info TEXT;
      `);
    },
  },
  {
    version: 4,
    description: 'canon proposals the writer discarded, not proposed again for the same turns',
    up(db) {
      db.exec(`
        -- A proposal is keyed by its file, the text it replaces and the turns that justify it: a later turn
        -- that changes the same fact again is new evidence, and proposes it again.
        CREATE TABLE proposal_discards (
          campaign_id  TEXT NOT NULL,
          adventure_id TEXT NOT NULL,
          proposal_key TEXT NOT NULL,
          file         TEXT NOT NULL,
          reason       TEXT NOT NULL,
          created_at   TEXT NOT NULL,
          PRIMARY KEY (campaign_id, adventure_id, proposal_key)
        );
      `);
    },
  },
  {
    version: 5,
    description: 'the research a turn ran before its context was packed',
    up(db) {
      db.exec(`
        -- JSON ResearchRecord: the model's searches, what it kept, what was refused and why; NULL when research
        -- was off, and for turns from before research existed.
        ALTER TABLE prompt_snapshots ADD COLUMN research TEXT;
      `);
    },
  },
];
