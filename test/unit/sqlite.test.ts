import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { assertFts5, migrate, openDatabase, type Migration } from '../../src/knowledge/indexing/sqlite';
import { INDEX_MIGRATIONS } from '../../src/knowledge/indexing/indexSchema';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { PLAY_MIGRATIONS } from '../../src/knowledge/indexing/playSchema';

describe('database migrations', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-sqlite-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('creates the index and play schemas at their newest version, with FTS5 working', () => {
    const index = openDatabase(path.join(dir, 'index.db'), INDEX_MIGRATIONS);
    assertFts5(index);
    assert.equal(index.pragma('user_version', { simple: true }), INDEX_MIGRATIONS.at(-1)!.version);
    index.prepare('INSERT INTO passages_fts (rowid, heading, body) VALUES (1, ?, ?)').run('Crypt', 'The bronze door');
    assert.equal((index.prepare("SELECT rowid FROM passages_fts WHERE passages_fts MATCH 'bronze'").get() as { rowid: number }).rowid, 1);
    const play = openDatabase(path.join(dir, 'play.db'), PLAY_MIGRATIONS);
    assert.equal(play.pragma('user_version', { simple: true }), PLAY_MIGRATIONS.at(-1)!.version);
    index.close();
    play.close();
  });

  it('moves an index of the unstemmed schema to stems and CJK pairs, search working without a reimport', () => {
    const file = path.join(dir, 'index.db');
    const old = openDatabase(file, INDEX_MIGRATIONS.filter((m) => m.version < 4));
    old.exec(`INSERT INTO sources (id, campaign_id, path, title, class, class_origin, enabled, visibility, always_include, priority,
        tags, entities, sha256, size, mtime_ms, imported_at, updated_at, parser_version, chunking_version, lexical_state,
        semantic_state, issues, content)
      VALUES ('s', 'c', 'a.md', 'A', 'canon', '{}', 1, 'normal', 0, 'normal', '[]', '[]', 'h', 1, 0, 'x', 'x', 1, 1, 'ready', 'off', '[]', '')`);
    old.prepare(`INSERT INTO passages (rowid, id, source_id, campaign_id, idx, class, heading_path, text, token_count, content_hash, start_line, end_line)
      VALUES (1, 's:0', 's', 'c', 0, 'canon', '["Hunt"]', 'He went a-hunting beside the 宗门弟子.', 9, 'p', 1, 1)`).run();
    old.close();
    const index = openDatabase(file, INDEX_MIGRATIONS);
    const found = (query: string) => (index.prepare('SELECT rowid FROM passages_fts WHERE passages_fts MATCH ?').all(query) as { rowid: number }[]).length;
    assert.equal(found('"hunted"'), 1, 'stems: hunted finds a-hunting');
    assert.equal(found('"宗门"'), 1, 'CJK pairs');
    index.close();
  });

  it('indexes again the katakana words with a long-vowel mark that an older index cut apart, search working without a reimport', () => {
    const file = path.join(dir, 'index.db');
    const old = openDatabase(file, INDEX_MIGRATIONS.filter((m) => m.version <= 10));
    old.prepare(`INSERT INTO sources (id, campaign_id, path, title, class, class_origin, enabled, visibility, always_include, priority,
        tags, entities, sha256, size, mtime_ms, imported_at, updated_at, parser_version, chunking_version, lexical_state,
        semantic_state, issues)
      VALUES ('s', 'c', 'a.md', 'A', 'canon', '{}', 1, 'normal', 0, 'normal', '[]', '[]', 'h', 1, 0, 'x', 'x', 2, 3, 'ready', 'off', '[]')`).run();
    old.prepare(`INSERT INTO passages (rowid, id, source_id, campaign_id, idx, class, heading_path, text, token_count, content_hash, start_line, end_line)
      VALUES (1, 's:0', 's', 'c', 0, 'canon', '["ギルド"]', '新人のパーティー', 9, 'p', 1, 1)`).run();
    // As the index held it before: the long-vowel marks split パーティー into パー, ティ and ー.
    old.prepare('INSERT INTO passages_fts (rowid, heading, body) VALUES (1, ?, ?)').run('ギル ルド', '新人 人の のパ パー ティ ー');
    old.close();
    const index = openDatabase(file, INDEX_MIGRATIONS);
    const found = (query: string) => (index.prepare('SELECT rowid FROM passages_fts WHERE passages_fts MATCH ?').all(query) as { rowid: number }[]).length;
    assert.equal(found('"パー ーテ ティ ィー"'), 1, 'パーティー as one word of pairs');
    assert.equal(found('"ギル ルド"'), 1, 'the rest of the passage is still found');
    index.close();
  });

  it('moves the full-text index to one that keeps no copy of the text, every passage still found and a deleted one gone', () => {
    const file = path.join(dir, 'index.db');
    const old = openDatabase(file, INDEX_MIGRATIONS.filter((m) => m.version <= 11));
    old.prepare(`INSERT INTO sources (id, campaign_id, path, title, class, class_origin, enabled, visibility, always_include, priority,
        tags, entities, sha256, size, mtime_ms, imported_at, updated_at, parser_version, chunking_version, lexical_state,
        semantic_state, issues)
      VALUES ('s', 'c', 'a.md', 'A', 'canon', '{}', 1, 'normal', 0, 'normal', '[]', '[]', 'h', 1, 0, 'x', 'x', 2, 3, 'ready', 'off', '[]')`).run();
    const passage = old.prepare(`INSERT INTO passages (rowid, id, source_id, campaign_id, idx, class, heading_path, text, token_count, content_hash, start_line, end_line)
      VALUES (?, ?, 's', 'c', ?, 'canon', '["Crypt"]', ?, 9, ?, 1, 1)`);
    const fts = old.prepare('INSERT INTO passages_fts (rowid, heading, body) VALUES (?, ?, ?)');
    for (const [rowid, text] of [[1, 'The bronze door is sealed.'], [2, 'The abbot keeps the key.']] as const) {
      passage.run(rowid, `s:${rowid}`, rowid, text, `p${rowid}`);
      fts.run(rowid, 'Crypt', text);
    }
    old.close();
    const index = openDatabase(file, INDEX_MIGRATIONS);
    const found = (query: string) => (index.prepare('SELECT rowid FROM passages_fts WHERE passages_fts MATCH ? ORDER BY rowid').pluck().all(query) as number[]);
    assert.deepEqual(found('crypt'), [1, 2], 'the headings, stemmed as before');
    assert.deepEqual(found('sealing'), [1]);
    assert.equal(index.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'passages_fts_content'").pluck().get(), 0, 'no second copy of the text');
    index.prepare('DELETE FROM passages_fts WHERE rowid = ?').run(2);
    assert.deepEqual(found('abbot'), [], 'a deleted passage is found no more');
    assert.deepEqual(found('crypt'), [1]);
    index.close();
  });

  it("keeps every source's text when the text moves out of the source rows, and a deleted source takes its text along", () => {
    const file = path.join(dir, 'index.db');
    const old = openDatabase(file, INDEX_MIGRATIONS.filter((m) => m.version <= 8));
    const insert = old.prepare(`INSERT INTO sources (id, campaign_id, path, title, class, class_origin, enabled, visibility, always_include, priority,
        tags, entities, sha256, size, mtime_ms, imported_at, updated_at, parser_version, chunking_version, lexical_state,
        semantic_state, issues, content)
      VALUES (?, 'c', ?, 'A', 'canon', '{}', 1, 'normal', 0, 'normal', '[]', '[]', 'h', 1, 0, 'x', 'x', 1, 1, 'ready', 'off', '[]', ?)`);
    insert.run('a', 'a.md', '# Abbey\nThe abbot keeps the crypt key.');
    insert.run('b', 'b.md', 'The ferryman asks for two coins.');
    old.close();
    const store = KnowledgeStore.open({ id: 'c', indexPath: file });
    try {
      assert.equal(store.getSourceContent('a'), '# Abbey\nThe abbot keeps the crypt key.');
      assert.equal(store.getSourceContent('b'), 'The ferryman asks for two coins.');
      assert.deepEqual(
        store.listSources().map((s) => s.path),
        ['a.md', 'b.md'],
      );
      store.deleteSource('a');
      assert.equal(store.getSourceContent('a'), undefined);
      assert.equal((store.db.prepare('SELECT count(*) n FROM source_contents').get() as { n: number }).n, 1);
    } finally {
      store.close();
    }
  });

  it('keeps the previous version intact when a migration fails', () => {
    const file = path.join(dir, 'x.db');
    const good: Migration = { version: 1, description: 'a', up: (db) => db.exec('CREATE TABLE a (x)') };
    openDatabase(file, [good]).close();
    const bad: Migration = {
      version: 2,
      description: 'b',
      up: (db) => {
        db.exec('CREATE TABLE b (x)');
        throw new Error('boom');
      },
    };
    assert.throws(() => openDatabase(file, [good, bad]), /boom/);
    const db = openDatabase(file, [good]);
    assert.equal(db.pragma('user_version', { simple: true }), 1);
    assert.equal((db.prepare("SELECT count(*) n FROM sqlite_master WHERE name = 'b'").get() as { n: number }).n, 0);
    db.close();
  });

  it('refuses a database written by a newer build', () => {
    const file = path.join(dir, 'y.db');
    const newer = INDEX_MIGRATIONS.at(-1)!.version + 1;
    const db = openDatabase(file, [{ version: newer, description: 'a later build', up: () => undefined }]);
    db.close();
    assert.throws(() => openDatabase(file, INDEX_MIGRATIONS), new RegExp(`schema version ${newer} is newer`));
  });

  it('is idempotent when opened again', () => {
    const db = openDatabase(':memory:', INDEX_MIGRATIONS);
    migrate(db, INDEX_MIGRATIONS);
    assert.equal(db.pragma('user_version', { simple: true }), INDEX_MIGRATIONS.at(-1)!.version);
  });
});
