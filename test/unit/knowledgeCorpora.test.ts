import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import { MAX_PASSAGE_TOKENS } from '../../src/knowledge/indexing/chunker';
import { importCampaign, type ImportReport } from '../../src/knowledge/indexing/importer';
import { workerParser } from '../../src/knowledge/indexing/parsePool';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { groupRepeats, repeatGroupMessage } from '../../src/knowledge/health';
import { corpusPath } from '../support/corpora';
import { makeCampaign, removeDir } from '../support/campaignDirs';

/** A writer's campaign whose reference/ folder is a real corpus, imported once for the whole suite. */
async function importCorpus(corpus: string): Promise<{ root: string; store: KnowledgeStore; report: ImportReport }> {
  const root = makeCampaign({}, 'id: real\ntitle: Real\ndefault_class: reference\n');
  fs.cpSync(corpusPath(corpus), path.join(root, 'reference'), { recursive: true });
  const campaign = loadCampaign(root);
  const store = KnowledgeStore.open(campaign);
  const parser = workerParser();
  try {
    return { root, store, report: await importCampaign(campaign, store, { parser }) };
  } finally {
    await parser.close();
  }
}

/**
 * Passages whose start line does not hold their first word: the line a writer is sent to must show the
 * text. A passage opening with code starts at its fence, whose next line holds the word.
 */
