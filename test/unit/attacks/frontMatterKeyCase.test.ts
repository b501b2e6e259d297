import assert from 'node:assert/strict';
import { makeCampaign, removeDir } from '../../support/campaignDirs';
import { runCaptured } from '../../support/cliRun';

/**
 * A writer who types `Locked: true` means the file to be protected, but keys are read as written and the
 * field is ignored: lint and the index report say so, naming the file, the line, the key and its spelling.
 */

describe('attacks: a known front-matter key in the wrong case', () => {
  let root: string | undefined;
  afterEach(() => root && removeDir(root));

  it('is named by lint and by the index report, in YAML and in TOML, with the spelling that works', async () => {
    root = makeCampaign({
      'canon/vow.md': '---\nclass: canon\nLocked: true\n---\nThe abbot swore the silverbell vow.\n',
      'canon/oath.md': '+++\nclass = "canon"\nALWAYS_INCLUDE = true\n+++\nThe oathstone stands.\n',
    });
    const lint = await runCaptured(['lint', root], '/');
    assert.match(lint.stdout, /canon\/vow\.md:3 +warning +front matter key 'Locked' is ignored: keys are case-sensitive; write 'locked'/);
    assert.match(lint.stdout, /canon\/oath\.md:3 +warning +front matter key 'ALWAYS_INCLUDE' is ignored: keys are case-sensitive; write 'always_include'/);
    const indexed = await runCaptured(['index', root, '--workers', '0'], '/');
    assert.match(indexed.stdout, /warning +canon\/vow\.md:3 +front matter key 'Locked' is ignored: keys are case-sensitive; write 'locked'/);
  });
});
