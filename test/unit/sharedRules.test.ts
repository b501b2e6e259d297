import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import { withFrontMatterField, withFrontMatterListItem } from '../../src/knowledge/campaign/frontMatter';
import { atxHeading } from '../../src/knowledge/campaign/markdown';
import { pathInside, unsafeName, unsafeRelativePath } from '../../src/knowledge/campaign/paths';
import { applyTextEdit } from '../../src/knowledge/campaign/textEdit';
import { analyzeConflicts } from '../../src/knowledge/conflicts/conflicts';
import { supersedesEdit } from '../../src/knowledge/conflicts/conflictsEdit';
import { factSourceFromText } from '../../src/knowledge/conflicts/factsInput';
import { parseDocument } from '../../src/knowledge/indexing/chunker';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { findSource } from '../../src/knowledge/indexing/operations';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { notCampaignContent } from '../../src/knowledge/interchange/bundle';
import { importFilesIntoCampaign } from '../../src/knowledge/interchange/fileImport';
import { normalizeCampaignFolder } from '../../src/knowledge/interchange/lorebookImport';
import { searchKnowledge } from '../../src/knowledge/retrieval/retrieval';
import { excerptAround } from '../../src/knowledge/retrieval/retrievalFormat';
import { castFromKnowledgeStore } from '../../src/story/cast';
import { rankMemories } from '../../src/story/memory';
import type { Memory } from '../../src/story/types';
import { makeCampaign, removeDir } from '../support/campaignDirs';
import { storeWith } from '../support/knowledgeFixtures';

// Each rule below once had several copies that drifted apart; every surface is asked the same question here.