function passagesOffTheirLine(store: KnowledgeStore): string[] {
  const off: string[] = [];
  for (const source of store.listSources()) {
    const lines = (store.getSourceContent(source.id) ?? '').split(/\r\n?|\n/);
    for (const p of store.listPassages(source.id)) {
      const word = /[\p{L}\p{N}]{2,}/u.exec(p.text.replace(/^\[image: /, ''))?.[0];
      const at = lines[p.startLine - 1] ?? '';
      const shown = /^\s*(```|~~~)/.test(at) ? lines[p.startLine] ?? '' : at;
      if (word && !shown.includes(word)) off.push(`${source.path}:${p.startLine} does not hold '${word}'`);
    }
  }
  return off;
}

describe('knowledge: real corpora', function () {
  this.timeout(300_000);

  describe('D&D SRD 5.1', () => {
    let imported: Awaited<ReturnType<typeof importCorpus>>;
    before(async () => {
      imported = await importCorpus('dnd-srd-5.1');
    });
    after(() => {
      imported.store.close();
      removeDir(imported.root);
    });

    it('imports every file with zero errors', () => {
      const errors = imported.report.files.filter((f) => f.outcome === 'error' || f.issues.some((i) => i.severity === 'error'));
      assert.deepEqual(errors, []);
      assert.ok(imported.report.files.length > 1000);
    });

    it('reports the (Alt) compilations as duplicates of the files that hold their text', () => {
      const alt = imported.store.listSources().filter((s) => s.path.includes('(Alt)/'));
      assert.ok(alt.length > 90);
      const flagged = alt.filter((s) => s.issues.some((i) => i.code === 'duplicate'));
      assert.ok(flagged.length / alt.length > 0.8, `${flagged.length} of ${alt.length} (Alt) files flagged`);
      const exact = imported.store.getSourceByPath('reference/Spells (Alt)/# Spellcasting.md')!;
      assert.equal(exact.lexicalState, 'duplicate');
      assert.equal(imported.store.getSource(exact.duplicateOf!)?.path, 'reference/Spells/# Spellcasting.md');
      assert.ok(!imported.store.listSources().some((s) => !s.path.includes('(Alt)') && s.lexicalState === 'duplicate'), 'originals hold the text');
    });

    it('groups the repeats into one finding per folder and the folders holding its text, and keeps repeated canon apart', () => {
      const sources = imported.store.listSources();
      const repeating = sources.filter((s) => s.issues.some((i) => i.code === 'duplicate'));
      const { canon, groups } = groupRepeats(sources, imported.store.repeatedPassageHolders());
      assert.deepEqual(canon, []);
      assert.deepEqual(
        groups.map((g) => `${g.repeats.length} ${g.folder} <- ${g.holderFolders.join(', ')}`),
        [
          '9 reference/Classes <- reference/Classes',
          '33 reference/Monsters (Alt) <- reference/Monsters',
          '12 reference/Monsters <- reference/Monsters',
          '23 reference/Spells (Alt) <- reference/Spells',
          '23 reference/Treasure (Alt) <- reference/Treasure',
        ],
      );
      assert.equal(groups.reduce((n, g) => n + g.repeats.length, 0), repeating.length, 'every repeating file is in a group');
      assert.equal(repeatGroupMessage(groups[1]!), '33 files in reference/Monsters (Alt) repeat text already indexed from reference/Monsters; it is indexed once, nothing to fix');
      assert.equal(repeatGroupMessage(groups[0]!), '9 files in reference/Classes repeat text already indexed from other files there; it is indexed once, nothing to fix');

      // The same text in canon: each canon file that repeats it is its own finding.
      const asCanon = sources.map((s) => (s.path.startsWith('reference/Spells (Alt)/') ? { ...s, class: 'canon' as const } : s));
      const mixed = groupRepeats(asCanon, imported.store.repeatedPassageHolders());
      assert.equal(mixed.canon.length, 23);
      assert.ok(!mixed.groups.some((g) => g.folder === 'reference/Spells (Alt)'));
    });

    it('keeps file names with #, & and spaces working', () => {
      const names = imported.store.listSources().map((s) => s.path);
      for (const name of names.filter((n) => /[#&]/.test(n) && !n.includes('(Alt)')).slice(0, 20)) {
        const source = imported.store.getSourceByPath(name)!;
        assert.ok(fs.existsSync(path.join(imported.root, ...name.split('/'))));
        assert.ok(source.lexicalState === 'ready' || source.lexicalState === 'duplicate', name);
      }
      assert.ok(names.some((n) => n.includes('#')) && names.some((n) => n.includes(' ')));
    });

    it('keeps every passage within the ceiling, with a heading trail and a line range inside its file', () => {
      const rows = imported.store.db
        .prepare(
          'SELECT s.path, c.content, p.token_count, p.heading_path, p.start_line, p.end_line, p.text FROM passages p JOIN sources s ON s.id = p.source_id JOIN source_contents c ON c.source_id = s.id',
        )
        .all() as { path: string; content: string; token_count: number; heading_path: string; start_line: number; end_line: number; text: string }[];
      assert.ok(rows.length > 1500);
      const lineCounts = new Map<string, number>();
      for (const row of rows) {
        assert.ok(row.token_count <= MAX_PASSAGE_TOKENS, `${row.path}: ${row.token_count} tokens`);
        if (!lineCounts.has(row.path)) lineCounts.set(row.path, row.content.split('\n').length);
        assert.ok(row.start_line >= 1 && row.start_line <= row.end_line && row.end_line <= lineCounts.get(row.path)!, `${row.path} ${row.start_line}-${row.end_line}`);
      }
      const withTrail = rows.filter((r) => JSON.parse(r.heading_path).length > 0).length;
      assert.ok(withTrail / rows.length > 0.95);
      assert.ok(!rows.some((r) => /\]\(https?:/.test(r.text)), 'no markdown link survives as a URL');
    });

    it('points every passage at the line its text starts on, as hovers, Problems and file:line results show it', () => {
      const misplaced = passagesOffTheirLine(imported.store);
      assert.deepEqual(misplaced, []);
    });

    it('keeps a heading that sits inside a blockquote in the trail', () => {
      const candidates = imported.store.listSources().filter((s) => /^>\s*#{1,6}\s/m.test(imported.store.getSourceContent(s.id) ?? '') && s.lexicalState === 'ready');
      assert.ok(candidates.length > 0, 'the SRD has headings in blockquotes');
      const source = candidates[0]!;
      const quoted = /^>\s*#{1,6}\s+(.+)$/m.exec(imported.store.getSourceContent(source.id)!)![1]!.replace(/[*_]/g, '').trim();
      const trails = imported.store.listPassages(source.id).flatMap((p) => p.headingPath);
      const texts = imported.store.listPassages(source.id).map((p) => p.text).join('\n');
      assert.ok(trails.includes(quoted) || texts.includes(quoted), `${source.path}: '${quoted}'`);
    });

    it('finds SRD text through the FTS index', () => {
      const hit = imported.store.db
        .prepare("SELECT p.text FROM passages_fts f JOIN passages p ON p.rowid = f.rowid WHERE passages_fts MATCH 'aboleth AND tentacle' LIMIT 1")
        .get() as { text: string } | undefined;
      assert.match(hit?.text ?? '', /tentacle/i);
    });
  });

  describe('Fate SRD', () => {
    it('imports every file with zero errors, titles from front matter, body entities decoded', async () => {
      const { root, store, report } = await importCorpus('fate-srd');
      try {
        assert.deepEqual(report.files.filter((f) => f.outcome === 'error'), []);
        assert.ok(report.counts.indexed > 140);
        const source = store.listSources().find((s) => s.path.endsWith('players-gamemasters/index.md'))!;
        // Front matter is YAML, taken as written; the markdown body's entities are decoded by the parser.
        assert.equal(source.title, 'Players &amp; Gamemasters');
        assert.ok(store.listPassages(source.id).some((p) => p.headingPath.includes('Players & Gamemasters')));
        // Every file opens with front matter: the lines after it are still the file's.
        assert.deepEqual(passagesOffTheirLine(store), []);
      } finally {
        store.close();
        removeDir(root);
      }
    });
  });
});
