import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { makeCampaign, removeDir } from '../../support/campaignDirs';
import { requireBuiltCli, spawnCli } from './attackSupport';

/**
 * Two `storyteller index` runs started at the same moment on a campaign never indexed, beside processes that
 * keep each core busy: both create the index file, and both brought its schema up at once ("table sources
 * already exists", "duplicate column name", in four of six tries on a loaded 2-core machine). Each must
 * succeed, every try.
 */

/** The race is over the first moments of each run, so a small campaign serves and many tries are cheap. */
const TRIES = 12;

const CAMPAIGN = {
  'harbour.md': '# Harbour\n\nThe harbour master counts every ship that enters the bay before the bells of dusk.\n',
  'abbey.md': '# Abbey\n\nSister Mara keeps the abbey gate and remembers every traveller by their boots.\n',
  'road.txt': 'The north road runs past the mill and the ford to the river crossing.\n',
};

describe('attacks: index runs racing to create the index', function () {
  this.timeout(TRIES * 30_000);
  before(requireBuiltCli);

  it(`two index runs started together on a new campaign, beside busy CPUs: both succeed, ${TRIES} tries in a row`, async () => {
    // One busy process per core of the machine the race was seen on: the runs are switched out mid-start.
    const busy = [1, 2].map(() => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
    const roots: string[] = [];
    try {
      for (let attempt = 1; attempt <= TRIES; attempt++) {
        const root = makeCampaign(CAMPAIGN);
        roots.push(root);
        const runs = [spawnCli(['index', root, '--json']), spawnCli(['index', root, '--json'])];
        const exits = await Promise.all(runs.map((run) => run.exit));
        for (const [i, exit] of exits.entries()) {
          assert.equal(exit.code, 0, `try ${attempt}, run ${i + 1} ended with ${exit.code}: ${runs[i]!.stderr()}`);
          assert.equal((JSON.parse(runs[i]!.stdout()) as { files: unknown[] }).files.length, 3, 'and reported the campaign');
        }
        assert.ok(!fs.existsSync(path.join(root, '.storyteller', 'index.db.lock')), 'the lock is gone when both are done');
      }
    } finally {
      for (const process of busy) process.kill();
      for (const root of roots) removeDir(root);
    }
  });
});
