import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { COMMANDS } from '../../src/cli/commands';
import { EXIT } from '../../src/cli/command';
import { EXAMPLE_CAMPAIGN } from '../support/corpora';
import { makeCampaign, removeDir } from '../support/campaignDirs';
import { requireBuiltCli, runBuiltCli } from './attacks/attackSupport';

/**
 * The built CLI loads a command's code only when that command runs (`src/cli/commands/index.ts`): every
 * command must still be found, answer its help, and work, in the bundle a writer runs.
 */
describe('CLI commands, each loaded when it runs (built CLI)', () => {
  before(requireBuiltCli);

  it('lists every command, and each answers --help with its usage and summary', async () => {
    const listed = await runBuiltCli(['--help']);
    assert.equal(listed.code, EXIT.ok, listed.stderr);
    for (const command of COMMANDS) assert.match(listed.stdout, new RegExp(`^  ${command.name} +\\S`, 'm'), command.name);
    for (const command of COMMANDS) {
      const help = await runBuiltCli([command.name, '--help']);
      assert.equal(help.code, EXIT.ok, `${command.name}: ${help.stderr}`);
      assert.ok(help.stdout.startsWith(`usage: storyteller ${command.name}`), `${command.name}: ${help.stdout}`);
      assert.ok(help.stdout.includes(command.summary), command.name);
    }
  });

  it('names a bad option with the command and its usage, and an unknown command with the list', async () => {
    const bad = await runBuiltCli(['search', '--no-such-flag', 'x']);
    assert.equal(bad.code, EXIT.usage);
    assert.match(bad.stderr, /^storyteller search: .*no-such-flag[\s\S]*\nusage: storyteller search/);
    const unknown = await runBuiltCli(['serach']);
    assert.equal(unknown.code, EXIT.usage);
    assert.match(unknown.stderr, /unknown command 'serach'[\s\S]*\n {2}search /);
  });

  it('indexes, sees a saved edit on the next index, and finds it with search', async () => {
    const root = makeCampaign({});
    try {
      fs.cpSync(EXAMPLE_CAMPAIGN, root, { recursive: true });
      const first = await runBuiltCli(['index', root]);
      assert.equal(first.code, EXIT.ok, first.stderr);
      fs.appendFileSync(path.join(root, 'characters', 'mara.md'), '\nMara hides the quillwort lantern under the abbey stairs.\n');
      const second = await runBuiltCli(['index', root]);
      assert.equal(second.code, EXIT.ok, second.stderr);
      assert.match(second.stdout, /1 indexed, 6 unchanged/);
      const found = await runBuiltCli(['search', 'quillwort lantern', '--campaign', root, '--json', '--lexical-only']);
      assert.equal(found.code, EXIT.ok, found.stderr);
      assert.match(found.stdout, /characters\/mara\.md/);
      assert.match(found.stdout, /quillwort/);
    } finally {
      removeDir(root);
    }
  });
});
