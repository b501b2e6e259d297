import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { EXAMPLE_CAMPAIGN } from '../../support/corpora';
import { writePlayedAndIndexed } from '../../support/playedCampaign';
import { integrity, requireBuiltCli, runBuiltCli, spawnCli, type Spawned } from './attackSupport';

/**
 * Kills aimed at the writer (SIGKILL against the built CLI, at varied moments while it writes): the files
 * are never empty or half written, a lorebook or a set of proposals is there none or all once the campaign
 * is opened again, the index passes SQLite's integrity check, and running the command again finishes the
 * job with exactly one copy of everything.
 */

/** Kills `run` at the `count`-th change to the campaign's files under `root` (the index and play data aside); false if it finished first. */
function killAtWrite(run: Spawned, root: string, count: number): Promise<boolean> {
  return new Promise((resolve) => {
    let seen = 0;
    const watcher = fs.watch(root, { recursive: true }, (_event, name) => {
      if (!name || /^\.storyteller[/\\](?!writes)/.test(name) || ++seen < count) return;
      watcher.close();
      run.child.kill('SIGKILL');
    });
    void run.exit.then(({ signal }) => {
      watcher.close();
      resolve(signal === 'SIGKILL');
    });
  });
}

/** campaign.yaml after a kill: never empty, always YAML. */
function campaignYaml(root: string): Record<string, unknown> {
  const text = fs.readFileSync(path.join(root, 'campaign.yaml'), 'utf8');
  assert.ok(text.length > 0, 'campaign.yaml is not empty');
  return YAML.parse(text) as Record<string, unknown>;
}

const ENTRIES = 150;

/** A Character Card V2 whose book has 150 entries and activation settings campaign.yaml gains on import. */
function bigCard(file: string): void {
  const entries = Array.from({ length: ENTRIES }, (_, i) => ({ id: i, keys: [`omen ${i}`], content: `Omen ${i}: ${'the bells ring under the water. '.repeat(40)}`, comment: `Omen ${i}`, enabled: true }));
  const card = { spec: 'chara_card_v2', spec_version: '2.0', data: { name: 'Seer', description: 'Reads omens.', character_book: { name: 'Omens', scan_depth: 6, token_budget: 900, entries } } };
  fs.writeFileSync(file, JSON.stringify(card));
}

/** Each imported entry's id, once per file that holds it. */
function importedEntries(root: string): string[] {
  const folder = path.join(root, 'lore');
  if (!fs.existsSync(folder)) return [];
  return fs
    .readdirSync(folder)
    .filter((n) => n.endsWith('.md'))
    .map((n) => {
      const text = fs.readFileSync(path.join(folder, n), 'utf8');
      assert.match(text, /^---\n[\s\S]*\n---\nOmen \d+: /, `${n} is a whole entry`);
      return /entry (\d+)\./.exec(text)![1]!;
    })
    .sort();
}

