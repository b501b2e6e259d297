import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCampaign, type Campaign } from '../../src/knowledge/campaign/campaign';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { importLorebookFile, lorebookImportReport } from '../../src/knowledge/interchange/lorebookImport';
import { retrieveKnowledge, searchKnowledge, whyNot } from '../../src/knowledge/retrieval/retrieval';
import { StoryEngine } from '../../src/story/engine';
import { indexKnowledge } from '../../src/story/indexKnowledge';
import { OllamaNarrator } from '../../src/models';
import { PlayStore } from '../../src/story/playStore';
import type { RetrievalRecord } from '../../src/knowledge/retrieval';
import { renderContextMarkdown, renderContextSummary } from '../../src/story/contextReport';
import { corpusPath } from '../support/corpora';
import { runCaptured } from '../support/cliRun';
import { FakeOllama } from '../support/fakeOllama';

/** A book written for these tests: one file per entry, SillyTavern's fields under `sillytavern.entry`. */
const BOOK: Record<string, string> = {
  'lore/inn.md': '---\ntitle: The Crooked Inn\nkeys: [inn, tavern]\nsillytavern:\n  entry: { order: 100, position: 1 }\n---\nThe Crooked Inn leans over the river road.\n',
  'lore/river.md': '---\ntitle: The River Road\nkeys: [river road]\nsillytavern:\n  entry: { order: 150, position: 1 }\n---\nThe river road runs north to the ferry.\n',
  'lore/brisk.md': '---\ntitle: Old Brisk\nkeys: [innkeeper]\nsillytavern:\n  entry: { group: innkeeper, groupOverride: true, order: 200, position: 4, depth: 2, role: 1 }\n---\nOld Brisk keeps the inn and every secret in it.\n',
  'lore/tam.md': '---\ntitle: Young Tam\nkeys: [innkeeper]\nsillytavern:\n  entry: { group: innkeeper, order: 300 }\n---\nYoung Tam minds the inn when Brisk is away.\n',
  'lore/dragon.md': '---\ntitle: The Red Dragon\nkeys: [dragon]\nsillytavern:\n  entry: { sticky: 4, cooldown: 3, position: 4, depth: 0, role: 2 }\n---\nA red dragon nests in the northern peaks, and rumours follow it.\n',
  'lore/omen.md': '---\ntitle: The Omen\nalways_include: true\nsillytavern:\n  entry: { constant: true, probability: 0 }\n---\nA comet burns in the sky.\n',
  'lore/ghost.md': '---\ntitle: The Drowned Ghost\nkeys: [ghost]\nsillytavern:\n  entry: { delay: 10, position: 7 }\n---\nA drowned girl haunts the cellar stairs.\n',
  'lore/rumour.md': '---\ntitle: Northern Rumours\nkeys: ["/rumou?rs?/i"]\nsillytavern:\n  entry: { cooldown: 4, position: 2 }\n---\nTravellers whisper that the peaks are burning.\n',
  'lore/world.md': '---\ntitle: The World\nalways_include: true\nsillytavern:\n  entry: { constant: true, order: 10 }\n---\nThe river kingdoms have no king.\n',
  'lore/cellar.md': '---\ntitle: The Cellar\nkeys: [cellar]\nsecondary_keys: [wine, barrel]\nselective_logic: and_all\nsillytavern:\n  entry: { order: 50, position: 3 }\n---\nThe cellar hides a smugglers\' door behind the third barrel.\n',
};

interface Setup {
  dir: string;
  campaign: Campaign;
  index: KnowledgeStore;
  play: PlayStore;
  fake: FakeOllama;
  engine: StoryEngine;
}

