import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { EXIT } from '../../src/cli/command';
import { EXAMPLE_CAMPAIGN } from '../support/corpora';
import { makeCampaign, removeDir, writeFile } from '../support/campaignDirs';
import { runCaptured } from '../support/cliRun';

const prose = (topic: string): string => Array.from({ length: 90 }, (_, i) => `${topic}${i}`).join(' ') + '.';

describe('CLI index, sources, passages, lint', () => {
  let root: string;
  beforeEach(() => {
    root = makeCampaign({});
    fs.cpSync(EXAMPLE_CAMPAIGN, root, { recursive: true });
  });
  afterEach(() => removeDir(root));

  it('indexes the campaign found above the working folder, then skips unchanged files', async () => {
    const first = await runCaptured(['index', '--workers', '0'], path.join(root, 'characters'));
    assert.equal(first.code, EXIT.ok, first.stderr);
    assert.match(first.stdout, /The Westhaven Campaign \(westhaven\): 7 files — 7 indexed, 0 unchanged/);
    assert.ok(fs.existsSync(path.join(root, '.storyteller', 'index.db')));
    const second = await runCaptured(['index', root, '--workers', '0', '--json'], '/');
    const report = JSON.parse(second.stdout) as { counts: Record<string, number>; sources: { path: string; classOrigin: string }[] };
    assert.equal(report.counts.unchanged, 7);
    assert.equal(report.sources.find((s) => s.path === 'characters/mara.md')?.classOrigin, "folder rule 'characters'");
  });

  it('indexes on worker threads by default', async () => {
    const result = await runCaptured(['index', root], '/');
    assert.equal(result.code, EXIT.ok, result.stderr);
    assert.match(result.stdout, /7 indexed/);
  });

  it('names each bad file with its reason and exits with findings', async () => {
    writeFile(root, 'notes/bad.md', '---\nclass: lore\n---\ntext');
    writeFile(root, 'notes/blob.md', new Uint8Array([1, 0, 2]));
    const result = await runCaptured(['index', root, '--workers', '0'], '/');
    assert.equal(result.code, EXIT.findings);
    assert.match(result.stdout, /error +notes\/bad\.md:2 +front matter 'class' is 'lore'/);
    assert.match(result.stdout, /error +notes\/blob\.md:1 +file contains a NUL byte/);
    assert.match(result.stdout, /7 indexed/, 'the good files are indexed anyway');
  });

  it('lists sources with class origin and state, as text and JSON', async () => {
    await runCaptured(['index', root, '--workers', '0'], '/');
    const text = await runCaptured(['sources'], root);
    assert.equal(text.code, EXIT.ok);
    assert.match(text.stdout, /7 sources, 9 retrievable passages/);
    assert.match(text.stdout, /canon +ready +1 passages +characters\/brother-aldric\.md +\[folder rule 'characters'; hidden\]/);
    const json = JSON.parse((await runCaptured(['sources', root, '--json'], '/')).stdout) as { sources: { path: string; status: { passages: number } }[] };
    assert.equal(json.sources.length, 7);
    assert.ok(json.sources.every((s) => s.status.passages > 0));
  });

  it('says to run index first when there is no index yet', async () => {
    const result = await runCaptured(['sources'], root);
    assert.equal(result.code, EXIT.failure);
    assert.match(result.stderr, /no index yet.*storyteller index/);
    assert.ok(!fs.existsSync(path.join(root, '.storyteller', 'index.db')), 'reading did not create an empty index');
  });

  it('shows the passages of a source by campaign path, file path or id', async () => {
    await runCaptured(['index', root, '--workers', '0'], '/');
    const byRel = await runCaptured(['passages', 'canon.md'], root);
    assert.equal(byRel.code, EXIT.ok, byRel.stderr);
    assert.match(byRel.stdout, /^canon\.md \(canon, ready\): 2 passages/);
    assert.match(byRel.stdout, /── #0 +lines \d+–\d+ +\d+ tokens +Westhaven/);
    const byFile = await runCaptured(['passages', path.join(root, 'places', 'old-abbey.md')], '/');
    assert.equal(byFile.code, EXIT.ok, byFile.stderr);
    const json = JSON.parse((await runCaptured(['passages', 'places/old-abbey.md', '--json'], root)).stdout) as { source: { id: string }; passages: unknown[] };
    const byId = await runCaptured(['passages', json.source.id, '--json'], root);
    assert.deepEqual(JSON.parse(byId.stdout), json);
    const missing = await runCaptured(['passages', 'nope.md'], root);
    assert.equal(missing.code, EXIT.failure);
    assert.match(missing.stderr, /no source 'nope\.md'/);
  });

  it('lint passes a clean campaign and writes nothing into it', async () => {
    const result = await runCaptured(['lint', root, '--workers', '0'], '/');
    assert.equal(result.code, EXIT.ok, result.stdout);
    assert.equal(result.stdout, 'The Westhaven Campaign (westhaven): 0 errors, 0 warnings\n');
    assert.ok(!fs.existsSync(path.join(root, '.storyteller')));
  });

  it('lint fails on errors, listing front matter, encoding, oversize, duplicates and unclassified files', async () => {
    fs.appendFileSync(path.join(root, 'campaign.yaml'), 'size_cap_bytes: 4096\n');
    writeFile(root, 'bad.md', '---\ntitle: ok\nclass: lore\n---\n');
    writeFile(root, 'latin.md', Buffer.from('caf\xe9', 'latin1'));
    writeFile(root, 'big.md', prose('big').repeat(10));
    writeFile(root, 'copy/canon.md', fs.readFileSync(path.join(root, 'canon.md')));
    writeFile(root, 'loose.md', `# Loose\n\n${prose('loose')}`);
    const result = await runCaptured(['lint', root, '--workers', '0'], '/');
    assert.equal(result.code, EXIT.findings);
    assert.match(result.stdout, /^bad\.md:3 +error +front matter 'class' is 'lore'.*\(front-matter-class\)$/m);
    assert.match(result.stdout, /^latin\.md:1 +error +file is not valid UTF-8/m);
    assert.match(result.stdout, /^big\.md +error +file is [\d.]+ KiB, over the campaign's 4\.0 KiB cap/m);
    assert.match(result.stdout, /^copy\/canon\.md +warning +same content as canon\.md/m);
    assert.match(result.stdout, /\(westhaven\): 3 errors, 1 warning; 1 file uses the campaign's default class/);
    const json = JSON.parse((await runCaptured(['lint', root, '--workers', '0', '--json'], '/')).stdout) as { findings: { code: string; path: string }[] };
    assert.ok(json.findings.some((f) => f.code === 'unclassified' && f.path === 'loose.md'));
  });

  it("lint finds a canon conflict on a page not headed by the entity's name: its front matter says whose facts they are", async () => {
    writeFile(root, 'notes/infirmary-notes.md', '---\ntitle: Infirmary Notes\nclass: canon\nentities: [Mara]\n---\n# Infirmary Notes\n\n- **Age:** 52\n- **Patients this winter:** 14\n');
    writeFile(root, 'notes/market-day.md', '---\ntitle: Market Day\nclass: canon\nentities: [Mara, Brother Aldric]\n---\n# Market Day\n\n- **Age:** 60\n');
    await runCaptured(['index', root, '--workers', '0'], '/');
    const result = await runCaptured(['lint', root], '/');
    assert.equal(result.code, EXIT.findings, result.stdout);
    assert.match(result.stdout, /characters\/mara\.md:8 +error +canon contradicts itself: Sister Mara — Age is "34" here but "52" in notes\/infirmary-notes\.md:8/);
    assert.doesNotMatch(result.stdout, /"60"/, 'a page naming two people does not say whose age 60 is: no conflict is made up');
  });

  it('lint reports a broken campaign.yaml as a finding on that file', async () => {
    fs.writeFileSync(path.join(root, 'campaign.yaml'), 'id: Not Valid\ntitle: x\n');
    const result = await runCaptured(['lint', root], '/');
    assert.equal(result.code, EXIT.findings);
    assert.match(result.stdout, /campaign\.yaml +error +id: id must be lowercase/);
  });

  it('gives a usage error outside any campaign', async () => {
    const result = await runCaptured(['index', '/'], '/');
    assert.equal(result.code, EXIT.usage);
    assert.match(result.stderr, /no campaign\.yaml here or in any folder above it/);
  });
});
