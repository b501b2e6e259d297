import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { budgetBar, describeContext, renderContextMarkdown, renderContextSummary, sectionLabel, textBar } from '../../src/story/contextReport';
import { StoryEngine } from '../../src/story/engine';
import { indexKnowledge } from '../../src/story/indexKnowledge';
import { OllamaNarrator } from '../../src/models/narrator';
import { PlayStore } from '../../src/story/playStore';
import { EXAMPLE_CAMPAIGN } from '../support/corpora';

describe('context report', () => {
  let dir: string;
  let index: KnowledgeStore;
  let play: PlayStore;
  let engine: StoryEngine;
  let adventureId: string;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-report-'));
    fs.cpSync(EXAMPLE_CAMPAIGN, dir, { recursive: true, filter: (src) => !src.includes('.storyteller') });
    // Imported text that would be markup or a fetch if the report rendered it as markdown.
    fs.writeFileSync(path.join(dir, 'places', 'tracker.md'), '---\nclass: canon\n---\n# The Crypt Door\n\nThe crypt door ```` has ![](http://127.0.0.1:9/track.png) <script>alert(1)</script>\n');
    const campaign = loadCampaign(dir);
    index = KnowledgeStore.open(campaign);
    await importCampaign(campaign, index);
    play = new PlayStore(campaign.playPath);
    // No model is reachable at this host: a preview never calls it.
    engine = new StoryEngine(play, indexKnowledge(index), new OllamaNarrator({ host: 'http://127.0.0.1:9', env: {} }), { model: 'none', autoMemories: false });
    adventureId = play.createAdventure({ campaignId: campaign.id, title: 'Fog over Westhaven' }).id;
  });
  after(() => {
    play.close();
    index.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('lists every section in prompt order with its tokens and budget, the passages it uses and what it left out', async () => {
    const context = await engine.previewContext(adventureId, { kind: 'do', text: 'ask Mara about the crypt door in the Abbey' });
    const report = renderContextMarkdown(context, { campaignTitle: 'Westhaven', adventureTitle: 'Fog over Westhaven', action: 'ask Mara about the crypt door in the Abbey' });
    const headings = [...report.matchAll(/^## (\d+)\. (.+) — (\d+) tokens \((required|budget \d+)\)$/gm)];
    assert.deepEqual(headings.map((h) => Number(h[1])), context.sections.map((_, i) => i + 1));
    for (const [i, section] of context.sections.entries()) assert.equal(Number(headings[i]![3]), section.tokens);
    const canon = context.sections.find((s) => s.id === 'canon')!;
    assert.ok(canon.itemIds.length > 0, 'the action retrieves canon');
    assert.match(report, /^- \*\*Sister Mara\*\* — canon · characters\/mara\.md/m, 'a used passage is named by its source title, not twice when its heading repeats it');
    assert.match(report, /Resurrection is impossible/, 'the always-include text is shown as sent');
    assert.match(report, /## Retrieval decisions \(\d+ candidates/);
    assert.ok(report.includes(renderContextSummary(context)), 'the summary the CLI prints heads the report');
  });

  it("names each passage as the link that opens its file at the passage's line, from the folder the preview reads links from", async () => {
    const context = await engine.previewContext(adventureId, { kind: 'do', text: 'ask Mara about the crypt door in the Abbey' });
    const mara = context.retrieval.candidates.find((c) => c.sourcePath === 'characters/mara.md' && c.outcome === 'selected')!;
    assert.ok(mara.startLine, 'the decision records where the passage is written');
    const report = renderContextMarkdown(context, { campaignTitle: 'W', adventureTitle: 'A', action: 'ask Mara' }, undefined, { campaignRoot: dir, linkRoot: path.dirname(dir) });
    const href = `</${encodeURIComponent(path.basename(dir))}/characters/mara.md#L${mara.startLine}>`;
    assert.ok(report.includes(`- **[Sister Mara](${href})** — canon · characters/mara.md`), 'the name is the link, to the file and line');
    // A campaign outside the first workspace folder is reached from it.
    assert.match(renderContextMarkdown(context, { campaignTitle: 'W', adventureTitle: 'A', action: 'ask Mara' }, undefined, { campaignRoot: dir, linkRoot: path.join(dir, 'elsewhere') }), /\[Sister Mara\]\(<\/\.\.\/characters\/mara\.md#L\d+>\)/);
    // The turns the recent story carries are not files: they stay names.
    assert.doesNotMatch(report.split('\n').filter((line) => !/\.md#L\d+>\)/.test(line)).join('\n'), /\]\(</);
  });

  it("speaks the writer's words: sections by their names, never the prompt's internal ids or cache words", async () => {
    const context = await engine.previewContext(adventureId, { kind: 'do', text: 'ask Mara about the crypt door in the Abbey' });
    const summary = renderContextSummary(context);
    const report = renderContextMarkdown(context, { campaignTitle: 'W', adventureTitle: 'A', action: 'ask Mara' });
    for (const shown of [summary, report]) {
      assert.doesNotMatch(shown, /\[prefix\]|\[live\]|knowledge-rule|Stable prefix|Live part|section `/, 'no internal section ids or cache words');
      // The prompt's own text, shown as sent inside its fence, still heads the rule so; the names around it do not.
      assert.doesNotMatch(shown.replace(/^(`{3,})text\n[\s\S]*?^\1$/gm, ''), /Imported knowledge/, 'the reading rule is not named as if something had been imported');
    }
    assert.match(summary, /^ {2}Sent the same every turn:\n {4}Narrator +\d+ tokens\n {4}Rules for campaign notes +\d+ tokens$/m);
    assert.match(summary, /^ {2}Written for this turn:$/m);
    assert.match(report, /^## 2\. Rules for campaign notes — \d+ tokens \(required\)$/m);
  });

  it("names the recent story by its turns, not their ids, and says why a passage's heading reads \\#", async () => {
    const adventure = play.createAdventure({ campaignId: 'westhaven', title: 'Bells' });
    const turn = play.createTurn({ adventureId: adventure.id, parentId: null, action: { kind: 'do', text: 'ring the bell' }, model: 'none', stateAfter: {} });
    play.finishTurn(turn.id, { status: 'complete', narration: 'The bell tolls.\n# Night falls', error: null, stateDelta: null, stateAfter: {}, refusals: [], promptEvalCount: null, evalCount: null });
    const context = await engine.previewContext(adventure.id, { kind: 'do', text: 'listen' });
    const report = renderContextMarkdown(context, { campaignTitle: 'W', adventureTitle: 'Bells', action: 'listen' });
    const history = report.slice(report.indexOf('Recent story'));
    assert.match(history, /^Uses: the latest turn, as sent below\.$/m);
    assert.ok(!report.includes(turn.id), 'no turn id in the report');
    // The SRD's run-on sections carry their headings in the passage text, which the prompt escapes.
    const srd = path.join(dir, 'srd.md');
    fs.writeFileSync(srd, '---\nclass: reference\n---\n# Spellcasting\n\n## Spellcasting Focus\n\nYou can use a holy symbol as a spellcasting focus.\n\n## Divine Smite\n\nWhen you hit with a melee weapon, you can expend one spell slot.\n');
    await importCampaign(loadCampaign(dir), index);
    const smite = await engine.previewContext(adventure.id, { kind: 'do', text: 'I use my holy symbol as a spellcasting focus and smite' });
    const shown = renderContextMarkdown(smite, { campaignTitle: 'W', adventureTitle: 'Bells', action: 'smite' });
    fs.rmSync(srd);
    await importCampaign(loadCampaign(dir), index);
    assert.match(shown, /^\\## Divine Smite$/m, 'shown exactly as sent');
    assert.match(shown, /^A line of this text that starts with `#` is sent as `\\#`: plain text, so it cannot open a section of the prompt\.$/m);
  });

  it('keeps imported text inert: inside a fence longer than any backtick run, never as markup', async () => {
    const context = await engine.previewContext(adventureId, { kind: 'do', text: 'open the crypt door' });
    const report = renderContextMarkdown(context, { campaignTitle: 'W', adventureTitle: 'A', action: 'open the crypt door' });
    const at = report.indexOf('```` has [image] <script>alert(1)</script>');
    assert.ok(at > 0, 'the passage text is shown as sent (the chunker already made the image a placeholder)');
    const before = report.slice(0, at);
    const opener = [...before.matchAll(/^(`{3,})text$/gm)].at(-1);
    assert.ok(opener && opener[1]!.length > 4, 'the text sits in a fence longer than its own ```` run');
    assert.ok(!before.slice(opener.index).includes(`\n${opener[1]}\n`), 'and that fence is still open there');
  });

  it("names each section for the side bar in sentence case, short, with what the prompt's heading adds kept as its note", async () => {
    const context = await engine.previewContext(adventureId, { kind: 'do', text: 'ask Mara about the crypt door in the Abbey' });
    const named = new Map(context.sections.map((s) => [s.id, sectionLabel(s)]));
    assert.deepEqual(named.get('always-include'), { label: 'Always-included canon', note: 'untrusted data' });
    assert.deepEqual(named.get('canon'), { label: 'Canon sources', note: 'untrusted data' });
    // Sent only by an adventure that tracks state: its heading's parenthesis is the note.
    assert.deepEqual(sectionLabel({ title: 'Current world state (authoritative: it supersedes imported canon)' }), { label: 'Current world state', note: 'authoritative: it supersedes imported canon' });
    assert.deepEqual(named.get('narrator'), { label: 'Narrator', note: '' });
    for (const { label } of named.values()) assert.ok(label.length <= 24 && label !== label.toUpperCase(), `"${label}" fits a side bar row and is not shouted`);
  });

  it('draws each section as a bar of its budget: the items it used, sized by their cost, and what it left out beside them', async () => {
    // Canon held to a budget too small for every passage the action finds.
    const tight = new StoryEngine(play, indexKnowledge(index), new OllamaNarrator({ host: 'http://127.0.0.1:9', env: {} }), {
      model: 'none',
      autoMemories: false,
      knowledgeCaps: { alwaysInclude: 600, canon: 160, reference: 900, inspiration: 300 },
    });
    const context = await tight.previewContext(adventureId, { kind: 'do', text: 'ask Mara about the crypt door in the Abbey' });
    const canon = describeContext(context).find((d) => d.section.id === 'canon')!;
    assert.ok(canon.items.length > 0 && canon.leftOut.length > 0, 'the action finds more canon than 160 tokens hold');
    const bar = budgetBar(canon);
    const used = bar.segments.filter((s) => s.kind !== 'left-out');
    assert.equal(used.reduce((n, s) => n + s.tokens, 0), canon.section.tokens, 'the used segments add up to what the section cost');
    assert.deepEqual(bar.segments.filter((s) => s.kind === 'item').map((s) => s.title), canon.items.map((i) => i.title), 'one segment per passage used, named for its hover');
    const left = bar.segments.filter((s) => s.kind === 'left-out');
    assert.equal(left.length, canon.leftOut.length, 'every left-out passage has its cost, so each is drawn');
    assert.ok(left.every((s) => s.tokens > 0));
    assert.equal(bar.scale, canon.section.tokens + left.reduce((n, s) => n + s.tokens, 0), 'what was wanted runs past the budget, and sets the scale');
    assert.match(textBar(bar), /^█+▒+░*$/);

    const report = renderContextMarkdown(context, { campaignTitle: 'W', adventureTitle: 'A', action: 'ask Mara' });
    assert.match(report, new RegExp(`^Canon sources +█+▒+░* +${canon.section.tokens} / 160 · ${canon.leftOut.length} left out$`, 'm'), 'the report draws the same bar');
    assert.match(report, /^Narrator +█{24} +\d+ · required$/m, 'a required section is full, with no budget to hold it to');
  });
});
