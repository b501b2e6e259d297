import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from '../../src/cli/run';
import { EXIT } from '../../src/cli/command';
import { withIndexLock } from '../../src/knowledge/indexing/indexLock';
import { INDEX_MIGRATIONS } from '../../src/knowledge/indexing/indexSchema';
import { openDatabase } from '../../src/knowledge/indexing/sqlite';
import { PlayStore } from '../../src/story/playStore';
import { makeCampaign, removeDir } from '../support/campaignDirs';
import { turnsLeftByCrash } from '../support/crashedPlay';
import { KAELEN } from './storySupport';

/**
 * A campaign on a network share, opened from two machines: what one machine's process holds, the other
 * cannot see. Its process id, start time and boot id mean nothing here, so its lock and its turns are never
 * taken for a dead process's; only a lock its holder stopped renewing is.
 */

const OTHER_HOST = `not-${os.hostname()}`;

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Whatever process id the other machine's run has: on this machine it may name anything, or nothing. */
const REMOTE_PID = 4242;

describe('a process on another machine', () => {
  let root: string;
  afterEach(() => removeDir(root));

  it('storyteller index waits for an index run on another machine, naming it, and runs once that run lets go', async () => {
    root = makeCampaign({ 'harbor.md': '# Harbor\n\nThe harbormoot meets.\n' });
    const lock = path.join(root, '.storyteller', 'index.db.lock');
    fs.mkdirSync(path.dirname(lock), { recursive: true });
    // What that machine's run writes; its boot differs from this machine's, as another machine's always does.
    const remote = JSON.stringify({ pid: REMOTE_PID, host: OTHER_HOST, started: '12345', boot: 'another-machines-boot' });
    fs.writeFileSync(lock, `${remote}\n`);
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let err = '';
    stdout.resume();
    stderr.on('data', (c: Buffer) => (err += c.toString()));
    const run = runCli(['index', root, '--workers', '0'], { stdout, stderr, cwd: '/' });
    let finished = false;
    void run.then(() => (finished = true));
    await until(() => err.includes('waiting') || finished, 'the run waits or finishes');
    assert.match(err, new RegExp(`another index run \\(process ${REMOTE_PID} on ${OTHER_HOST}\\) is updating this campaign's index; waiting`));
    assert.equal(fs.readFileSync(lock, 'utf8').trim(), remote, 'the other machine keeps its lock');
    fs.rmSync(lock); // that machine's run ends
    assert.equal(await run, EXIT.ok);
    assert.ok(!fs.existsSync(lock));
  });

  it('takes over a lock from another machine only once its holder has stopped renewing it', async () => {
    root = makeCampaign({});
    fs.mkdirSync(path.join(root, '.storyteller'));
    const db = openDatabase(path.join(root, '.storyteller', 'index.db'), INDEX_MIGRATIONS);
    const lock = `${db.name}.lock`;
    try {
      fs.writeFileSync(lock, `${JSON.stringify({ pid: REMOTE_PID, host: OTHER_HOST })}\n`);
      let renewals = 0;
      // The holder renews the lock's time, as a live run does, for a while longer than the stale limit; then it stops (dies).
      const renewing = setInterval(() => {
        const at = new Date(Date.now() + ++renewals * 1000);
        fs.utimesSync(lock, at, at);
        if (renewals === 40) clearInterval(renewing);
      }, 25);
      let ranDuringRenewals = false;
      await withIndexLock(
        db,
        async () => {
          ranDuringRenewals = renewals < 40;
        },
        { staleRemoteMs: 300 },
      );
      clearInterval(renewing);
      assert.equal(ranDuringRenewals, false, 'a renewed lock is waited for, however long it is held');
    } finally {
      db.close();
    }
  });

  it("leaves a turn another machine is generating alone, and recovers one a dead process on this machine left", async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'st-host-'));
    const playPath = path.join(root, 'play.db');
    const store = new PlayStore(playPath);
    try {
      const adventure = store.createAdventure({ campaignId: 'c', title: 'Shared', persona: KAELEN });
      const [remote, local] = await turnsLeftByCrash(playPath, adventure.id, null, [{ action: 'sail', streamed: 'You sail' }, { action: 'row', streamed: 'You row' }]);
      // The first as the other machine's process recorded it: the same kind of record, another host.
      const owner = JSON.parse((store.db.prepare('SELECT owner FROM turns WHERE id = ?').get(remote) as { owner: string }).owner) as Record<string, unknown>;
      assert.equal(owner.host, os.hostname(), 'a turn records the machine generating it');
      store.db.prepare('UPDATE turns SET owner = ? WHERE id = ?').run(JSON.stringify({ ...owner, host: OTHER_HOST }), remote);
      assert.equal(store.recoverInterrupted(), 1);
      assert.equal(store.turn(remote!).status, 'streaming', "the other machine's turn is still its own");
      assert.equal(store.turn(local!).status, 'incomplete');
    } finally {
      store.close();
    }
  });
});
