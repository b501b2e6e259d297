import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { unsupportedNode } from '../../../src/cli/runtime';
import { loadCampaign } from '../../../src/knowledge/campaign';
import { KnowledgeStore } from '../../../src/knowledge/indexing';
import { INTERRUPTED_MESSAGE, PlayStore } from '../../../src/story';
import { EXAMPLE_CAMPAIGN, corpusPath } from '../../support/corpora';
import { FakeOllama } from '../../support/fakeOllama';
import { campaignFiles, integrity, requireBuiltCli, runBuiltCli, spawnCli, until } from './attackSupport';

/**
 * Faults and load against the built CLI (`node dist/cli.js`), as separate processes: kill -9 mid-index and
 * mid-play, two index runs at once, search while the index is rebuilt, and an unsupported Node.js. Nothing
 * the writer wrote or played is lost, and the index ends as a clean one would be.
 */

function copyCampaign(from: string, yaml?: string): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'st-fault-'));
  fs.cpSync(from, root, { recursive: true, filter: (src) => !src.includes('.storyteller') });
  if (yaml) fs.writeFileSync(path.join(root, 'campaign.yaml'), yaml);
  return root;
}

/** Sources, their states and passage counts: what search can find, independent of timing. */
function holdings(root: string): string[] {
  const store = KnowledgeStore.open(loadCampaign(root));
  try {
    return store.listSources().map((s) => `${s.path}: ${s.lexicalState}, ${store.listPassages(s.id).length}`);
  } finally {
    store.close();
  }
}

/** Sources written so far, read without taking any lock a writer needs (0 before the index exists). */
function sourcesWritten(root: string): number {
  const file = path.join(root, '.storyteller', 'index.db');
  if (!fs.existsSync(file)) return 0;
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      return (db.prepare('SELECT count(*) n FROM sources').get() as { n: number }).n;
    } finally {
      db.close();
    }
  } catch {
    return 0; // the schema is still being created
  }
}

