import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { INTERRUPTED_MESSAGE, PlayStore } from '../../../src/story';
import { EXAMPLE_CAMPAIGN } from '../../support/corpora';
import { FakeOllama } from '../../support/fakeOllama';
import { requireBuiltCli, runBuiltCli, spawnCli, until } from './attackSupport';

/**
 * Two processes on one play.db, as the extension and a terminal are: a second `storyteller play` opened
 * while the first streams a turn leaves that turn to it, and still recovers one whose process is gone.
 */
describe('attacks: play.db opened by a second process while a turn streams', function () {
  this.timeout(120_000);
  let root: string;
  let fake: FakeOllama;
  before(() => requireBuiltCli());
  beforeEach(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'st-play-two-'));
    fs.cpSync(EXAMPLE_CAMPAIGN, root, { recursive: true, filter: (src) => !src.includes('.storyteller') });
    fake = await FakeOllama.start();
  });
  afterEach(async () => {
    await fake.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  const playArgs = () => ['play', root, '--host', fake.url, '--model', 'llama3.2'];
  const turns = () => {
    const store = new PlayStore(path.join(root, '.storyteller', 'play.db'));
    try {
      return store.allTurns(store.listAdventures()[0]!.id);
    } finally {
      store.close();
    }
  };

  it('a second play started mid-turn leaves the streaming turn alone; it completes whole', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const chunks = ['The gate ', 'groans ', 'open, ', 'and the ', 'abbey ', 'breathes.'];
    fake.queue({ chunks, holdAfterChunks: { after: 3, until: held } });
    const first = spawnCli(playArgs(), { cwd: root });
    try {
      first.child.stdin!.write('knock on the abbey gate\n');
      await until(() => first.stdout().includes('open, ') || first.child.exitCode !== null, 'the reply is streaming');

      const second = await runBuiltCli([...playArgs()], { cwd: root });
      assert.equal(second.code, 0, second.stderr);
      const during = turns();
      assert.deepEqual(
        during.map((t) => [t.status, t.error]),
        [['streaming', null]],
        'the second process did not mark the first one’s turn interrupted',
      );

      release();
      first.child.stdin!.end('/quit\n');
      assert.equal((await first.exit).code, 0, first.stderr());
      const [turn] = turns();
      assert.deepEqual([turn!.status, turn!.narration, turn!.error], ['complete', chunks.join(''), null]);
    } finally {
      release();
      first.child.kill('SIGKILL');
    }
  });

  it('a turn whose process was killed is recovered by the next process that opens play.db', async () => {
    fake.queue({ chunks: ['The bells ', 'ring ', 'and ring.'], holdAfterChunks: { after: 2, until: new Promise(() => undefined) } });
    const first = spawnCli(playArgs(), { cwd: root });
    first.child.stdin!.write('listen for the bells\n');
    await until(() => first.stdout().includes('ring ') || first.child.exitCode !== null, 'the reply is streaming');
    first.child.kill('SIGKILL');
    assert.equal((await first.exit).signal, 'SIGKILL');
    assert.equal(turns()[0]!.error, null, 'nothing has recovered it yet');

    const next = await runBuiltCli([...playArgs()], { cwd: root });
    assert.equal(next.code, 0, next.stderr);
    const [turn] = turns();
    assert.notEqual(turn!.status, 'streaming');
    assert.equal(turn!.error, INTERRUPTED_MESSAGE);
    assert.equal(turn!.action.text, 'listen for the bells');
  });
});
