import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { corpusPath } from '../../support/corpora';
import { requireBuiltCli, spawnCli, until } from './attackSupport';

/**
 * A lock left by a killed `storyteller index` whose process id the system has since given to another,
 * live process: the next run takes the lock over instead of waiting for a process that never held it.
 */

const LAST_PID = '/proc/sys/kernel/ns_last_pid';
const BOOT_ID = '/proc/sys/kernel/random/boot_id';

/**
 * Starts a long-lived process under exactly `pid`, by telling Linux which id it handed out last. Other
 * processes on the machine may take the id first, so it tries again; undefined when the system does not let it.
 */
async function processWithPid(pid: number): Promise<ChildProcess | undefined> {
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      fs.writeFileSync(LAST_PID, String(pid - 1));
    } catch {
      return undefined;
    }
    const child = spawn('sleep', ['600'], { stdio: 'ignore' });
    await new Promise((resolve) => child.once('spawn', resolve));
    if (child.pid === pid) return child;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
  return undefined;
}

describe('attacks: a stale index lock whose process id was reused', function () {
  this.timeout(120_000);
  let root: string;
  const cleanup: ChildProcess[] = [];
  before(() => requireBuiltCli());
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'st-lock-reuse-'));
    fs.cpSync(corpusPath('torys'), root, { recursive: true });
    fs.writeFileSync(path.join(root, 'campaign.yaml'), 'id: torys\ntitle: Torys\n');
  });
  afterEach(() => {
    for (const child of cleanup.splice(0)) child.kill('SIGKILL');
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('takes over the lock of a killed run whose process id now belongs to another process', async function () {
    const lock = path.join(root, '.storyteller', 'index.db.lock');
    const first = spawnCli(['index', root]);
    await until(() => fs.existsSync(lock) || first.child.exitCode !== null, 'the first run holds the index');
    first.child.kill('SIGKILL');
    assert.equal((await first.exit).signal, 'SIGKILL', 'the run was killed while it held the lock');
    assert.ok(fs.existsSync(lock), 'the killed run left its lock behind');

    const impostor = await processWithPid(first.child.pid!);
    if (!impostor) return this.skip(); // the system does not let a test choose the next process id (not Linux, or not permitted)
    cleanup.push(impostor);

    const second = spawnCli(['index', root]);
    await until(() => second.stderr().includes('waiting') || second.child.exitCode !== null, 'the second run finishes or waits');
    if (second.child.exitCode === null) cleanup.push(second.child);
    assert.doesNotMatch(second.stderr(), /another index run \(process \d+\)/, `process ${impostor.pid} (sleep) is not an index run`);
    assert.equal((await second.exit).code, 0, second.stderr());
    assert.ok(!fs.existsSync(lock), 'the lock is gone when the run is done');
  });

  it('takes over a lock written before the machine restarted, whatever its process id names now', async function () {
    if (!fs.existsSync(BOOT_ID)) return this.skip(); // no boot id on this system: the process id alone decides
    const alive = spawn('sleep', ['600'], { stdio: 'ignore' });
    cleanup.push(alive);
    await new Promise((resolve) => alive.once('spawn', resolve));
    // As a run killed by a power cut leaves it, its process id (and here even its start time) taken again after the restart.
    const stat = fs.readFileSync(`/proc/${alive.pid}/stat`, 'utf8');
    const started = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    const lock = path.join(root, '.storyteller', 'index.db.lock');
    fs.mkdirSync(path.dirname(lock), { recursive: true });
    fs.writeFileSync(lock, `${JSON.stringify({ pid: alive.pid, started, boot: 'an-earlier-boot' })}\n`);
    const run = spawnCli(['index', root]);
    await until(() => run.stderr().includes('waiting') || run.child.exitCode !== null, 'the run finishes or waits');
    if (run.child.exitCode === null) cleanup.push(run.child);
    assert.doesNotMatch(run.stderr(), /another index run/);
    assert.equal((await run.exit).code, 0, run.stderr());
  });
});
