import assert from 'node:assert/strict';
import { EXIT } from '../../../src/cli/command';
import { splitFrontMatter } from '../../../src/knowledge/campaign/frontMatter';
import { makeCampaign, removeDir } from '../../support/campaignDirs';
import { runCaptured } from '../../support/cliRun';

/**
 * Hugo TOML front matter crafted so that a line-by-line reader takes text for fields: `class` and `locked`
 * decide which files are canon and which a proposal may never edit, so only real TOML keys may set them.
 */

const HIDDEN_FIELDS = [
  '+++',
  'class = "canon"',
  "notes = '''",
  'class = "inspiration"',
  'locked = true',
  "'''",
  'title = """',
  'locked = true"""',
  '+++',
  'The keepwarden holds the bridge.',
  '',
].join('\n');

interface Listed {
  path: string;
  class: string;
  lexicalState: string;
  issues: { code: string; message: string; line?: number }[];
}

describe('attacks: TOML front matter lines hidden inside multi-line strings', () => {
  let root: string | undefined;
  afterEach(() => root && removeDir(root));

  it('reads a `class = …` or `locked = true` line inside a multi-line string as text, not as a field', () => {
    const split = splitFrontMatter(HIDDEN_FIELDS);
    assert.deepEqual(split.issues, []);
    assert.equal(split.meta.class, 'canon');
    assert.equal(split.meta.locked, undefined, 'no real `locked` key: the file is not locked');
    assert.equal(split.meta.notes, 'class = "inspiration"\nlocked = true\n');
  });

  it('keeps a canon file canon in the index, and names a broken TOML block with its file and line, indexing the rest', async () => {
    root = makeCampaign({
      'bridge.md': HIDDEN_FIELDS,
      'broken.md': '+++\ntitle = "The Ford"\nclass = "canon\n+++\nThe fordwatch waits.\n',
      'good.md': '# Good\n\nThe saltreeve waits.\n',
    });
    const indexed = await runCaptured(['index', root, '--workers', '0'], '/');
    assert.equal(indexed.code, EXIT.findings, indexed.stdout);
    assert.match(indexed.stdout, /error +broken\.md:3 +front matter is not valid TOML: /);
    const listed = await runCaptured(['sources', root, '--json'], '/');
    const sources = new Map((JSON.parse(listed.stdout) as { sources: Listed[] }).sources.map((s) => [s.path, s]));
    assert.equal(sources.get('bridge.md')?.class, 'canon');
    assert.deepEqual(sources.get('bridge.md')?.issues, []);
    assert.equal(sources.get('broken.md')?.lexicalState, 'error', 'a file whose front matter is not TOML is held back, as bad YAML is');
    assert.equal(sources.get('good.md')?.lexicalState, 'ready');
  });
});