describe('attacks: kills aimed at the writer', function () {
  this.timeout(600_000);
  let dir: string;
  before(() => requireBuiltCli());
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-write-kill-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('import-lorebook killed at varied moments of its write: none or all of the book (campaign.yaml with it), and a rerun gives exactly one copy of each entry', async () => {
    const book = path.join(dir, 'omens.json');
    bigCard(book);
    const all = Array.from({ length: ENTRIES }, (_, i) => String(i)).sort();
    let killed = 0;
    // A few changes per entry (staged, flushed, linked, the staged name removed): these land from the first staged file to the last link.
    for (const [i, at] of [1, 30, 150, 300, 450, 580].entries()) {
      const root = path.join(dir, `campaign-${i}`);
      fs.cpSync(EXAMPLE_CAMPAIGN, root, { recursive: true, filter: (src) => !src.includes('.storyteller') });
      const run = spawnCli(['import-lorebook', book, '--class', 'canon', '--campaign', root]);
      run.child.stdin!.end();
      if (await killAtWrite(run, root, at)) killed++;
      campaignYaml(root);

      // Opened again (the index run here), the interrupted set is finished or undone.
      const index = await runBuiltCli(['index', root]);
      assert.equal(index.code, 0, index.stderr);
      assert.equal(integrity(path.join(root, '.storyteller', 'index.db')), 'ok');
      const entries = importedEntries(root);
      const settings = campaignYaml(root).world_info as { scan_depth?: number } | undefined;
      if (entries.length === 0) assert.equal(settings?.scan_depth, undefined, 'no entries, no book settings');
      else {
        assert.deepEqual(entries, all, `all of the book or none (${entries.length} of ${ENTRIES})`);
        assert.equal(settings?.scan_depth, 6, 'the book settings came with the entries');
      }

      const again = await runBuiltCli(['import-lorebook', book, '--class', 'canon', '--campaign', root]);
      assert.equal(again.code, 0, again.stderr);
      assert.deepEqual(importedEntries(root), all, 'exactly one copy of each entry');
      assert.equal((campaignYaml(root).world_info as { scan_depth?: number }).scan_depth, 6);
      assert.equal(integrity(path.join(root, '.storyteller', 'index.db')), 'ok');
    }
    assert.ok(killed >= 3, `most kills landed while it wrote (${killed} of 6)`);
  });

  it('two imports of one book at once: exactly one copy of each entry, and a loser is told plainly, naming the file', async () => {
    const book = path.join(dir, 'omens.json');
    bigCard(book);
    const root = path.join(dir, 'campaign');
    fs.cpSync(EXAMPLE_CAMPAIGN, root, { recursive: true, filter: (src) => !src.includes('.storyteller') });
    const [a, b] = await Promise.all([0, 1].map(() => runBuiltCli(['import-lorebook', book, '--class', 'canon', '--campaign', root])));
    for (const run of [a!, b!]) {
      assert.doesNotMatch(run.stderr, /EEXIST/);
      if (run.code !== 0) assert.match(run.stderr, /^storyteller import-lorebook: .*omens\.json: lore\/omen-\d+\.md exists already: it appeared while this was being written \(another import at the same time\?\); nothing was written — run the import again\n$/);
    }
    assert.ok(a!.code === 0 || b!.code === 0, a!.stderr + b!.stderr);
    assert.deepEqual(importedEntries(root), Array.from({ length: ENTRIES }, (_, i) => String(i)).sort());
  });

  describe('propose --write', () => {
    let template: string;
    before(async () => {
      template = fs.mkdtempSync(path.join(os.tmpdir(), 'st-write-kill-played-'));
      await writePlayedAndIndexed(template);
    });
    after(() => fs.rmSync(template, { recursive: true, force: true }));

    /** Which of the set's four files say what play made true. */
    const applied = (root: string): boolean[] => {
      const read = (rel: string) => (fs.existsSync(path.join(root, rel)) ? fs.readFileSync(path.join(root, rel), 'utf8') : undefined);
      for (const rel of ['places/bridge.md', 'characters/mara.md', 'places/north-gate.md']) assert.ok(read(rel)!.length > 0, `${rel} is not empty`);
      return [read('places/bridge.md')!.includes('**Status:** destroyed'), read('characters/mara.md')!.includes('**Age:** 52'), read('places/north-gate-update.md') !== undefined, read('characters/tomas-the-smuggler.md') !== undefined];
    };

    it('killed at varied moments of its write: none or all of the set, and proposing again writes the rest', async () => {
      let killed = 0;
      for (const at of [1, 2, 3, 4, 6, 8, 10, 12]) {
        const root = path.join(dir, `played-${at}`);
        fs.cpSync(template, root, { recursive: true });
        const run = spawnCli(['propose', root, '--write']);
        run.child.stdin!.end();
        if (await killAtWrite(run, root, at)) killed++;
        campaignYaml(root);

        // A dry run opens the campaign: the interrupted set is finished or undone, and nothing else is written.
        const look = await runBuiltCli(['propose', root]);
        assert.equal(look.code, 0, look.stderr);
        const state = applied(root);
        assert.ok(state.every(Boolean) || !state.some(Boolean), `none or all of the set: ${state.join(', ')}`);
        assert.equal(integrity(path.join(root, '.storyteller', 'index.db')), 'ok');

        const again = await runBuiltCli(['propose', root, '--write']);
        assert.equal(again.code, 0, again.stderr);
        assert.deepEqual(applied(root), [true, true, true, true]);
        assert.equal(fs.readFileSync(path.join(root, 'characters', 'mara.md'), 'utf8').match(/\*\*Age:\*\*/g)?.length, 1, 'each edit once');
        assert.match((await runBuiltCli(['propose', root])).stdout, /The canon already agrees with this branch: nothing to propose\./);
      }
      assert.ok(killed >= 4, `most kills landed before the run ended (${killed} of 8)`);
    });

    it('two runs at once: one writes the set once, the other waits and then finds nothing left to propose', async () => {
      const root = path.join(dir, 'played');
      fs.cpSync(template, root, { recursive: true });
      const runs = await Promise.all([0, 1].map(() => runBuiltCli(['propose', root, '--write'])));
      const wrote = runs.filter((r) => r.code === 0 && /Wrote 4 files/.test(r.stdout));
      assert.equal(wrote.length, 1, runs.map((r) => r.stdout + r.stderr).join('\n'));
      // The second waits for the first (saying so when it had to) and drafts from what the first wrote.
      const other = runs.find((r) => !wrote.includes(r))!;
      assert.equal(other.code, 0, other.stderr);
      assert.match(other.stdout, /The canon already agrees with this branch: nothing to propose\./);
      assert.match(other.stderr, /^(storyteller propose: another run \(process \d+\) is writing this campaign's files; waiting for it to finish\n)?$/);
      assert.deepEqual(applied(root), [true, true, true, true]);
      assert.equal(fs.readFileSync(path.join(root, 'characters', 'mara.md'), 'utf8').match(/\*\*Age:\*\*/g)?.length, 1);
    });

    it('a new file where a dangling link lies: refused, naming the file and the link, and nothing of the set is written', async () => {
      const root = path.join(dir, 'played');
      fs.cpSync(template, root, { recursive: true });
      fs.symlinkSync(path.join(dir, 'nowhere.md'), path.join(root, 'characters', 'tomas-the-smuggler.md'));
      const run = await runBuiltCli(['propose', root, '--write']);
      assert.equal(run.code, 3);
      assert.match(run.stderr, /^storyteller propose: not written: characters\/tomas-the-smuggler\.md: a symbolic link is in the way \(to .*nowhere\.md, which does not exist\); a proposal never writes through a link; so none of the set was written\n$/);
      assert.deepEqual(applied(root), [false, false, false, false]);
      assert.ok(!fs.existsSync(path.join(dir, 'nowhere.md')));
    });
  });
});
