import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSession } from '../../src/session';
import { proposeCanonUpdates, recordDiscarded } from '../../src/story';
import { FakeOllama } from '../support/fakeOllama';
import { REPO_ROOT } from '../support/corpora';
import { readTree, runCliCaptured } from '../support/interchange';
import { writePlayedAndIndexed } from '../support/playedCampaign';

const GOLDEN = path.join(REPO_ROOT, 'test', 'golden', 'propose-dry-run.txt');
const MODEL_GOLDEN = path.join(REPO_ROOT, 'test', 'golden', 'propose-model-dry-run.txt');

describe('storyteller propose', () => {
  let dir: string;
  let root: string;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-propose-cli-'));
    root = path.join(dir, 'campaign');
    await writePlayedAndIndexed(root);
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const files = () => readTree(root, (rel) => rel.startsWith('.storyteller'));

  it('a dry run prints each proposal as a unified diff with its evidence, and writes nothing (golden)', async () => {
    const before = files();
    const out = await runCliCaptured(['propose', root], dir);
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.stdout, fs.readFileSync(GOLDEN, 'utf8'));
    assert.deepEqual(files(), before);
  });

  it('--write applies the edits, says what it wrote, and the next run finds the canon agreeing with play', async () => {
    const out = await runCliCaptured(['propose', root, '--write'], dir);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /Wrote 4 files: places\/bridge\.md, places\/north-gate-update\.md, characters\/mara\.md, characters\/tomas-the-smuggler\.md; the index is up to date with them\.\n$/);
    assert.match(fs.readFileSync(path.join(root, 'places', 'bridge.md'), 'utf8'), /- \*\*Status:\*\* destroyed/);
    assert.match(fs.readFileSync(path.join(root, 'places', 'north-gate.md'), 'utf8'), /- \*\*Status:\*\* open/, 'locked canon is never edited');
    const again = await runCliCaptured(['propose', root], dir);
    assert.match(again.stdout, /The canon already agrees with this branch: nothing to propose\./);
  });

  it('--discarded lists what the writer discarded, and --undo-discard brings it back into the next run', async () => {
    const session = openSession(root);
    try {
      await session.reindex();
      const adventure = session.play.listAdventures(session.campaign.id)[0]!;
      const set = await proposeCanonUpdates({ campaign: session.campaign, store: session.store, play: session.play, adventure });
      // The writer discards two of them in the refactor preview.
      recordDiscarded(session.play.db, session.campaign.id, adventure.id, set.proposals.filter((p) => p.file === 'characters/mara.md'));
    } finally {
      await session.close();
    }
    const dry = await runCliCaptured(['propose', root], dir);
    assert.match(dry.stdout, /2 proposals you discarded before for the same turns left out \(--discarded lists them, --undo-discard brings them back\)/);
    assert.doesNotMatch(dry.stdout, /characters\/mara\.md/);
    const listed = await runCliCaptured(['propose', root, '--discarded'], dir);
    assert.equal(listed.code, 0, listed.stderr);
    const ids = [...listed.stdout.matchAll(/^ {2}([0-9a-f]{12}) {2}\d{4}-\d\d-\d\d {2}characters\/mara\.md: Sister Mara — (Age|Trust)/gm)].map((m) => m[1]!);
    assert.equal(ids.length, 2, listed.stdout);
    const unknown = await runCliCaptured(['propose', root, '--undo-discard', 'ffffffffffff'], dir);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /no discarded proposal 'ffffffffffff': --discarded lists them/);
    const undone = await runCliCaptured(['propose', root, '--undo-discard', ids[0]!], dir);
    assert.equal(undone.code, 0, undone.stderr);
    assert.match(undone.stdout, /^1 discarded proposal from "The Night Watch" will be proposed again:\n {2}characters\/mara\.md: Sister Mara/);
    const again = await runCliCaptured(['propose', root], dir);
    assert.match(again.stdout, /1 proposal you discarded before for the same turns left out/);
    assert.equal([...again.stdout.matchAll(/^\d+\. characters\/mara\.md/gm)].length, 1, 'the restored one is proposed again');
    await runCliCaptured(['propose', root, '--undo-discard', 'all'], dir);
    assert.match((await runCliCaptured(['propose', root, '--discarded'], dir)).stdout, /^Nothing from "The Night Watch" has been discarded\.\n$/);
  });

  it('--json gives the proposals, their diffs and what was refused', async () => {
    const out = await runCliCaptured(['propose', root, '--json'], dir);
    assert.equal(out.code, 0, out.stderr);
    const data = JSON.parse(out.stdout) as { proposals: { file: string; turns: { number: number }[] }[]; diffs: string[]; written: string[]; refused: unknown[] };
    assert.deepEqual(data.proposals.map((p) => p.file), ['places/bridge.md', 'places/north-gate-update.md', 'characters/mara.md', 'characters/mara.md', 'characters/tomas-the-smuggler.md']);
    assert.match(data.diffs[0]!, /^--- a\/places\/bridge\.md\n\+\+\+ b\/places\/bridge\.md\n@@ -4,7 \+4,7 @@\n/);
    assert.deepEqual(data.written, []);
  });

  it('--model drafts on the server --base-url names: its edits and its refusals print beside the rules, and nothing is written (golden)', async () => {
    const fake = await FakeOllama.start({ chatModels: ['llama3.2'], capabilities: ['completion', 'tools'] });
    try {
      const call = (args: Record<string, unknown>) => ({ name: 'propose_edit', arguments: args });
      fake.queue(
        {
          toolCalls: [
            call({ file: 'characters/mara.md', old_text: 'She is kind to travellers, curt with the\nwatch,', new_text: 'She is kind to travellers, owes Tomas a favour, and is curt with the\nwatch,', reason: 'Mara owes Tomas after turn 3', turns: [3] }),
            call({ file: 'places/smugglers-landing.md', old_text: '', new_text: '---\ntitle: Smugglers’ Landing\n---\n# Smugglers’ Landing\n\nWhere Tomas ties up below the broken bridge.\n', reason: 'A new place named in turn 3', turns: [3] }),
            call({ file: '../outside.md', old_text: '', new_text: '# Out\n', reason: 'escape', turns: [] }),
            call({ file: 'places/old-abbey.md', old_text: 'The abbey has a moat.', new_text: 'It has no moat.', reason: 'invented', turns: [1] }),
          ],
        },
        { chunks: ['Nothing else changed.'] },
      );
      const before = files();
      const out = await runCliCaptured(['propose', root, '--model', 'llama3.2', '--base-url', fake.url], dir);
      assert.equal(out.code, 0, out.stderr);
      assert.equal(out.stdout, fs.readFileSync(MODEL_GOLDEN, 'utf8'));
      assert.deepEqual(files(), before);
      assert.equal(fake.requestsTo('/api/chat').length, 2, 'the model heard its answers once');
    } finally {
      await fake.close();
    }
  });

  it('--provider or --base-url without --model is a usage error that says what is missing', async () => {
    const out = await runCliCaptured(['propose', root, '--base-url', 'http://127.0.0.1:9'], dir);
    assert.equal(out.code, 2);
    assert.match(out.stderr, /--provider and --base-url name the server of the model that drafts: give it with --model <name>/);
  });

  it('an adventure that is not there, or none played, is a usage error that says so', async () => {
    const unknown = await runCliCaptured(['propose', root, '--adventure', 'nope'], dir);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /no adventure 'nope' in .*play\.db/);
    fs.rmSync(path.join(root, '.storyteller', 'play.db'));
    const none = await runCliCaptured(['propose', root], dir);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /no adventure has been played in this campaign \(.*play\.db\): play one first/);
  });
});
