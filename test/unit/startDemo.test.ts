import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureDemoCampaign } from '../../scripts/demoCampaign';
import { EXAMPLE_CAMPAIGN, REPO_ROOT } from '../support/corpora';
import { readTree, runCliCaptured } from '../support/interchange';

describe('npm start: the example campaign a writer plays in is a copy', () => {
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-demo-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('opens .cache/demo-campaign, which git ignores, and not the tracked fixture', () => {
    const start = fs.readFileSync(path.join(REPO_ROOT, 'scripts', 'start.ts'), 'utf8');
    assert.match(start, /path\.join\(PROJECT_ROOT, '\.cache', 'demo-campaign'\)/);
    assert.match(start, /workspace: DEMO_CAMPAIGN/);
    // Any other campaign opened in that workbench saves when the writer does, as the demo does.
    assert.match(start, /settings: DEMO_WORKSPACE_SETTINGS/);
    // Exit 0: ignored (a checkout's .cache may be a link, so the folder itself is asked about).
    execFileSync('git', ['-C', REPO_ROOT, 'check-ignore', '-q', '--no-index', '.cache']);
  });

  it('a note added and an index built there leave the fixture as it was; a later start keeps the note', async () => {
    const before = readTree(EXAMPLE_CAMPAIGN);
    const demo = path.join(dir, '.cache', 'demo-campaign');
    assert.equal(ensureDemoCampaign(EXAMPLE_CAMPAIGN, demo), true, 'created when missing');
    fs.writeFileSync(path.join(demo, 'session-notes.md'), '# Session notes\n\nThe party reached the Abbey at dusk.\n');
    const indexed = await runCliCaptured(['index', demo], dir);
    assert.equal(indexed.code, 0, indexed.stderr);
    assert.ok(fs.existsSync(path.join(demo, '.storyteller', 'index.db')));
    const found = await runCliCaptured(['search', 'party reached', '--campaign', demo], dir);
    assert.match(found.stdout, /session-notes\.md/);

    assert.deepEqual(readTree(EXAMPLE_CAMPAIGN), before, 'the fixture the tests read is untouched');
    assert.equal(ensureDemoCampaign(EXAMPLE_CAMPAIGN, demo), false, 'an existing copy is the writer\'s');
    assert.ok(fs.existsSync(path.join(demo, 'session-notes.md')));
    assert.deepEqual(JSON.parse(fs.readFileSync(path.join(demo, '.vscode', 'settings.json'), 'utf8')), { 'files.autoSave': 'off' }, 'the writer saves; no save per pause');
  });
});