describe('shared rules: every surface reads alike', () => {
  describe('headings', () => {
    // [line, the heading it is (level and text) or null]
    const LINES: [string, { level: number; text: string } | null][] = [
      ['# Sister Mara', { level: 1, text: 'Sister Mara' }],
      ['## The Crypt ##', { level: 2, text: 'The Crypt' }],
      ['### C#', { level: 3, text: 'C#' }],
      ['   #### Indented three', { level: 4, text: 'Indented three' }],
      ['#NoSpace', null],
      ['####### Seven hashes', null],
      ['    # Indented four is code', null],
    ];

    it('is one answer for the line reader, the chunker, fact extraction and the cast', () => {
      for (const [line, expected] of LINES) {
        assert.deepEqual(atxHeading(line), expected, line);
        const passage = parseDocument(`${line}\n\nThe ferry runs at dawn.\n`, 'markdown').passages[0]!;
        assert.deepEqual(passage.headingPath, expected ? [expected.text] : [], `chunker: ${line}`);
        // A fact under the line belongs to the heading's entity only when the line is a heading. (The notes name
        // no entity in front matter: a page that does states that entity's facts wherever they stand.)
        const name = expected?.text ?? 'Sister Mara';
        const sources = [
          factSourceFromText('a.md', `${line}\n\n- **Age:** 34\n`, { title: 'Notes', class: 'canon' }),
          factSourceFromText('b.md', `# ${name}\n\n- **Age:** 40\n`, { title: name, class: 'canon', entities: [name] }),
        ];
        assert.equal(analyzeConflicts(sources).conflicts.length, expected ? 1 : 0, `facts: ${line}`);
      }
      const store = storeWith('cast', [{ path: 'characters/mara.md', entities: ['Mara'], passages: [[['Mara'], '### C#\nKeeper of the infirmary.']] }]);
      try {
        assert.equal(castFromKnowledgeStore(store)[0]!.description, 'Keeper of the infirmary.', 'the cast drops an opening heading line');
      } finally {
        store.close();
      }
    });
  });

  describe('words', () => {
    const memory = (id: string, text: string): Memory => ({ id, adventureId: 'a', anchorTurnId: null, sourceStart: null, sourceEnd: null, text, pinned: false, retrievedCount: 0, createdAt: id, updatedAt: id });

    it('are the same words for search, search excerpts and memory ranking: diacritics folded, stop words ignored', async () => {
      const text = `${'The river road runs past the mill and the ford. '.repeat(4)}Kaelen waited at the Café Rouge by the bridge.`;
      const store = storeWith('words', [{ path: 'places/cafe.md', passages: [[['Café'], text]] }]);
      try {
        assert.equal((await searchKnowledge(store, 'cafe rouge')).hits.length, 1, 'search folds diacritics');
        assert.match(excerptAround(text, 'cafe rouge', 60), /^…[^…]*Café Rouge/, 'the excerpt starts near the word search matched');
        assert.deepEqual(rankMemories([memory('m', text)], 'cafe rouge', 5).map((m) => m.id), ['m'], 'memories match the same word');
        // Words search ignores say nothing about a moment: neither surface uses them.
        assert.deepEqual(rankMemories([memory('m', 'There was nothing about it.')], 'what about there', 5), []);
        assert.equal(excerptAround(text, 'what about there', 60).startsWith('The river road'), true);
      } finally {
        store.close();
      }
    });
  });

  describe('front matter edits', () => {
    it('set a field and add a list item through one editor: same refusals, same new block, same line endings', () => {
      for (const broken of ['---\ntitle: [unclosed\n---\n', '---\ntitle: never closed\n', '---\n- a\n- b\n---\n']) {
        const field = (() => { try { withFrontMatterField(broken, 'enabled', false); return ''; } catch (error) { return (error as Error).message; } })();
        assert.ok(field, `refused: ${JSON.stringify(broken)}`);
        assert.throws(() => withFrontMatterListItem(broken, 'supersedes', 'a.md'), { message: field });
        assert.throws(() => supersedesEdit(broken, 'a.md'), { message: field });
      }
      assert.equal(withFrontMatterField('# T\r\n', 'class', 'canon'), '---\r\nclass: canon\r\n---\r\n# T\r\n');
      assert.equal(withFrontMatterListItem('# T\r\n', 'supersedes', 'a.md'), '---\r\nsupersedes:\r\n  - a.md\r\n---\r\n# T\r\n');
      const text = '---\ntitle: X\nsupersedes: [a.md]\n---\nBody\n';
      assert.equal(applyTextEdit(text, supersedesEdit(text, 'b.md')!), withFrontMatterListItem(text, 'supersedes', 'b.md'));
      assert.equal(supersedesEdit(text, 'a.md'), null);
    });
  });

  describe('paths', () => {
    it('are inside or outside the campaign alike for every surface, and a name starting with dots is inside', async () => {
      const root = makeCampaign({ 'notes.md': '# Notes\n\nThe ferry runs at dawn.\n', '..notes.md': '# Hidden notes\n' });
      const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'st-outside-'));
      try {
        assert.equal(pathInside(root, path.join(root, '..notes.md')), '..notes.md');
        assert.equal(pathInside(root, root), '');
        assert.equal(pathInside(root, path.join(root, '..', 'elsewhere.md')), undefined);
        const campaign = loadCampaign(root);
        const store = KnowledgeStore.open(campaign);
        try {
          await importCampaign(campaign, store);
          fs.writeFileSync(path.join(outside, 'notes.md'), '# Other notes\n');
          assert.equal(findSource(campaign, store, path.join(root, 'notes.md'), outside)?.path, 'notes.md', 'found by its path on disk');
          assert.equal(findSource(campaign, store, path.join(outside, 'notes.md'), root), undefined, 'a file of the same name outside is not it');
        } finally {
          store.close();
        }
        fs.writeFileSync(path.join(outside, 'tolls.md'), '# Tolls\n');
        const imported = importFilesIntoCampaign([path.join(root, '..notes.md'), path.join(outside, 'tolls.md')], { campaignRoot: root, class: 'reference' });
        assert.deepEqual(imported.refused.map((r) => [path.basename(r.file), r.reason]), [['..notes.md', 'is already inside the campaign']]);
        assert.deepEqual(imported.written.map((w) => w.path), ['tolls.md']);
      } finally {
        removeDir(root);
        removeDir(outside);
      }
    });

    it('written by others are refused alike by bundles and lorebook imports', () => {
      for (const unsafe of ['', '/etc/passwd', 'C:/x', 'a/../b', 'a//b', './a/./b', 'a\u0000b']) {
        assert.ok(unsafeRelativePath(unsafe), JSON.stringify(unsafe));
        assert.throws(() => normalizeCampaignFolder(unsafe), `lorebook: ${JSON.stringify(unsafe)}`);
      }
      // Names some file system reads as a protected folder or a device: in any spelling, for every importer.
      for (const name of ['.GIT/config', '.VSCode/tasks.json', '.git /x', '.git./x', 'a/.github', 'ＮＯＤＥ_ＭＯＤＵＬＥＳ/x.md', '.g\u200cit/config', '.Storyteller/play.db', 'CON.md', 'nul', 'lpt9.txt.md', 'com¹.md', 'CONIN$', 'git~1/config', 'notes.']) {
        assert.equal(unsafeRelativePath(name), undefined, `well-formed: ${JSON.stringify(name)}`);
        assert.ok(unsafeName(name), JSON.stringify(name));
        assert.ok(notCampaignContent(name), `bundle: ${JSON.stringify(name)}`);
        assert.throws(() => normalizeCampaignFolder(name), `lorebook: ${JSON.stringify(name)}`);
      }
      for (const safe of ['lore', 'lore/creatures', '..notes', 'con-entry', 'console', 'contact.md', 'git~a']) {
        assert.equal(unsafeRelativePath(safe), undefined);
        assert.equal(unsafeName(safe), undefined, safe);
        assert.equal(normalizeCampaignFolder(safe), safe);
      }
      // A name that only starts with dots is inside the campaign, but dot-named: a bundle leaves it out.
      assert.match(notCampaignContent('..notes/a.md') ?? '', /'\.\.notes' is dot-named/);
      assert.equal(notCampaignContent('lore/creatures.md'), undefined);
      assert.equal(notCampaignContent('campaign.yaml'), undefined);
      assert.match(notCampaignContent('lore/campaign.yaml') ?? '', /is not campaign content/);
    });
  });
});
