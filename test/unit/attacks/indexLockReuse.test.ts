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

const BOOT_ID = '/proc/sys/kernel/random/boot_id';

/** A process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), as the lock records it. */
function startTime(pid: number): string | undefined {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

async function longLived(): Promise<ChildProcess> {
  const child = spawn('sleep', ['600'], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('spawn', resolve));
  return child;
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

    // The system handing the killed run's id to another process, without steering the machine's process ids
    // (which other programs share): the lock is made to name a live process that started at another time.
    if (!fs.existsSync('/proc/self/stat')) return this.skip(); // no start times to tell processes apart: the process id alone decides
    const impostor = await longLived();
    cleanup.push(impostor);
    const held = JSON.parse(fs.readFileSync(lock, 'utf8')) as { pid: number; started?: string };
    assert.notEqual(startTime(impostor.pid!), held.started, 'the impostor started after the killed run');
    fs.writeFileSync(lock, `${JSON.stringify({ ...held, pid: impostor.pid })}\n`);

    const second = spawnCli(['index', root]);
    await until(() => second.stderr().includes('waiting') || second.child.exitCode !== null, 'the second run finishes or waits');
    if (second.child.exitCode === null) cleanup.push(second.child);
    assert.doesNotMatch(second.stderr(), /another index run \(process \d+\)/, `process ${impostor.pid} (sleep) is not an index run`);
    assert.equal((await second.exit).code, 0, second.stderr());
    assert.ok(!fs.existsSync(lock), 'the lock is gone when the run is done');
  });

  it('takes over a lock written before the machine restarted, whatever its process id names now', async function () {
    if (!fs.existsSync(BOOT_ID)) return this.skip(); // no boot id on this system: the process id alone decides
    const alive = await longLived();
    cleanup.push(alive);
    // As a run killed by a power cut leaves it, its process id (and here even its start time) taken again after the restart.
    const started = startTime(alive.pid!);
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