describe('attacks: faults and load against the built CLI', function () {
  this.timeout(180_000);
  const SRD = 'id: srd\ntitle: D&D SRD\n';
  let clean: string[];
  const dirs: string[] = [];
  const fresh = (from: string, yaml?: string) => {
    const dir = copyCampaign(from, yaml);
    dirs.push(dir);
    return dir;
  };

  before(async () => {
    requireBuiltCli();
    const reference = fresh(corpusPath('dnd-srd-5.1'), SRD);
    const { code, stderr } = await runBuiltCli(['index', reference]);
    assert.equal(code, 0, stderr);
    clean = holdings(reference);
    assert.ok(clean.length > 100);
  });
  after(() => {
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  // The D&D SRD (1028 files) spans a few of an import's commits (every 500 files or second), so a kill lands
  // after some are committed and before the last. (The Fate SRD's 152 files now index within one commit.)
  for (const after of [1, 40]) {
    it(`kill -9 during index after ${after} sources committed: files untouched, the index usable, and the next index builds on it and ends as a clean one`, async () => {
      const root = fresh(corpusPath('dnd-srd-5.1'), SRD);
      const files = campaignFiles(root);
      const run = spawnCli(['index', root]);
      await until(() => sourcesWritten(root) >= after || run.child.exitCode !== null, `${after} sources are written`);
      run.child.kill('SIGKILL');
      const { signal } = await run.exit;
      assert.equal(signal, 'SIGKILL', 'the run was killed before it finished');
      assert.deepEqual(campaignFiles(root), files);
      assert.equal(integrity(path.join(root, '.storyteller', 'index.db')), 'ok');
      // Usable: every source committed is whole, exactly as a clean index holds it.
      const partial = holdings(root);
      assert.ok(partial.length >= after && partial.length < clean.length, `${partial.length} of ${clean.length} sources committed`);
      for (const line of partial) assert.ok(clean.includes(line), `${line} is as in a clean index`);
      const again = await runBuiltCli(['index', root, '--json']);
      assert.equal(again.code, 0, again.stderr);
      const report = JSON.parse(again.stdout) as { counts: { unchanged: number } };
      assert.equal(report.counts.unchanged, partial.length, 'the sources committed before the kill are not parsed again');
      assert.deepEqual(holdings(root), clean);
    });
  }

  it('kill -9 during index --rebuild: the old index is whole afterwards, and search never saw it shrink', async () => {
    // Three SRDs, each copy's files made distinct, so the rebuild outlasts a search started beside it.
    const root = fresh(corpusPath('dnd-srd-5.1'), SRD);
    for (const copy of ['copy-2', 'copy-3']) {
      fs.cpSync(corpusPath('dnd-srd-5.1'), path.join(root, copy), { recursive: true });
      for (const file of campaignFiles(path.join(root, copy)).keys()) fs.appendFileSync(path.join(root, copy, file), `\n\nFrom ${copy}.\n`);
    }
    assert.equal((await runBuiltCli(['index', root])).code, 0);
    const whole = holdings(root);
    const search = () => runBuiltCli(['search', 'aboleth tentacle mucus', '--campaign', root, '--lexical-only', '--json']);
    const hitsBefore = JSON.parse((await search()).stdout) as { hits: { passageId: string }[] };
    assert.ok(hitsBefore.hits.length > 0);

    const rebuild = spawnCli(['index', root, '--rebuild']);
    const lock = path.join(root, '.storyteller', 'index.db.lock');
    await until(() => fs.existsSync(lock) || rebuild.child.exitCode !== null, 'the rebuild holds the index');
    // A search while the rebuild writes the new index, uncommitted, sees the old one whole.
    const during = await search();
    assert.equal(during.code, 0, during.stderr);
    assert.deepEqual((JSON.parse(during.stdout) as typeof hitsBefore).hits.map((h) => h.passageId), hitsBefore.hits.map((h) => h.passageId));
    rebuild.child.kill('SIGKILL');
    assert.equal((await rebuild.exit).signal, 'SIGKILL', 'the rebuild was still running when it was killed');
    assert.deepEqual(holdings(root), whole, 'the old index is whole');
    assert.equal((await runBuiltCli(['index', root])).code, 0);
    assert.deepEqual(holdings(root), whole);
  });

  it('two index runs at once: the second waits, says so, and both succeed', async () => {
    const root = fresh(corpusPath('dnd-srd-5.1'), SRD);
    const first = spawnCli(['index', root]);
    const lock = path.join(root, '.storyteller', 'index.db.lock');
    await until(() => fs.existsSync(lock) || first.child.exitCode !== null, 'the first run holds the index');
    const second = spawnCli(['index', root]);
    const [a, b] = await Promise.all([first.exit, second.exit]);
    assert.equal(a.code, 0, first.stderr());
    assert.equal(b.code, 0, second.stderr());
    assert.doesNotMatch(first.stderr() + second.stderr(), /locked/);
    assert.match(second.stderr(), /another index run \(process \d+\) is updating this campaign's index; waiting for it to finish/);
    assert.match(second.stdout(), /0 indexed, \d+ unchanged/);
    assert.ok(!fs.existsSync(lock), 'the lock is gone when both are done');
    assert.deepEqual(holdings(root), clean);
  });

  it('kill -9 during play: the played turns and the action are kept, the database is whole, play resumes', async () => {
    const fake = await FakeOllama.start();
    try {
      const root = fresh(EXAMPLE_CAMPAIGN);
      const args = ['play', root, '--host', fake.url, '--model', 'llama3.2'];
      fake.queue({ chunks: ['The bells ring.'] }, { chunks: Array.from({ length: 200 }, (_, i) => `word${i} `), chunkDelayMs: 20 });
      const run = spawnCli(args, { cwd: root });
      run.child.stdin!.write('listen for the bells\nknock on the abbey gate\n');
      await until(() => run.stdout().includes('word3 '), 'the second reply is streaming');
      run.child.kill('SIGKILL');
      assert.equal((await run.exit).signal, 'SIGKILL');

      const playDb = path.join(root, '.storyteller', 'play.db');
      assert.equal(integrity(playDb), 'ok');
      const store = new PlayStore(playDb);
      try {
        const [adventure] = store.listAdventures();
        const turns = store.allTurns(adventure!.id);
        assert.deepEqual(turns.map((t) => t.action.text), ['listen for the bells', 'knock on the abbey gate']);
        assert.equal(turns[0]!.narration, 'The bells ring.');
        assert.equal(turns[0]!.status, 'complete');
        assert.notEqual(turns[1]!.status, 'complete', 'the cut turn is not taken for a whole one');
        assert.equal(store.recoverInterrupted(), 1);
        assert.equal(store.allTurns(adventure!.id)[1]!.error, INTERRUPTED_MESSAGE, 'the cut turn says it was interrupted');
      } finally {
        store.close();
      }
      fake.queue({ chunks: ['The gate opens.'] });
      const resumed = spawnCli(args, { cwd: root });
      resumed.child.stdin!.end('/retry\n/quit\n');
      const { code } = await resumed.exit;
      assert.equal(code, 0, resumed.stderr());
      assert.match(resumed.stdout(), /The gate opens\./);
      const after = new PlayStore(playDb);
      try {
        const turns = after.allTurns(after.listAdventures()[0]!.id);
        // The cut turn was marked interrupted on opening; the retry that succeeded replaced it, and says so.
        assert.match(resumed.stdout(), /removed the failed attempt at this action/);
        assert.deepEqual(turns.map((t) => [t.action.text, t.status, t.narration]), [
          ['listen for the bells', 'complete', 'The bells ring.'],
          ['knock on the abbey gate', 'complete', 'The gate opens.'],
        ]);
      } finally {
        after.close();
      }
    } finally {
      await fake.close();
    }
  });

  it('refuses to start on a Node.js older than 24, naming the version needed, before touching the campaign', async function () {
    assert.equal(unsupportedNode('v24.21.0'), undefined);
    assert.match(unsupportedNode('v20.20.2')!, /needs Node\.js 24 or newer, and this is Node\.js 20\.20\.2/);
    const older = ['/usr/bin/node', '/usr/local/bin/node'].find((bin) => {
      if (!fs.existsSync(bin)) return false;
      const major = Number(execFileSync(bin, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }).trim());
      return major < 24;
    });
    if (!older) return this.skip(); // no older Node.js on this machine to run it with
    const root = fresh(EXAMPLE_CAMPAIGN);
    for (const command of [['index', root], ['import-lorebook', corpusPath('lorebooks', 'Eldoria.worldinfo.st-current.json'), '--class', 'canon', '--campaign', root]]) {
      const { code, stderr } = await runBuiltCli(command, { node: older });
      assert.equal(code, 3);
      assert.match(stderr, /^storyteller: needs Node\.js 24 or newer, and this is Node\.js \d+\.\d+\.\d+/);
    }
    assert.ok(!fs.existsSync(path.join(root, '.storyteller')), 'nothing was created');
    assert.ok(!fs.existsSync(path.join(root, 'lore')));
  });
});