async function setUp(): Promise<Setup> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-world-info-'));
  fs.writeFileSync(path.join(dir, 'campaign.yaml'), 'id: brisk\ntitle: Brisk\ndefault_class: canon\n');
  for (const [file, text] of Object.entries(BOOK)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  }
  importLorebookFile(corpusPath('lorebooks', 'Eldoria.worldinfo.st-current.json'), { campaignRoot: dir, class: 'canon', folder: 'eldoria' });
  const campaign = loadCampaign(dir);
  const index = KnowledgeStore.open(campaign);
  await importCampaign(campaign, index);
  const play = new PlayStore(campaign.playPath);
  const fake = await FakeOllama.start();
  const engine = new StoryEngine(play, indexKnowledge(index), new OllamaNarrator({ host: fake.url, env: {} }), { model: 'llama3.2', autoMemories: false });
  return { dir, campaign, index, play, fake, engine };
}

async function tearDown(s: Setup): Promise<void> {
  await s.fake.close();
  s.play.close();
  s.index.close();
  fs.rmSync(s.dir, { recursive: true, force: true });
}

const firedTitles = (record: RetrievalRecord) => record.worldInfo!.verdicts.filter((v) => v.fired).map((v) => v.title).sort();
const reasonOf = (record: RetrievalRecord, title: string) => record.worldInfo!.verdicts.find((v) => v.title === title)!.reason;

