import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EXIT } from '../../src/cli/command';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import { corpusPath } from '../support/corpora';
import { runCaptured } from '../support/cliRun';

describe('CLI init: a folder of notes becomes a campaign', () => {
  let dir: string;
  let notes: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-init-'));
    notes = path.join(dir, 'my notes');
    // A writer's folder: the Torys bible's world pages, a map image and a Word file beside them.
    fs.cpSync(path.join(corpusPath('torys'), 'world', 'tumulted-sea'), path.join(notes, 'world'), { recursive: true });
    fs.writeFileSync(path.join(notes, 'ideas.md'), 'The lighthouse keeper lies about the storm.\n');
    fs.writeFileSync(path.join(notes, 'map.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]));
    fs.writeFileSync(path.join(notes, 'world', 'old.md'), Buffer.from([0x68, 0x69, 0x00, 0x01]));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('index on a folder without campaign.yaml points to init', async () => {
    const result = await runCaptured(['index', notes], dir);
    assert.equal(result.code, EXIT.usage);
    assert.match(result.stderr, /no campaign\.yaml here or in any folder above it; to make this folder a campaign, run 'storyteller init ".*my notes"'/);
  });

  it('writes a commented campaign.yaml, reports what it found and would skip, and the index then reads exactly those files', async () => {
    const result = await runCaptured(['init', notes, '--title', 'Salt Roads', '--default-class', 'canon'], dir);
    assert.equal(result.code, EXIT.ok, result.stderr);
    const yaml = fs.readFileSync(path.join(notes, 'campaign.yaml'), 'utf8');
    assert.match(yaml, /^# A Storyteller campaign/m);
    assert.match(yaml, /^# {3}world: canon$/m, 'its own folders offered as rules to uncomment');
    const campaign = loadCampaign(notes);
    assert.deepEqual([campaign.title, campaign.defaultClass, campaign.id], ['Salt Roads', 'canon', 'my-notes']);
    fs.writeFileSync(path.join(notes, 'campaign.yaml'), yaml.replace('# folders:', 'folders:').replace('#   world: canon', '  world: canon'));
    assert.deepEqual(loadCampaign(notes).folderRules, { world: 'canon' }, 'the suggested rule works once uncommented');

    const torysPages = fs.readdirSync(path.join(notes, 'world'), { recursive: true }).filter((f) => String(f).endsWith('.md')).length - 1;
    assert.match(result.stdout, new RegExp(`Found ${torysPages + 1} files to index:`));
    assert.match(result.stdout, /^ {2}\. +1 file, 0 with front matter$/m);
    assert.match(result.stdout, /^ {2}world\/sibal +\d+ files, \d+ with front matter$/m);
    assert.match(result.stdout, /^ {2}map\.png {2}not markdown or text \(\.png\)/m);
    assert.match(result.stdout, /^ {2}world\/old\.md {2}.*(binary|NUL)/im);
    assert.match(result.stdout, /^Next: storyteller index ".*my notes"$/m);

    const indexed = await runCaptured(['index', notes, '--json'], dir);
    const report = JSON.parse(indexed.stdout) as { counts: Record<string, number> };
    assert.equal(report.counts.indexed, torysPages + 1, 'the files init counted are the ones indexed');
  });

  it('makes a setting bible canon by its folders, so its pages are canon (its Codex and graph full) at once; a rules book and loose notes stay reference', async () => {
    fs.cpSync(path.join(corpusPath('dnd-srd-5.1'), 'Races'), path.join(notes, 'Races'), { recursive: true });
    const result = await runCaptured(['init', notes], dir);
    assert.equal(result.code, EXIT.ok, result.stderr);
    assert.match(result.stdout, /^world\/ reads like a setting bible: its files are canon/m);
    const campaign = loadCampaign(notes);
    assert.equal(campaign.defaultClass, 'reference');
    assert.deepEqual(campaign.folderRules, { world: 'canon' });
    assert.match(fs.readFileSync(path.join(notes, 'campaign.yaml'), 'utf8'), /^# {3}Races: canon$/m, 'the rules book offered, not made canon');
    // world/old.md is binary: the index says so in its exit code and reads the rest.
    await runCaptured(['index', notes], dir);
    const sources = JSON.parse((await runCaptured(['sources', notes, '--json'], dir)).stdout) as { path: string; class: string }[] | { sources: { path: string; class: string }[] };
    const list = Array.isArray(sources) ? sources : sources.sources;
    const classOf = (prefix: string) => [...new Set(list.filter((s) => s.path.startsWith(prefix)).map((s) => s.class))];
    assert.deepEqual([classOf('world/'), classOf('Races/'), classOf('ideas.md')], [['canon'], ['reference'], ['reference']]);

    // The writer's own --default-class is one class for every file, with no rule added.
    fs.rmSync(path.join(notes, 'campaign.yaml'));
    fs.rmSync(path.join(notes, '.storyteller'), { recursive: true, force: true });
    assert.equal((await runCaptured(['init', notes, '--default-class', 'reference'], dir)).code, EXIT.ok);
    assert.deepEqual(loadCampaign(notes).folderRules, {});
  });

  it('never overwrites a campaign.yaml, and never nests a campaign in another', async () => {
    fs.writeFileSync(path.join(notes, 'campaign.yaml'), 'title: Mine\n');
    const again = await runCaptured(['init', notes], dir);
    assert.equal(again.code, EXIT.usage);
    assert.match(again.stderr, /campaign\.yaml already exists and was left as it is; run 'storyteller index/);
    assert.equal(fs.readFileSync(path.join(notes, 'campaign.yaml'), 'utf8'), 'title: Mine\n');
    const nested = await runCaptured(['init', path.join(notes, 'world')], dir);
    assert.equal(nested.code, EXIT.usage);
    assert.match(nested.stderr, /inside the campaign at .*my notes .*campaigns do not nest/);
    assert.equal(fs.existsSync(path.join(notes, 'world', 'campaign.yaml')), false);
  });
});
