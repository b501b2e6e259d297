import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EXIT } from '../../../src/cli/command';
import { THIS_PROCESS } from '../../../src/knowledge/files';
import { BUNDLE_FORMAT, BUNDLE_VERSION, DEFAULT_BUNDLE_LIMITS, type BundleFile } from '../../../src/knowledge/interchange/bundle';
import { MAX_LOREBOOK_ENTRIES } from '../../../src/knowledge/interchange/lorebookImport';
import { makeCampaign, removeDir } from '../../support/campaignDirs';
import { listTree, runCliCaptured } from '../../support/interchange';
import { campaignFiles } from './attackSupport';

/**
 * Huge imports through the CLI: too many entries or members are refused with the count and the limit before
 * anything is written; a large import that is allowed says how far it got; and the folder a killed restore
 * left behind is removed by the next one, never a live restore's.
 */

const member = (p: string, content: string): BundleFile => ({
  path: p,
  size: Buffer.byteLength(content),
  sha256: createHash('sha256').update(content).digest('hex'),
  encoding: 'utf8',
  content,
});

/** A bundle of `count` small markdown files beside its campaign.yaml, written as JSON to `file`. */
function writeBundle(file: string, count: number): string {
  const files = [member('campaign.yaml', 'id: many\ntitle: Many\n')];
  for (let i = 0; i < count; i++) files.push(member(`notes/n${i}.md`, `# Note ${i}\n\nThe lamplighter counts lamp ${i} on the harbour road.\n`));
  const bundle = { format: BUNDLE_FORMAT, version: BUNDLE_VERSION, exported_at: '2026-12-05T00:00:00.000Z', campaign: { id: 'many', title: 'Many' }, files, play: null, embeddings: null };
  fs.writeFileSync(file, JSON.stringify(bundle));
  return file;
}

describe('attacks: huge imports, progress and what a killed restore left', function () {
  this.timeout(180_000);
  let scratch: string;
  beforeEach(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'st-limits-'));
  });
  afterEach(() => removeDir(scratch));

  it(`a bundle of more than ${DEFAULT_BUNDLE_LIMITS.maxFiles} files is refused with the count, nothing written`, async () => {
    const bundle = writeBundle(path.join(scratch, 'huge.storyteller.json'), DEFAULT_BUNDLE_LIMITS.maxFiles);
    const { code, stderr } = await runCliCaptured(['import', bundle, '--into', path.join(scratch, 'restored')], scratch);
    assert.equal(code, EXIT.failure);
    assert.match(stderr, new RegExp(`huge\\.storyteller\\.json: holds ${DEFAULT_BUNDLE_LIMITS.maxFiles + 1} files, more than the ${DEFAULT_BUNDLE_LIMITS.maxFiles} one bundle may hold; nothing was written`));
    assert.deepEqual(listTree(scratch), ['huge.storyteller.json']);
  });

  it(`a lorebook of more than ${MAX_LOREBOOK_ENTRIES} entries is refused with the count, nothing written`, async () => {
    const campaign = makeCampaign({ 'notes/a.md': '# A\n\nThe lamplighter walks the harbour road.\n' });
    try {
      const entries = Object.fromEntries(Array.from({ length: MAX_LOREBOOK_ENTRIES + 1 }, (_, i) => [String(i), { uid: i, key: [`k${i}`], comment: `Entry ${i}`, content: 'x' }]));
      const book = path.join(scratch, 'huge.json');
      fs.writeFileSync(book, JSON.stringify({ entries }));
      const before = campaignFiles(campaign);
      const { code, stderr } = await runCliCaptured(['import-lorebook', book, '--class', 'reference', '--campaign', campaign], scratch);
      assert.equal(code, EXIT.failure);
      assert.match(stderr, new RegExp(`huge\\.json: the lorebook has ${MAX_LOREBOOK_ENTRIES + 1} entries, more than the ${MAX_LOREBOOK_ENTRIES} one import writes`));
      assert.deepEqual(campaignFiles(campaign), before);
    } finally {
      removeDir(campaign);
    }
  });

  it('a large restore says how far it got on stderr, writing and then indexing', async () => {
    const bundle = writeBundle(path.join(scratch, 'large.storyteller.json'), 2_001);
    const { code, stdout, stderr } = await runCliCaptured(['import', bundle, '--into', path.join(scratch, 'restored')], scratch);
    assert.equal(code, EXIT.ok, stderr);
    assert.match(stdout, /2002 files\./);
    const lines = stderr.split('\n').filter(Boolean);
    assert.deepEqual(lines, [
      'storyteller import: writing 1000 of 2002 files…',
      'storyteller import: writing 2000 of 2002 files…',
      'storyteller import: indexing 1000 of 2001 files…',
      'storyteller import: indexing 2000 of 2001 files…',
    ]);
  });

  it("removes the folder a killed restore left, and never a live restore's or one just begun", async () => {
    const exited = spawnSync(process.execPath, ['-e', '0']);
    assert.equal(exited.status, 0);
    const leftover = (name: string, owner: string | undefined): string => {
      const dir = path.join(scratch, name);
      fs.mkdirSync(path.join(dir, '.storyteller'), { recursive: true });
      fs.writeFileSync(path.join(dir, 'notes.md'), 'x'.repeat(100_000));
      if (owner !== undefined) fs.writeFileSync(path.join(dir, '.storyteller', 'import-owner'), `${owner}\n`);
      return name;
    };
    // A process that has exited, and one whose id another process may have taken since (another start time).
    const dead = leftover('.restored-before.importing-0123456789ab', JSON.stringify({ pid: exited.pid, host: os.hostname(), started: '0' }));
    const live = leftover('.other.importing-abcdefabcdef', THIS_PROCESS);
    const justBegun = leftover('.third.importing-aaaaaaaaaaaa', undefined);
    const bundle = writeBundle(path.join(scratch, 'small.storyteller.json'), 2);
    const { code, stdout, stderr } = await runCliCaptured(['import', bundle, '--into', path.join(scratch, 'restored')], scratch);
    assert.equal(code, EXIT.ok, stderr);
    assert.match(stdout, /Removed \.restored-before\.importing-0123456789ab, the unfinished folder of a restore that was stopped\./);
    const left = fs.readdirSync(scratch);
    assert.ok(!left.includes(dead), 'the dead restore’s folder is gone');
    assert.ok(left.includes(live) && left.includes(justBegun), 'a live restore’s folder and one without an owner yet stay');
    assert.ok(fs.existsSync(path.join(scratch, 'restored', 'notes', 'n1.md')));
    assert.ok(!fs.existsSync(path.join(scratch, 'restored', '.storyteller', 'import-owner')), 'the restored campaign carries no owner file');
  });
});
