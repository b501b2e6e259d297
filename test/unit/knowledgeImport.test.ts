import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCampaign, type Campaign } from '../../src/knowledge/campaign/campaign';
import { withFrontMatterField } from '../../src/knowledge/campaign/frontMatter';
import { importCampaign, indexFile, sourceIdFor } from '../../src/knowledge/indexing/importer';
import { campaignStatus, deleteSource, rebuildIndex } from '../../src/knowledge/indexing/operations';
import { inThreadParser, workerParser, type Parser } from '../../src/knowledge/indexing/parsePool';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { makeCampaign, removeDir, writeFile } from '../support/campaignDirs';

const prose = (topic: string, n = 90): string => Array.from({ length: n }, (_, i) => `${topic}${i}`).join(' ') + '.';

/** Counts what the importer really asks to parse, by path-independent text. */
function countingParser(): Parser & { parsed: string[] } {
  const inner = inThreadParser();
  const parsed: string[] = [];
  return {
    parsed,
    parse(text, kind) {
      parsed.push(text);
      return inner.parse(text, kind);
    },
    close: () => inner.close(),
  };
}

describe('knowledge: importing a campaign', () => {
  let root: string;
  let campaign: Campaign;
  let store: KnowledgeStore;
  const dirs: string[] = [];

  const open = (files: Record<string, string | Uint8Array>, yaml?: string): void => {
    root = makeCampaign(files, yaml);
    dirs.push(root);
    campaign = loadCampaign(root);
    store = KnowledgeStore.open(campaign);
  };
  const source = (rel: string) => store.getSourceByPath(rel);
  /** What a clean import of the campaign as it now stands holds, as `holdings` reads a store. */
  const cleanImport = async <T>(holdings: (of: KnowledgeStore) => T): Promise<T> => {
    const fresh = KnowledgeStore.inMemory(campaign.id);
    try {
      await importCampaign(campaign, fresh);
      return holdings(fresh);
    } finally {
      fresh.close();
    }
  };

  afterEach(() => {
    store?.close();
    for (const dir of dirs.splice(0)) removeDir(dir);
  });

  it('classifies by front matter, then the longest folder rule, then the campaign default, and records why', async () => {
    open(
      {
        'canon.md': `---\nclass: canon\n---\n# Bible\n\n${prose('town')}`,
        'places/abbey.md': `# Abbey\n\n${prose('abbey')}`,
        'places/ruins/tower.md': `# Tower\n\n${prose('tower')}`,
        'misc.md': `# Misc\n\n${prose('misc')}`,
      },
      'id: c\ntitle: C\ndefault_class: inspiration\nfolders:\n  places: canon\n  places/ruins: reference\n',
    );
    await importCampaign(campaign, store);
    assert.deepEqual(source('canon.md')?.classOrigin, { kind: 'front-matter' });
    assert.deepEqual([source('places/abbey.md')?.class, source('places/abbey.md')?.classOrigin], ['canon', { kind: 'folder-rule', folder: 'places' }]);
    assert.deepEqual([source('places/ruins/tower.md')?.class, source('places/ruins/tower.md')?.classOrigin], ['reference', { kind: 'folder-rule', folder: 'places/ruins' }]);
    assert.deepEqual([source('misc.md')?.class, source('misc.md')?.classOrigin], ['inspiration', { kind: 'campaign-default' }]);
    const passages = store.listPassages(source('places/abbey.md')!.id);
    assert.ok(passages.every((p) => p.class === 'canon'));
    assert.equal(source('canon.md')?.title, 'Bible');
  });

  describe('bad input: a clear message naming the file and the reason, nothing else disturbed', () => {
    const good = `# Good\n\n${prose('good')}`;
    const cases: { name: string; file: string; content: string | Uint8Array; code: string; message: RegExp; state: string; yaml?: string }[] = [
      { name: 'invalid UTF-8', file: 'latin1.md', content: Buffer.from('# Caf\xe9\n\nline two\n', 'latin1'), code: 'encoding', message: /not valid UTF-8 \(first bad byte on line 1\)/, state: 'error' },
      { name: 'a binary file', file: 'image.md', content: new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0x02]), code: 'binary', message: /NUL byte.*binary/, state: 'error' },
      { name: 'UTF-16', file: 'utf16.md', content: Buffer.from('\ufeffhello', 'utf16le'), code: 'encoding', message: /UTF-16/, state: 'error' },
      { name: 'a file over the cap', file: 'huge.md', content: 'x'.repeat(2048), code: 'oversize', message: /2\.0 KiB, over the campaign's 1\.0 KiB cap/, state: 'error', yaml: 'id: t\ntitle: T\nsize_cap_bytes: 1024\n' },
      { name: 'front matter that is not YAML', file: 'bad-yaml.md', content: '---\ntitle: [oops\n---\nbody', code: 'front-matter-yaml', message: /front matter is not valid YAML/, state: 'error' },
      { name: 'an unknown class', file: 'bad-class.md', content: '---\nclass: lore\n---\nbody', code: 'front-matter-class', message: /'class' is 'lore'/, state: 'error' },
      { name: 'an empty file', file: 'empty.md', content: '', code: 'empty', message: /empty/, state: 'ready' },
    ];
    for (const c of cases) {
      it(c.name, async () => {
        open({ 'good.md': good, [c.file]: c.content }, c.yaml);
        const before = Buffer.from(fs.readFileSync(path.join(root, c.file)));
        const report = await importCampaign(campaign, store);
        const outcome = report.files.find((f) => f.path === c.file);
        assert.ok(outcome, 'the bad file is reported');
        const issue = outcome.issues.find((i) => i.code === c.code);
        assert.ok(issue, `issue ${c.code} in ${JSON.stringify(outcome.issues)}`);
        assert.match(issue.message, c.message);
        const row = source(c.file);
        assert.equal(row?.lexicalState, c.state, 'the file keeps a row that says what is wrong');
        assert.deepEqual(store.listPassages(row!.id), [], 'and has no passages');
        assert.equal(source('good.md')?.lexicalState, 'ready', 'the other file is indexed');
        assert.ok(store.listPassages(source('good.md')!.id).length > 0);
        assert.deepEqual(fs.readFileSync(path.join(root, c.file)), before, 'the user file is untouched');
      });
    }

    it('a bad edit of a good file leaves an error row, and fixing it brings the passages back', async () => {
      open({ 'a.md': `---\nclass: canon\n---\n${good}` });
      await importCampaign(campaign, store);
      writeFile(root, 'a.md', `---\nclass: canonn\n---\n${good}`);
      await importCampaign(campaign, store);
      assert.equal(source('a.md')?.lexicalState, 'error');
      assert.equal(source('a.md')?.issues[0]?.line, 2);
      writeFile(root, 'a.md', `---\nclass: canon\n---\n${good}`);
      await importCampaign(campaign, store);
      assert.equal(source('a.md')?.lexicalState, 'ready');
    });

    it('a symlink pointing outside the campaign is refused, not followed', async function () {
      const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'st-outside-'));
      dirs.push(outside);
      fs.writeFileSync(path.join(outside, 'secret.md'), `# Secret\n\n${prose('secret')}`);
      open({ 'good.md': good });
      fs.symlinkSync(path.join(outside, 'secret.md'), path.join(root, 'linked.md'));
      fs.symlinkSync(outside, path.join(root, 'linked-dir'));
      fs.symlinkSync(path.join(root, 'good.md'), path.join(root, 'inside-link.md'));
      const report = await importCampaign(campaign, store);
      for (const rel of ['linked.md', 'linked-dir']) {
        const outcome = report.files.find((f) => f.path === rel);
        assert.equal(outcome?.outcome, 'error');
        assert.match(outcome!.issues[0]!.message, /symlink points outside the campaign/);
      }
      assert.ok(!store.listSources().some((s) => s.path.includes('secret')));
      assert.equal((store.db.prepare("SELECT count(*) n FROM passages WHERE text LIKE '%secret1%'").get() as { n: number }).n, 0);
      assert.equal(source('inside-link.md')?.lexicalState, 'duplicate', 'a link inside the campaign is read, and is a duplicate of its target');
    });

    it('a file that disappears mid-import is reported and removed, the rest indexed', async () => {
      open({ 'a.md': good, 'b.md': `# B\n\n${prose('bee')}`, 'c.md': `# C\n\n${prose('sea')}` });
      await importCampaign(campaign, store);
      writeFile(root, 'b.md', `# B\n\n${prose('changed')}`);
      const inner = inThreadParser();
      const parser: Parser = {
        parse(text, kind) {
          if (text.includes('changed')) fs.rmSync(path.join(root, 'b.md'));
          return inner.parse(text, kind);
        },
        close: () => inner.close(),
      };
      const report = await importCampaign(campaign, store, { parser });
      const b = report.files.find((f) => f.path === 'b.md');
      assert.equal(b?.outcome, 'vanished');
      assert.match(b!.issues[0]!.message, /disappeared while it was being imported/);
      assert.equal(source('b.md'), undefined);
      assert.equal(source('a.md')?.lexicalState, 'ready');
      assert.equal(source('c.md')?.lexicalState, 'ready');
    });

    it('a file edited while it is parsed is read again, and the index holds the newer text', async () => {
      open({ 'a.md': `# A\n\n${prose('first')}` });
      const inner = inThreadParser();
      let edits = 0;
      const parser: Parser = {
        parse(text, kind) {
          if (edits++ === 0) {
            const file = path.join(root, 'a.md');
            fs.writeFileSync(file, `# A\n\n${prose('second')} and more`);
            fs.utimesSync(file, new Date(), new Date(Date.now() + 5000));
          }
          return inner.parse(text, kind);
        },
        close: () => inner.close(),
      };
      await importCampaign(campaign, store, { parser });
      const texts = store.listPassages(source('a.md')!.id).map((p) => p.text).join(' ');
      assert.match(texts, /second0/);
      assert.doesNotMatch(texts, /first0/);
    });
  });

  it('does not parse unchanged files again, and parses exactly the edited one', async () => {
    open({ 'a.md': `# A\n\n${prose('alpha')}`, 'b.md': `# B\n\n${prose('beta')}`, 'c.txt': prose('gamma') });
    const parser = countingParser();
    await importCampaign(campaign, store, { parser });
    assert.equal(parser.parsed.length, 3);
    parser.parsed.length = 0;
    const again = await importCampaign(campaign, store, { parser });
    assert.equal(parser.parsed.length, 0);
    assert.equal(again.counts.unchanged, 3);
    writeFile(root, 'b.md', `# B\n\n${prose('beta')} Edited.`);
    const edited = await importCampaign(campaign, store, { parser });
    assert.equal(parser.parsed.length, 1);
    assert.match(parser.parsed[0]!, /Edited/);
    assert.equal(edited.counts.indexed, 1);
  });

  describe('skipping unchanged files by size and mtime', () => {
    const anHourAgo = () => new Date(Date.now() - 3_600_000);
    /** Gives every file an mtime long past, as a library's files have: their stat can be trusted. */
    const settle = (...rels: string[]) => {
      for (const rel of rels) fs.utimesSync(path.join(root, rel), anHourAgo(), anHourAgo());
    };
    /** Reads from disk, counting each path read. */
    const countingReader = () => {
      const reads: string[] = [];
      return {
        reads,
        readFile: (absPath: string) => {
          reads.push(path.relative(root, absPath).split(path.sep).join('/'));
          return fs.promises.readFile(absPath);
        },
      };
    };

    it('does not read a file whose size and mtime are those it was indexed with, and reads the edited one', async () => {
      open({ 'a.md': `# A\n\n${prose('alpha')}`, 'b.md': `# B\n\n${prose('beta')}`, 'c.txt': prose('gamma') });
      settle('a.md', 'b.md', 'c.txt');
      await importCampaign(campaign, store);
      const reader = countingReader();
      const again = await importCampaign(campaign, store, { readFile: reader.readFile });
      assert.deepEqual(reader.reads, []);
      assert.equal(again.counts.unchanged, 3);
      writeFile(root, 'b.md', `# B\n\n${prose('beta')} Edited.`);
      const edited = await importCampaign(campaign, store, { readFile: reader.readFile });
      assert.deepEqual(reader.reads, ['b.md']);
      assert.equal(edited.counts.indexed, 1);
      const single = countingReader();
      const saved = await indexFile(campaign, store, 'a.md', { readFile: single.readFile });
      assert.deepEqual([single.reads, saved.counts.unchanged], [[], 1]);
    });

    it('picks up an edit that keeps the mtime when the size changed', async () => {
      open({ 'a.md': `# A\n\n${prose('alpha')}` });
      settle('a.md');
      await importCampaign(campaign, store);
      const { mtime } = fs.statSync(path.join(root, 'a.md'));
      writeFile(root, 'a.md', `# A\n\n${prose('omega')} and a longer ending`);
      fs.utimesSync(path.join(root, 'a.md'), mtime, mtime);
      const report = await importCampaign(campaign, store);
      assert.equal(report.counts.indexed, 1);
      assert.match(store.listPassages(source('a.md')!.id).map((p) => p.text).join(' '), /omega0/);
    });

    it('picks up an edit within the same second and the same size: a file read just after it was written is hashed next time', async () => {
      open({ 'a.md': `# A\n\n${prose('alpha')}` });
      await importCampaign(campaign, store);
      const { mtime } = fs.statSync(path.join(root, 'a.md'));
      writeFile(root, 'a.md', `# A\n\n${prose('bravo')}`); // 'bravo' and 'alpha' have the same length
      fs.utimesSync(path.join(root, 'a.md'), mtime, mtime);
      assert.equal(fs.statSync(path.join(root, 'a.md')).size, source('a.md')!.size);
      const report = await importCampaign(campaign, store);
      assert.equal(report.counts.indexed, 1);
      assert.match(store.listPassages(source('a.md')!.id).map((p) => p.text).join(' '), /bravo0/);
    });

    it('a file only touched is read once, found unchanged by its content, and skipped by its stat after that', async () => {
      open({ 'a.md': `# A\n\n${prose('alpha')}` });
      settle('a.md');
      await importCampaign(campaign, store);
      const later = new Date(Date.now() - 1_800_000);
      fs.utimesSync(path.join(root, 'a.md'), later, later);
      const reader = countingReader();
      const parser = countingParser();
      const touched = await importCampaign(campaign, store, { readFile: reader.readFile, parser });
      assert.deepEqual([reader.reads, parser.parsed.length, touched.counts.unchanged], [['a.md'], 0, 1]);
      await importCampaign(campaign, store, { readFile: reader.readFile });
      assert.deepEqual(reader.reads, ['a.md']);
    });

    it('a rebuild reads and parses every file, whatever their stat says', async () => {
      open({ 'a.md': `# A\n\n${prose('alpha')}`, 'b.md': `# B\n\n${prose('beta')}` });
      settle('a.md', 'b.md');
      await importCampaign(campaign, store);
      const reader = countingReader();
      const parser = countingParser();
      const report = await rebuildIndex(campaign, store, { readFile: reader.readFile, parser });
      assert.deepEqual([reader.reads.sort(), parser.parsed.length, report.counts.indexed], [['a.md', 'b.md'], 2, 2]);
    });

    it('a folder rule changed in campaign.yaml still moves an unread file to its new class', async () => {
      open({ 'npcs/mara.md': `# Mara\n\n${prose('mara')}` });
      settle('npcs/mara.md');
      await importCampaign(campaign, store);
      fs.appendFileSync(path.join(root, 'campaign.yaml'), 'folders:\n  npcs: canon\n');
      campaign = loadCampaign(root);
      const report = await importCampaign(campaign, store);
      assert.equal(report.counts.reclassified, 1);
      assert.equal(source('npcs/mara.md')?.class, 'canon');
    });
  });

  it('lists sources without their text, which is read where it is shown', async () => {
    open({ 'a.md': `# A\n\n${prose('alpha')}` });
    await importCampaign(campaign, store);
    const listed = store.listSources()[0]!;
    assert.equal('content' in listed, false);
    assert.equal('content' in store.getSource(listed.id)!, false);
    assert.equal(store.getSourceContent(listed.id), `# A\n\n${prose('alpha')}`);
    assert.match(store.listPassages(listed.id)[0]!.text, /alpha0/);
  });

  it('moves passages to a new class when only a folder rule changed, without parsing', async () => {
    open({ 'npcs/mara.md': `# Mara\n\n${prose('mara')}` });
    await importCampaign(campaign, store);
    fs.appendFileSync(path.join(root, 'campaign.yaml'), 'folders:\n  npcs: canon\n');
    campaign = loadCampaign(root);
    const parser = countingParser();
    const report = await importCampaign(campaign, store, { parser });
    assert.equal(report.counts.reclassified, 1);
    assert.equal(parser.parsed.length, 0);
    assert.ok(store.listPassages(source('npcs/mara.md')!.id).every((p) => p.class === 'canon'));
  });

  it('reports a duplicate naming the file that holds the content, indexes it once, and promotes it when the holder goes', async () => {
    const text = `# Same\n\n${prose('same')}`;
    open({ 'a/one.md': text, 'b/two.md': text });
    const report = await importCampaign(campaign, store);
    const dup = report.files.find((f) => f.path === 'b/two.md');
    assert.equal(dup?.outcome, 'duplicate');
    assert.equal(dup?.duplicateOf, 'a/one.md');
    assert.match(dup!.issues.find((i) => i.code === 'duplicate')!.message, /same content as a\/one\.md/);
    assert.equal(store.counts().passages, store.listPassages(source('a/one.md')!.id).length);
    fs.rmSync(path.join(root, 'a', 'one.md'));
    await importCampaign(campaign, store);
    assert.equal(source('b/two.md')?.lexicalState, 'ready');
    assert.ok(store.listPassages(source('b/two.md')!.id).length > 0);
  });

  it('leaves out passages another file already holds, and restores them when the holder changes', async () => {
    const shared = `## Aboleth\n\n${prose('tentacle')}`;
    open({ 'monsters/aboleth.md': `# Aboleth\n\n${prose('tentacle')}`, 'monsters-alt/a.md': `# Monsters A\n\n${prose('intro')}\n\n${shared}` });
    await importCampaign(campaign, store);
    const alt = source('monsters-alt/a.md')!;
    assert.equal(alt.lexicalState, 'ready');
    assert.match(alt.issues.find((i) => i.code === 'duplicate')!.message, /1 of 2 passages repeat text already indexed from monsters\/aboleth\.md/);
    assert.equal(store.listPassages(alt.id).length, 1);
    writeFile(root, 'monsters/aboleth.md', `# Aboleth\n\n${prose('rewritten')}`);
    await importCampaign(campaign, store);
    assert.equal(store.listPassages(alt.id).length, 2, 'the text is indexed once, never zero times');
  });

  it('a save that changes one section of a long file: search finds the new words and not the old, every line range follows the edit', async () => {
    const section = (name: string) => `## ${name}\n\n${prose(name.toLowerCase(), 40)}\n`;
    const names = ['Bell', 'Crypt', 'Ferry', 'Lantern', 'Orchard'];
    open({ 'gazetteer.md': `# Gazetteer\n\n${names.map(section).join('\n')}` });
    await importCampaign(campaign, store);
    const id = source('gazetteer.md')!.id;
    const before = store.listPassages(id);
    assert.equal(before.length, names.length);
    // The second section rewritten, a paragraph longer: the sections after it move down.
    const edited = `# Gazetteer\n\n${section('Bell')}\n## Crypt\n\nThe crypt door is bronze now.\n\n${prose('vault', 40)}\n\n${names.slice(2).map(section).join('\n')}`;
    writeFile(root, 'gazetteer.md', edited);
    await indexFile(campaign, store, 'gazetteer.md');
    const after = store.listPassages(id);
    const matches = (query: string) =>
      (store.db.prepare('SELECT p.heading_path FROM passages_fts f JOIN passages p ON p.rowid = f.rowid WHERE passages_fts MATCH ?').all(query) as { heading_path: string }[]).map((r) =>
        JSON.parse(r.heading_path).at(-1),
      );
    assert.deepEqual(matches('bronze'), ['Crypt']);
    assert.deepEqual(matches('crypt0'), [], 'the replaced text is no longer found');
    assert.deepEqual(matches('orchard3'), ['Orchard'], 'the untouched sections are still found');
    const orchard = (of: typeof before) => of.find((p) => p.headingPath.at(-1) === 'Orchard')!;
    assert.equal(orchard(after).startLine, orchard(before).startLine + 2, 'a section below the edit moved down with it');
    const fresh = KnowledgeStore.inMemory(campaign.id);
    try {
      await importCampaign(campaign, fresh);
      const clean = fresh.listPassages(id).map(({ id: passageId, headingPath, text, startLine, endLine, contentHash, tokenCount }) => ({ passageId, headingPath, text, startLine, endLine, contentHash, tokenCount }));
      assert.deepEqual(
        after.map(({ id: passageId, headingPath, text, startLine, endLine, contentHash, tokenCount }) => ({ passageId, headingPath, text, startLine, endLine, contentHash, tokenCount })),
        clean,
        'the same passages as a clean import of the edited file',
      );
    } finally {
      fresh.close();
    }
  });

  it('a run that finds every file unchanged still gives back text whose holder lost it in an interrupted run', async () => {
    const shared = `## Aboleth\n\n${prose('tentacle')}`;
    const whole = `# Same\n\n${prose('same')}`;
    open({
      'a/one.md': whole,
      'b/two.md': whole,
      'monsters/aboleth.md': `# Aboleth\n\n${prose('tentacle')}`,
      'monsters-alt/a.md': `# Monsters A\n\n${prose('intro')}\n\n${shared}`,
    });
    await importCampaign(campaign, store);
    assert.equal(source('b/two.md')?.lexicalState, 'duplicate');
    assert.equal(store.listPassages(source('monsters-alt/a.md')!.id).length, 1);
    // As a run killed after changing the holders and before their dependents took the text back leaves them:
    // one holder without the passage it held, the other removed with its file.
    const aboleth = source('monsters/aboleth.md')!;
    store.writeSource(aboleth, store.getSourceContent(aboleth.id)!, []);
    fs.rmSync(path.join(root, 'a', 'one.md'));
    store.deleteSource(source('a/one.md')!.id);
    const report = await importCampaign(campaign, store);
    assert.equal(report.files.find((f) => f.path === 'monsters-alt/a.md')?.outcome, 'indexed');
    assert.equal(store.listPassages(source('monsters-alt/a.md')!.id).length, 2, 'the text is indexed once, never zero times');
    assert.equal(source('b/two.md')?.lexicalState, 'ready');
    assert.ok(store.listPassages(source('b/two.md')!.id).length > 0);
  });

  it('a save of the holder alone (indexFile) leaves the index as a clean import of the same files would', async () => {
    const shared = `## Aboleth\n\n${prose('tentacle')}`;
    open({
      'monsters/aboleth.md': `# Aboleth\n\n${prose('tentacle')}`,
      'monsters-alt/a.md': `# Monsters A\n\n${prose('intro')}\n\n${shared}`,
      'monsters-copy/aboleth.md': `# Aboleth\n\n${prose('tentacle')}`,
    });
    /** Each source's state and passages: what retrieval can find. */
    const holdings = (of: KnowledgeStore) => of.listSources().map((s) => [s.path, s.lexicalState, s.duplicateOf, of.listPassages(s.id).map((p) => p.text)]);
    const clean = () => cleanImport(holdings);
    await importCampaign(campaign, store);
    assert.equal(store.listPassages(source('monsters-alt/a.md')!.id).length, 1);
    writeFile(root, 'monsters/aboleth.md', `# Aboleth\n\n${prose('rewritten')}`);
    await indexFile(campaign, store, 'monsters/aboleth.md');
    assert.deepEqual(holdings(store), await clean());
    fs.rmSync(path.join(root, 'monsters-alt', 'a.md'));
    await indexFile(campaign, store, 'monsters-alt/a.md');
    assert.deepEqual(holdings(store), await clean());
    assert.equal(source('monsters-copy/aboleth.md')?.lexicalState, 'ready');
  });

  it('a file a symlink leads to holds its text through saves of either name (indexFile), as a clean import has it', async () => {
    open({ 'z-real.md': `# Harbor\n\n${prose('harbor')}` });
    fs.symlinkSync('z-real.md', path.join(root, 'a-link.md'));
    const holdings = (of: KnowledgeStore) => of.listSources().map((s) => [s.path, s.lexicalState, s.duplicateOf, of.listPassages(s.id).length]);
    const clean = () => cleanImport(holdings);
    const real = sourceIdFor(campaign.id, 'z-real.md');
    await importCampaign(campaign, store);
    assert.deepEqual(holdings(store), [
      ['a-link.md', 'duplicate', real, 0],
      ['z-real.md', 'ready', null, 1],
    ]);
    writeFile(root, 'z-real.md', `# Harbor\n\n${prose('tidegate')}`);
    await indexFile(campaign, store, 'z-real.md');
    assert.deepEqual(holdings(store), await clean());
    writeFile(root, 'a-link.md', `# Harbor\n\n${prose('quay')}`);
    await indexFile(campaign, store, 'a-link.md');
    assert.deepEqual(holdings(store), await clean());
    assert.deepEqual([source('a-link.md')?.lexicalState, source('z-real.md')?.lexicalState], ['duplicate', 'ready']);
  });

  it('keeps two campaigns with the same text apart', async () => {
    const text = `# Crypt\n\n${prose('bronze')}`;
    open({ 'crypt.md': text }, 'id: first\ntitle: First\n');
    const first = { campaign, store };
    await importCampaign(campaign, store);
    open({ 'crypt.md': text }, 'id: second\ntitle: Second\n');
    await importCampaign(campaign, store);
    assert.equal(store.getSourceByPath('crypt.md')?.lexicalState, 'ready', 'not a duplicate of the other campaign');
    assert.notEqual(first.store.getSourceByPath('crypt.md')?.id, store.getSourceByPath('crypt.md')?.id);
    assert.equal(first.store.listSources().length, 1);
    assert.ok(first.store.listSources().every((s) => s.campaignId === 'first'));
    first.store.close();
  });

  it('ignores the data folder, campaign.yaml, dotfiles, ignore prefixes and other extensions', async () => {
    open(
      { 'a.md': prose('a'), '.hidden.md': prose('h'), '.obsidian/x.md': prose('o'), 'drafts/x.md': prose('d'), 'notes.json': '{}', '.storyteller/x.md': prose('s'), 'b.markdown': prose('b') },
      'id: t\ntitle: T\nignore: [drafts]\n',
    );
    await importCampaign(campaign, store);
    assert.deepEqual(store.listSources().map((s) => s.path), ['a.md', 'b.markdown']);
  });

  it('a write that fails midway through a file leaves no half of it in the index, and the next run indexes everything', async () => {
    open({ 'a.md': prose('a'), 'b.md': `# One\n\n${prose('b')}\n\n# Two\n\n${prose('broken')}` });
    // The disk fills up, say, after b.md's first passage is written.
    store.db.exec("CREATE TEMP TRIGGER fail BEFORE INSERT ON passages WHEN NEW.text LIKE 'broken%' BEGIN SELECT RAISE(ABORT, 'disk full'); END");
    await assert.rejects(importCampaign(campaign, store), /disk full/);
    assert.equal(source('b.md'), undefined);
    assert.equal((store.db.prepare("SELECT count(*) n FROM passages WHERE text LIKE 'b%'").get() as { n: number }).n, 0);
    store.db.exec('DROP TRIGGER temp.fail');
    const report = await importCampaign(campaign, store);
    assert.equal(report.counts.indexed, 2);
    assert.equal(store.counts().passages, 3);
  });

  it('removes the source of a deleted file', async () => {
    open({ 'a.md': prose('a'), 'b.md': prose('b') });
    await importCampaign(campaign, store);
    fs.rmSync(path.join(root, 'b.md'));
    const report = await importCampaign(campaign, store);
    assert.equal(report.counts.removed, 1);
    assert.deepEqual(store.listSources().map((s) => s.path), ['a.md']);
    assert.equal((store.db.prepare('SELECT count(*) n FROM passages_fts').get() as { n: number }).n, store.counts().passages);
  });

  it('enables and disables through front matter, keeping the passages stored', async () => {
    // As the editor's Enable/Disable commands do: the front matter changes, then the file is indexed.
    const setSourceEnabled = async (relPath: string, enabled: boolean) => {
      const file = path.join(root, relPath);
      fs.writeFileSync(file, withFrontMatterField(fs.readFileSync(file, 'utf8'), 'enabled', enabled));
      await indexFile(campaign, store, relPath);
    };
    const original = `---\ntitle: Mara   # the healer\n---\n# Mara\n\n${prose('mara')}\n`;
    open({ 'mara.md': original });
    await importCampaign(campaign, store);
    const passages = store.listPassages(source('mara.md')!.id).length;
    await setSourceEnabled('mara.md', false);
    assert.equal(fs.readFileSync(path.join(root, 'mara.md'), 'utf8'), original.replace('---\n#', 'enabled: false\n---\n#'));
    assert.equal(source('mara.md')?.enabled, false);
    assert.equal(store.listPassages(source('mara.md')!.id).length, passages);
    assert.equal(campaignStatus(store).passages, 0, 'a disabled source leaves retrieval');
    await setSourceEnabled('mara.md', true);
    assert.equal(source('mara.md')?.enabled, true);
    assert.equal(campaignStatus(store).passages, passages);
  });

  it('deletes a source, its passages and index rows', async () => {
    open({ 'a.md': prose('a'), 'b.md': prose('b') });
    await importCampaign(campaign, store);
    const removed: string[] = [];
    await deleteSource(campaign, store, sourceIdFor('test', 'b.md'), { removeFile: async (f) => (removed.push(f), fs.promises.rm(f)) });
    assert.deepEqual(removed, [path.join(root, 'b.md')]);
    assert.deepEqual(store.listSources().map((s) => s.path), ['a.md']);
    assert.equal((store.db.prepare('SELECT count(*) n FROM passages_fts').get() as { n: number }).n, store.counts().passages);
  });

  it('rebuilds the index without touching the files or the play database', async () => {
    open({ 'a.md': prose('a'), 'b.md': prose('b') });
    await importCampaign(campaign, store);
    fs.writeFileSync(campaign.playPath, 'play data stays');
    const before = store.listSources().map((s) => [s.path, s.sha256]);
    const report = await rebuildIndex(campaign, store);
    assert.equal(report.counts.indexed, 2);
    assert.deepEqual(store.listSources().map((s) => [s.path, s.sha256]), before);
    assert.equal(fs.readFileSync(campaign.playPath, 'utf8'), 'play data stays');
  });

  it('indexes one saved file on its own, and removes a path that is gone', async () => {
    open({ 'a.md': prose('a') });
    await importCampaign(campaign, store);
    writeFile(root, 'new.md', prose('fresh'));
    const added = await indexFile(campaign, store, 'new.md');
    assert.equal(added.counts.indexed, 1);
    fs.rmSync(path.join(root, 'new.md'));
    const gone = await indexFile(campaign, store, 'new.md');
    assert.equal(gone.counts.removed, 1);
    assert.deepEqual(store.listSources().map((s) => s.path), ['a.md']);
  });

  it('reports progress and per-campaign status with lexical and semantic separately', async () => {
    open({ 'a.md': prose('a'), 'b.md': '---\nclass: x\n---\n' });
    const events: string[] = [];
    await importCampaign(campaign, store, { onProgress: (e) => events.push(`${e.phase}:${e.done}/${e.total}`) });
    assert.deepEqual(events, ['scan:0/0', 'index:1/2', 'index:2/2', 'done:2/2']);
    const status = campaignStatus(store);
    assert.deepEqual(status.lexical, { pending: 0, ready: 1, error: 1, duplicate: 0 });
    assert.deepEqual(status.semantic, { off: 2, pending: 0, ready: 0, error: 0, stale: 0 });
    assert.equal(status.errors, 1);
  });

  it('parses on worker threads with the same result as in-thread', async () => {
    open({ 'a.md': `# A\n\n${prose('alpha', 900)}`, 'b.md': `# B\n\n${prose('beta')}`, 'c.md': `# C\n\n${prose('gamma')}` });
    const parser = workerParser();
    try {
      await importCampaign(campaign, store, { parser });
    } finally {
      await parser.close();
    }
    const viaWorkers = store.listSources().map((s) => store.listPassages(s.id));
    await rebuildIndex(campaign, store);
    assert.deepEqual(store.listSources().map((s) => store.listPassages(s.id)), viaWorkers);
  });

  it('reads a Windows file (byte-order mark, CRLF) as its writer sees it: its front matter, its lines, no stray marks', async () => {
    const text = ['---', 'class: canon', 'title: Harbour', '---', '# Harbour', '', prose('dock'), '', '## Night', '', prose('lantern'), ''].join('\r\n');
    open({ 'harbour.md': Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text, 'utf8')]) });
    await importCampaign(campaign, store);
    const harbour = source('harbour.md')!;
    assert.deepEqual([harbour.class, harbour.classOrigin, harbour.title, harbour.issues], ['canon', { kind: 'front-matter' }, 'Harbour', []]);
    const passages = store.listPassages(harbour.id);
    assert.deepEqual(passages.map((p) => [p.headingPath, p.startLine, p.endLine]), [[['Harbour'], 7, 7], [['Harbour', 'Night'], 11, 11]]);
    assert.ok(!passages.some((p) => /[\uFEFF\r]/.test(p.text)));
  });
});
