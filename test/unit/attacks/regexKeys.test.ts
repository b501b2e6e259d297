import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeCampaign, removeDir } from '../../support/campaignDirs';
import { runCliCaptured } from '../../support/interchange';
import { requireBuiltCli, spawnCli } from './attackSupport';

/**
 * A lorebook's regex keys are patterns a stranger wrote, run against text nobody controls (the writer's action,
 * the narrator's own reply). Patterns that take a backtracking engine exponential or polynomial time on an
 * ordinary message must still let the turn end, with the verdicts JavaScript would give; a pattern the
 * linear-time engine cannot run is kept in its file and named at import, in lint and in its verdict.
 */

const HANGING = {
  Nested: '/((a+))+$/',
  Either: '/(a|a)+$/',
  Optional: '/(?:a|a?)+$/',
  Words: '/((\\w+))+$/',
  Dots: '/.*.*.*.*=/',
};
const REFUSED = { Echo: '/(\\w+) \\1/', Ahead: '/dragon(?=fly)/i' };
/** A pattern that runs and fires, JavaScript's `\s` included (a no-break space between the words). */
const FIRES = { Gate: '/gate\\s+of\\s+dawn/i' };

/** The action: 5,000 a's that end in a character no pattern above wants. */
const ACTION = `${'a'.repeat(5000)}!`;
/** The narrator's last reply: ordinary prose, about 5,000 characters, ending on a long real word and a '!'. */
const REPLY = `${'The rain fell on the old mill by the river, and the miller sang of the road home. '.repeat(30)}They rode through the Gate of\u00a0Dawn toward Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch!`;

/** How long a child may take before it counts as hung: far beyond a loaded machine's few seconds, far below for ever. */
const HUNG_AFTER_MS = 120_000;

describe('attacks: regex keys from a lorebook', function () {
  this.timeout(HUNG_AFTER_MS + 120_000);
  let campaign: string;
  let scratch: string;
  before(async () => {
    requireBuiltCli();
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'st-regex-'));
    campaign = makeCampaign({ 'notes/mill.md': '# The Mill\n\nThe old mill stands by the river.\n' });
    const keys = { ...HANGING, ...REFUSED, ...FIRES };
    const entries = Object.fromEntries(
      Object.entries(keys).map(([title, key], uid) => [String(uid), { uid, key: [key], keysecondary: [], comment: title, content: `${title} lore.`, order: 100, position: 0 }]),
    );
    fs.writeFileSync(path.join(scratch, 'traps.json'), JSON.stringify({ entries }));
  });
  after(() => {
    removeDir(campaign);
    removeDir(scratch);
  });

  it('import keeps every key, and names each entry whose key will not run and why', async () => {
    const { code, stdout, stderr } = await runCliCaptured(['import-lorebook', path.join(scratch, 'traps.json'), '--class', 'reference', '--campaign', campaign], scratch);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /\n {2}entry 5 \(Echo\): regex key not run: \/\(\\w\+\) \\1\/ uses a backreference \\1, which a linear-time engine cannot run\n/);
    assert.match(stdout, /\n {2}entry 6 \(Ahead\): regex key not run: \/dragon\(\?=fly\)\/i uses a lookahead \(\?=…\), which a linear-time engine cannot run\n/);
    assert.doesNotMatch(stdout, /entry [0-4] \(\w+\): regex key not run/, 'every hanging pattern runs');
    assert.match(fs.readFileSync(path.join(campaign, 'lore', 'echo.md'), 'utf8'), /^keys: \[ \/\(\\w\+\) \\1\/ \]$/m, 'the refused key stays in its file, for SillyTavern');
  });

  it('lint names the file and the key that will not run', async () => {
    const { stdout } = await runCliCaptured(['lint', campaign, '--json'], scratch);
    const findings = (JSON.parse(stdout) as { findings: { path: string; code: string; message: string }[] }).findings.filter((f) => f.code === 'regex-key');
    assert.deepEqual(
      findings.map((f) => [f.path, f.message]),
      [
        ['lore/ahead.md', 'regex key not run: /dragon(?=fly)/i uses a lookahead (?=…), which a linear-time engine cannot run'],
        ['lore/echo.md', 'regex key not run: /(\\w+) \\1/ uses a backreference \\1, which a linear-time engine cannot run'],
      ],
    );
  });

  it('a turn over an action of 5,000 a\'s and an ordinary reply ends, with the verdicts JavaScript would give', async () => {
    const run = spawnCli(['context', '--input', ACTION, '--recent', REPLY, '--campaign', campaign, '--json'], { cwd: scratch });
    run.child.stdin!.end();
    const kill = setTimeout(() => run.child.kill('SIGKILL'), HUNG_AFTER_MS);
    const { code, signal } = await run.exit.finally(() => clearTimeout(kill));
    assert.equal(signal, null, `context did not end within ${HUNG_AFTER_MS / 1000} s: a regex key hung the turn`);
    assert.equal(code, 0, run.stderr());
    const verdicts = (JSON.parse(run.stdout()) as { record: { worldInfo: { verdicts: { title: string; fired: boolean; reason: string }[] } } }).record.worldInfo.verdicts;
    const byTitle = new Map(verdicts.map((v) => [v.title, v]));
    // (?:a|a?)+$ matches the empty text at the end of any message; the gate's spaces include a no-break space.
    assert.deepEqual(verdicts.filter((v) => v.fired).map((v) => v.title).sort(), ['Gate', 'Optional']);
    for (const title of ['Nested', 'Either', 'Words', 'Dots']) assert.equal(byTitle.get(title)!.reason, 'no key in the last 2 messages', title);
    assert.equal(byTitle.get('Echo')!.reason, 'no key in the last 2 messages; regex key not run: /(\\w+) \\1/ uses a backreference \\1, which a linear-time engine cannot run');
    assert.match(byTitle.get('Ahead')!.reason, /; regex key not run: \/dragon\(\?=fly\)\/i uses a lookahead/);
  });
});