describe('World Info in play: a book plays as SillyTavern plays it', () => {
  let s: Setup;
  before(async () => (s = await setUp()));
  after(() => tearDown(s));

  it('fires, turn by turn over 30 messages, what SillyTavern would, and says why each did or did not', async () => {
    // [action, narration, entries expected to fire, reasons expected]
    const script: [string, string, string[], Record<string, RegExp>?][] = [
      ['I step into the inn off the river road, out of the rain.', 'The common room is warm.', ['The Crooked Inn', 'The River Road'], { 'The Omen': /^constant \(always active\); probability 0%: rolled \d+$/ }],
      ['I wave at the innkeeper.', 'A grey woman nods and pours you a cup.', ['Old Brisk', 'The Crooked Inn'], { 'Young Tam': /group innkeeper: Old Brisk won on order/, 'The Crooked Inn': /key 'inn' in message 3/ }],
      ['Any news of the dragon?', 'She lowers her voice.', ['The Red Dragon'], { 'The Red Dragon': /sticky: stays for 3 more messages/ }],
      ['I drink quietly and ask if a ghost haunts this place.', 'She only shrugs.', ['The Red Dragon'], { 'The Red Dragon': /sticky: 1 more message after this one/, 'The Drowned Ghost': /waits for message 10 \(delay 10; the chat holds 7\)/ }],
      ['I look at the fire.', 'An old banner hangs above it.', [], { 'The Red Dragon': /cooling down until message 12 \(its sticky just ended\)/ }],
      ['I ask about the dragon on the banner.', 'She says nothing.', [], { 'The Red Dragon': /^cooling down until message 12$/ }],
      ['Tell me about the dragon again.', 'She speaks of rumours from the north.', ['The Red Dragon']],
      ['What rumours?', 'Nothing more tonight.', ['Northern Rumours', 'The Red Dragon'], { 'Northern Rumours': /key '\/rumou\?rs\?\/i' in message 15/ }],
      ['More rumors, please, and about the ghost.', 'She shivers and says no more.', ['The Drowned Ghost'], { 'Northern Rumours': /cooling down until message 19/ }],
      ['I go down to the cellar.', 'Barrels of wine line the walls.', [], { 'The Cellar': /secondary keys fail AND ALL \(0 of 2 found\)/ }],
      ['I search the cellar barrels for the good wine.', 'Dust everywhere.', ['The Cellar'], { 'The Cellar': /AND ALL \(2 of 2 found\)/ }],
      ['At dawn I walk into the forest of Eldoria.', 'Trees tower over you.', ['Eldoria']],
      ['A shadowfang howls!', 'Something moves between the trunks.', ['Shadowfang']],
      ['I run until I find a glade, a safe haven.', 'Sunlight falls through the leaves.', ['Glade']],
      ['I call on my magic ability.', 'Your hands glow.', ['Power']],
    ];
    const adventure = s.play.createAdventure({
      campaignId: s.campaign.id,
      title: 'Brisk',
      persona: { name: 'Wren', description: 'A courier with wet boots.' },
      plotEssentials: 'Wren carries a sealed letter north.',
      authorsNote: 'Keep it rainy.',
    });
    for (const [i, [action, narration, expected, reasons]] of script.entries()) {
      s.fake.queue({ chunks: [narration] });
      const outcome = await s.engine.takeTurn(adventure.id, { kind: 'do', text: action });
      assert.equal(outcome.error, null);
      const record = s.play.getSnapshot(outcome.turn.id)!.retrieval;
      const turn = `turn ${i + 1} (message ${2 * i + 1}): ${action}`;
      assert.equal(record.worldInfo!.chatLength, 2 * i + 1, turn);
      // The World is constant: every turn; the Omen is constant at 0%: never.
      assert.deepEqual(firedTitles(record), [...expected, 'The World'].sort(), turn);
      for (const [title, pattern] of Object.entries(reasons ?? {})) assert.match(reasonOf(record, title), pattern, `${turn}: ${title}`);
      // What fired is in the prompt the narrator received, where its position puts it, framed by its class.
      const [system, user] = (s.fake.requestsTo('/api/chat').at(-1)!.body as { messages: { content: string }[] }).messages.map((m) => m.content);
      const prompt = `${system}\n\n${user}`;
      const at = (text: string) => prompt.indexOf(text);
      // ↑Char: the constant World before the player character, in the system message.
      assert.ok(system!.includes('The river kingdoms have no king') && at('The river kingdoms have no king') < at('## Player character'), turn);
      assert.doesNotMatch(prompt, /A comet burns in the sky/, turn);
      const sent = (text: string, title: string) => {
        if (expected.includes(title)) assert.ok(at(text) >= 0, `${turn}: ${title} is sent`);
        else assert.equal(at(text), -1, `${turn}: ${title} is not sent`);
        return expected.includes(title);
      };
      // ↓Char: after the plot essentials, still in the system message; the higher order later, nearer the story.
      if (sent('The Crooked Inn leans', 'The Crooked Inn')) assert.ok(system!.includes('The Crooked Inn leans') && at('The Crooked Inn leans') > at('## Plot essentials'), turn);
      if (sent('The river road runs north', 'The River Road')) assert.ok(system!.includes('The river road runs north') && at('The Crooked Inn leans') < at('The river road runs north'), turn);
      // @D 2 as user: among the recent turns, before the last two messages (the narration before this action, and the action).
      if (sent('Old Brisk keeps the inn', 'Old Brisk')) {
        const history = user!.slice(user!.indexOf('## Recent story'), user!.indexOf("## Author's note"));
        const [previousAction, previousNarration] = script[i - 1]!;
        const block = history.indexOf('(World Info at depth 2, as user)');
        assert.ok(history.indexOf(`Player action: ${previousAction}`) < block && block < history.indexOf(previousNarration), turn);
        assert.match(history, /### CANON SOURCES — UNTRUSTED DATA \(World Info at depth 2, as user\)\nCampaign truth about the story/, turn);
      }
      sent('Young Tam minds the inn', 'Young Tam');
      // @D 0 as assistant: after the action, at the very end.
      if (sent('A red dragon nests', 'The Red Dragon')) {
        assert.ok(at('A red dragon nests') > at('## Action'), turn);
        assert.match(user!, /## CANON SOURCES — UNTRUSTED DATA \(World Info at depth 0, as assistant\)[^]*A red dragon nests[^]*⟦end [^⟧]+⟧$/, turn);
      }
      // ↑AN and ↓AN: around the author's note.
      if (sent('Travellers whisper that the peaks', 'Northern Rumours')) assert.ok(at('Travellers whisper') > at('## Recent story') && at('Travellers whisper') < at("## Author's note"), turn);
      if (sent("The cellar hides a smugglers", 'The Cellar')) assert.ok(at('The cellar hides') > at("## Author's note") && at('The cellar hides') < at('## Action'), turn);
      // An outlet: fired, yet sent nowhere, and the canon section says why.
      assert.equal(at('A drowned girl haunts'), -1, turn);
      if (expected.includes('The Drowned Ghost')) {
        assert.match(JSON.stringify(outcome.context!.sections.find((x) => x.id === 'canon')?.leftOut ?? []), /outlet[^"]*SillyTavern sends it only where a prompt names its outlet/, turn);
      }
      // Eldoria's entries say position 0: before the player character.
      for (const title of ['Eldoria', 'Shadowfang', 'Glade', 'Power']) {
        const placed = outcome.context!.sections.find((x) => x.id === 'world-info-before')!.worldInfo!.map((w) => record.candidates.find((c) => c.passageId === w.id)!.sourceTitle);
        assert.equal(placed.includes(title), expected.includes(title), `${turn}: ${title}`);
      }
    }
  });

  it('rewinds timed effects with undo, retry and fork: each continues from its own branch', async () => {
    const adventure = s.play.createAdventure({ campaignId: s.campaign.id, title: 'Rewind' });
    const turn = async (text: string) => {
      s.fake.queue({ chunks: ['Time passes.'] });
      const outcome = await s.engine.takeTurn(adventure.id, { kind: 'do', text });
      return s.play.getSnapshot(outcome.turn.id)!.retrieval;
    };
    await turn('I enter.');
    const fired = await turn('A dragon!');
    assert.ok(firedTitles(fired).includes('The Red Dragon'));
    assert.match(reasonOf(await turn('I wait.'), 'The Red Dragon'), /sticky: 1 more message after this one/);
    // Undo the sticky turn and play again: the same branch point, the same sticky standing.
    s.engine.undo(adventure.id);
    assert.match(reasonOf(await turn('I wait longer.'), 'The Red Dragon'), /sticky: 1 more message/);
    // Retry it: a sibling, starting from the same parent's effects.
    s.fake.queue({ chunks: ['Again.'] });
    const retried = await s.engine.retry(adventure.id);
    assert.match(reasonOf(s.play.getSnapshot(retried.turn.id)!.retrieval, 'The Red Dragon'), /sticky: 1 more message/);
    // Fork from before the dragon: no effect stands there.
    const first = s.play.lineage(retried.turn.id)[0]!;
    s.engine.fork(adventure.id, first.id);
    assert.match(reasonOf(await turn('I wait.'), 'The Red Dragon'), /no key in the last 2 messages/);
  });

  it('records the seed: the turn shows what it rolled, and a retry rolls again from its own seed', async () => {
    const adventure = s.play.createAdventure({ campaignId: s.campaign.id, title: 'Seeds' });
    s.fake.queue({ chunks: ['Hm.'] });
    const outcome = await s.engine.takeTurn(adventure.id, { kind: 'do', text: 'hello' });
    const record = s.play.getSnapshot(outcome.turn.id)!.retrieval;
    const stored = s.play.worldInfoAfter([outcome.turn])!;
    assert.equal(stored.seed, record.worldInfo!.seed);
    assert.equal(stored.chatLength, 1);
    assert.match(reasonOf(record, 'The Omen'), /probability 0%: rolled \d+/);
    s.fake.queue({ chunks: ['Hm again.'] });
    const retried = await s.engine.retry(adventure.id);
    assert.equal(typeof s.play.worldInfoAfter([retried.turn])!.seed, 'number');
    // A preview asked twice rolls the same.
    const a = await s.engine.previewContext(adventure.id, { kind: 'do', text: 'x' });
    const b = await s.engine.previewContext(adventure.id, { kind: 'do', text: 'x' });
    assert.equal(a.retrieval.worldInfo!.seed, b.retrieval.worldInfo!.seed);
  });

  it('keeps entries SillyTavern holds back out of a prompt, though search still finds them by their keys', async () => {
    const ghost = await searchKnowledge(s.index, 'the ghost');
    assert.equal(ghost.hits[0]?.sourcePath, 'lore/ghost.md');
    // Its own words make it relevant too; still, relevance does not admit it (the campaign does not let it).
    const prompt = await retrieveKnowledge(s.index, { input: 'the ghost haunts the cellar stairs', stage: 'narrator', budgets: { alwaysInclude: 600, canon: 1500, reference: 900, inspiration: 300 } });
    assert.ok(!prompt.sections.canon.some((p) => p.sourcePath === 'lore/ghost.md'));
    assert.match(prompt.record.candidates.find((c) => c.sourcePath === 'lore/ghost.md')!.reason, /^World Info holds it back: waits for message 10/);
    assert.match(reasonOf(prompt.record, 'The Drowned Ghost'), /^waits for message 10 \(delay 10; the chat holds 1\)$/);
    // "Why not?" for an entry held back that never became a candidate says SillyTavern's reason.
    const quiet = await retrieveKnowledge(s.index, { input: 'I sit down.', stage: 'narrator', budgets: { alwaysInclude: 600, canon: 1500, reference: 900, inspiration: 300 } });
    const passageOf = (file: string) => (s.index.db.prepare('SELECT p.id FROM passages p JOIN sources s ON s.id = p.source_id WHERE s.path = ?').get(file) as { id: string }).id;
    assert.match(whyNot(s.index, quiet.record, passageOf('lore/omen.md')), /^not-relevant: World Info holds it back: constant \(always active\); probability 0%: rolled \d+$/);
    assert.equal(whyNot(s.index, quiet.record, passageOf('lore/ghost.md')), "SillyTavern's World Info held its entry back: waits for message 10 (delay 10; the chat holds 1)");
  });

  it('shows each entry fired or held back, and where SillyTavern would put it, in the context report and the CLI', async () => {
    const adventure = s.play.createAdventure({ campaignId: s.campaign.id, title: 'Report' });
    const context = await s.engine.previewContext(adventure.id, { kind: 'do', text: 'I ask the innkeeper about the ghost.' });
    assert.match(renderContextSummary(context), /World Info at message 1 \(seed \d+\): 3 of 14 entries fired/);
    const report = renderContextMarkdown(context, { campaignTitle: 'Brisk', adventureTitle: 'Report', action: 'x' });
    assert.match(report, /^## SillyTavern World Info$/m);
    assert.match(report, /^fired · Old Brisk \(lore\/brisk\.md\): key 'innkeeper' in message 1; group innkeeper: won on order · SillyTavern: @D \(at a depth\) 2 as user, order 200$/m);
    assert.match(report, /^held back · Young Tam \(lore\/tam\.md\): key 'innkeeper' in message 1; group innkeeper: Old Brisk won on order/m);
    assert.match(report, /^held back · The Drowned Ghost \(lore\/ghost\.md\): waits for message 10/m);
    assert.match(report, /^not mentioned · \d+ entries: their keys are not in the scanned messages: /m);
    // Each placed where its position says, and the report names the place: the inn after the plot essentials,
    // Old Brisk among the recent turns (at the top: this chat holds only the action).
    assert.match(report, /^## \d+\. World Info after the plot essentials \(SillyTavern ↓Char, ↑EM, ↓EM\) — \d+ tokens/m);
    assert.match(report, /^- \*\*The Crooked Inn\*\* — ↓Char \(after the character\), order 100: after the plot essentials$/m);
    assert.match(report, /^- \*\*Old Brisk\*\* — @D \(at a depth\) 2 as user, order 200: in the recent story, before the last 2 messages \(the action is the last\)$/m);
    const history = context.sections.find((x) => x.id === 'history')!;
    assert.match(history.text, /^## Recent story\n### CANON SOURCES — UNTRUSTED DATA \(World Info at depth 2, as user\)\n[^]*Old Brisk keeps the inn/);
    assert.equal(context.sections.find((x) => x.id === 'canon'), undefined, 'nothing is left in the canon section itself');

    const cli = await runCaptured(['context', '--input', 'A shadowfang!', '--campaign', s.dir, '--json'], os.tmpdir());
    assert.equal(cli.code, 0, cli.stderr);
    const json = JSON.parse(cli.stdout) as { record: RetrievalRecord };
    assert.deepEqual(firedTitles(json.record), ['Shadowfang', 'The World']);
    const text = await runCaptured(['context', '--input', 'A shadowfang!', '--campaign', s.dir], os.tmpdir());
    assert.match(text.stdout, /^fired · Shadowfang \(eldoria\/shadowfang\.md\): key 'shadowfang' in message 1/m);
    // --recent lines are the chat before the input, scanned as deep as campaign.yaml says.
    const recent = ['context', '--input', 'I run.', '--recent', 'A shadowfang howls.', '--campaign', s.dir, '--json'];
    assert.deepEqual(firedTitles((JSON.parse((await runCaptured(recent, os.tmpdir())).stdout) as { record: RetrievalRecord }).record), ['Shadowfang', 'The World']);
    const yaml = path.join(s.dir, 'campaign.yaml');
    const before = fs.readFileSync(yaml, 'utf8');
    try {
      fs.writeFileSync(yaml, `${before}world_info: { scan_depth: 1 }\n`);
      assert.deepEqual(firedTitles((JSON.parse((await runCaptured(recent, os.tmpdir())).stdout) as { record: RetrievalRecord }).record), ['The World']);
    } finally {
      fs.writeFileSync(yaml, before);
    }
  });

  describe("campaign.yaml's world_info settings", () => {
    it("reads SillyTavern's global settings, its defaults where absent, and names a wrong one", () => {
      assert.deepEqual(s.campaign.worldInfo, {
        scanDepth: 2, recursive: false, maxRecursionSteps: 0, minActivations: 0, minActivationsDepthMax: 0, budgetPercent: 25, budgetCap: 0,
        caseSensitive: false, matchWholeWords: false, useGroupScoring: false, includeNames: true, searchAdmits: false,
      });
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-world-info-yaml-'));
      try {
        fs.writeFileSync(path.join(dir, 'campaign.yaml'), 'title: X\nworld_info: { scan_depth: 1, recursive: true, budget_cap: 300, search_admits: true }\n');
        const read = loadCampaign(dir).worldInfo;
        assert.deepEqual([read.scanDepth, read.recursive, read.budgetCap, read.searchAdmits, read.budgetPercent], [1, true, 300, true, 25]);
        fs.writeFileSync(path.join(dir, 'campaign.yaml'), 'title: X\nworld_info: { scan_depth: -1 }\n');
        assert.throws(() => loadCampaign(dir), /campaign\.yaml: world_info\.scan_depth: /);
        fs.writeFileSync(path.join(dir, 'campaign.yaml'), 'title: X\nworld_info: { scandepth: 3 }\n');
        assert.throws(() => loadCampaign(dir), /campaign\.yaml: world_info: .*scandepth/);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it("takes a card book's scan depth, budget and recursion into world_info, where campaign.yaml does not set them", () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-world-info-book-'));
      try {
        fs.writeFileSync(path.join(dir, 'campaign.yaml'), '# my campaign\ntitle: X\nworld_info:\n  scan_depth: 3 # mine\n');
        const card = { spec: 'chara_card_v2', spec_version: '2.0', data: { name: 'Mira', character_book: { scan_depth: 6, token_budget: 400, recursive_scanning: true, entries: [{ keys: ['mira'], content: 'Mira is a cartographer.', extensions: {}, enabled: true, insertion_order: 100 }] } } };
        const file = path.join(dir, 'mira.json');
        fs.writeFileSync(file, JSON.stringify(card));
        const result = importLorebookFile(file, { campaignRoot: dir, class: 'canon' });
        assert.deepEqual(result.campaignSettings.applied, ["world_info.budget_cap: 400 (the book's token_budget)", "world_info.recursive: true (the book's recursive_scanning)"]);
        assert.deepEqual(result.campaignSettings.notApplied, ["scan_depth 6: campaign.yaml's world_info.scan_depth 3 stands"]);
        const yaml = fs.readFileSync(path.join(dir, 'campaign.yaml'), 'utf8');
        assert.match(yaml, /^# my campaign$/m);
        assert.match(yaml, /scan_depth: 3 # mine/);
        assert.deepEqual([loadCampaign(dir).worldInfo.budgetCap, loadCampaign(dir).worldInfo.recursive, loadCampaign(dir).worldInfo.scanDepth], [400, true, 3]);
        assert.match(lorebookImportReport(result, 'mira.json').join('\n'), /^Written into campaign\.yaml, how play activates entries: world_info\.budget_cap: 400/m);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('plays by them: a scan depth of 1 reads only the action, recursion follows entry text', async () => {
      const shallow = new StoryEngine(s.play, indexKnowledge(s.index), new OllamaNarrator({ host: s.fake.url, env: {} }), {
        model: 'llama3.2',
        autoMemories: false,
        worldInfo: { ...s.campaign.worldInfo, scanDepth: 1, recursive: true },
      });
      const adventure = s.play.createAdventure({ campaignId: s.campaign.id, title: 'Shallow' });
      s.fake.queue({ chunks: ['A dragon circles overhead.'] });
      await shallow.takeTurn(adventure.id, { kind: 'do', text: 'I look up.' });
      // The narration before the action is not scanned at depth 1; the action is.
      const quiet = await shallow.previewContext(adventure.id, { kind: 'do', text: 'I hail the cook.' });
      assert.match(reasonOf(quiet.retrieval, 'The Red Dragon'), /^no key in the last message or activated entries$/);
      // The dragon's own text speaks of rumours: recursion fires that entry, a step later.
      const loud = await shallow.previewContext(adventure.id, { kind: 'do', text: 'A dragon!' });
      assert.deepEqual(firedTitles(loud.retrieval), ['Northern Rumours', 'The Red Dragon', 'The World']);
      assert.match(reasonOf(loud.retrieval, 'Northern Rumours'), /in the text of an entry already activated \(recursion step 1\)$/);
      const flat = await s.engine.previewContext(adventure.id, { kind: 'do', text: 'A dragon!' });
      assert.deepEqual(firedTitles(flat.retrieval), ['The Red Dragon', 'The World'], 'recursion is off by default');
    });

    it('search_admits lets relevance admit an entry SillyTavern holds back', async () => {
      const query = { input: 'the ghost haunts the cellar stairs', stage: 'narrator' as const, budgets: { alwaysInclude: 600, canon: 1500, reference: 900, inspiration: 300 } };
      const wi = { messages: [query.input], chatLength: 1, state: { sticky: {}, cooldown: {} }, seed: 1, settings: s.campaign.worldInfo, budget: 2000 };
      const held = await retrieveKnowledge(s.index, { ...query, worldInfo: { ...wi, searchAdmits: false } });
      assert.ok(!held.sections.canon.some((p) => p.sourcePath === 'lore/ghost.md'));
      const admitted = await retrieveKnowledge(s.index, { ...query, worldInfo: { ...wi, searchAdmits: true } });
      const ghost = admitted.sections.canon.find((p) => p.sourcePath === 'lore/ghost.md');
      assert.ok(ghost, 'relevance admits it');
      assert.match(ghost.reason, /matched/);
    });
  });
});
