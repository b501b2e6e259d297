import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCampaign, type Campaign } from '../../src/knowledge/campaign/campaign';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { StoryEngine } from '../../src/story/engine';
import { indexKnowledge } from '../../src/story/indexKnowledge';
import { OllamaNarrator } from '../../src/models/narrator';
import { PlayStore } from '../../src/story/playStore';
import { EXAMPLE_CAMPAIGN } from '../support/corpora';
import { FakeOllama } from '../support/fakeOllama';
import { KAELEN, storedTurn } from './storySupport';

describe('story engine over the real campaign index', () => {
  let dir: string;
  let campaign: Campaign;
  let index: KnowledgeStore;
  let play: PlayStore;
  let fake: FakeOllama;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-indexed-'));
    fs.cpSync(EXAMPLE_CAMPAIGN, dir, { recursive: true });
    campaign = loadCampaign(dir);
    index = KnowledgeStore.open(campaign);
    await importCampaign(campaign, index);
    play = new PlayStore(campaign.playPath);
    fake = await FakeOllama.start();
  });
  afterEach(async () => {
    await fake.close();
    play.close();
    index.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('plays a turn with retrieved canon framed as data, and the turn keeps its text after the source is deleted and reindexed', async () => {
    const engine = new StoryEngine(play, indexKnowledge(index), new OllamaNarrator({ host: fake.url, env: {} }), { model: 'llama3.2', autoMemories: false });
    const adventure = play.createAdventure({ campaignId: campaign.id, title: 'Fog', persona: KAELEN });
    const action = { kind: 'do' as const, text: 'ask Sister Mara about her ledger of patients' };
    const outcome = await engine.takeTurn(adventure.id, action);
    assert.equal(outcome.error, null);
    const snapshot = play.getSnapshot(outcome.turn.id)!;
    const canon = snapshot.sections.find((s) => s.id === 'canon')!;
    assert.match(canon.text, /⟦passage \S+ · characters\/mara\.md · Sister Mara/);
    assert.match(canon.text, /keeps a ledger of every patient who died in her care/);
    assert.match(snapshot.messages[0]!.content, /Resurrection is impossible/, 'always-include canon in the prefix');
    assert.ok(play.turnsUsingPassage(canon.itemIds[0]!).includes(outcome.turn.id));

    fs.rmSync(path.join(dir, 'characters', 'mara.md'));
    await importCampaign(campaign, index);
    const preview = await engine.previewContext(adventure.id, action, null);
    assert.doesNotMatch(JSON.stringify(preview.sections), /keeps a ledger of every patient/);
    assert.deepEqual(play.getSnapshot(outcome.turn.id), snapshot, 'the old turn still shows what it was given');
  });

  it('marks hidden canon as narrator-only secret and names it in the cast without its secret', async () => {
    const knowledge = indexKnowledge(index);
    const engine = new StoryEngine(play, knowledge, null, { model: 'llama3.2' });
    const adventure = play.createAdventure({ campaignId: campaign.id, title: 'Fog' });
    const context = await engine.previewContext(adventure.id, { kind: 'do', text: 'watch Brother Aldric draw the broken circle' });
    assert.match(context.sections.find((s) => s.id === 'canon')!.text, /⟦SECRET passage \S+ · narrator-only · characters\/brother-aldric\.md/);
    const cast = await knowledge.cast();
    const aldric = cast.find((c) => c.name === 'Brother Aldric')!;
    assert.equal(aldric.hidden, true);
    assert.equal(aldric.kind, 'character');
    assert.ok(cast.some((c) => c.name === 'The Old Abbey' && c.kind === 'place'));
    const [, user] = await engine.memoryPrompt(adventure, [outcomeTurn('Aldric smiles at you.')]);
    assert.match(user!.content, /^- Brother Aldric$/m);
    assert.doesNotMatch(user!.content, /draws the broken circle/);
  });

  describe('canon the story has superseded in play', () => {
    const BRIDGE = '---\ntitle: The Old Bridge\nentities: [Old Bridge, the bridge]\n---\n# The Old Bridge\n\n- **Status:** standing\n- **Length:** forty yards\n\nThe old bridge spans the river below the abbey.\n';
    const bridgeState = { world: { bridge: { initial: 'standing', options: ['standing', 'destroyed'] } } };
    const canonOf = (sections: readonly { id: string; text: string }[]) => sections.find((s) => s.id === 'canon')!.text;

    beforeEach(async () => {
      fs.writeFileSync(path.join(dir, 'places', 'bridge.md'), BRIDGE);
      await importCampaign(campaign, index);
    });

    it('sends the next turn the bridge as destroyed, with the stale line marked superseded and the reason recorded', async () => {
      const engine = new StoryEngine(play, indexKnowledge(index), new OllamaNarrator({ host: fake.url, env: {} }), { model: 'llama3.2', autoMemories: false });
      const adventure = play.createAdventure({ campaignId: campaign.id, title: 'Siege', persona: KAELEN, statSchema: bridgeState });
      fake.queue({ chunks: ['The charges go off and the old bridge falls into the river.\n```json\n{"world.bridge": "destroyed"}\n```'] });
      const first = await engine.takeTurn(adventure.id, { kind: 'do', text: 'blow up the old bridge' });
      assert.equal(first.error, null);
      assert.equal(first.turn.stateAfter['world.bridge'], 'destroyed');
      const before = play.getSnapshot(first.turn.id)!;
      assert.match(canonOf(before.sections), /- Status: standing/, 'canon that agrees with the state is sent as written');
      assert.deepEqual(before.retrieval.superseded ?? [], []);

      fake.queue({ chunks: ['Smoke drifts over the broken piers.'] });
      const second = await engine.takeTurn(adventure.id, { kind: 'do', text: 'look down at the old bridge' });
      assert.equal(second.error, null);
      const after = play.getSnapshot(second.turn.id)!;
      const canon = canonOf(after.sections);
      assert.match(canon, /⟦passage \S+ · places\/bridge\.md · The Old Bridge/);
      assert.doesNotMatch(canon, /standing/, 'the prompt does not assert the bridge still stands');
      assert.match(canon, /- Status: superseded in play — now destroyed\n- Length: forty yards/);
      assert.ok(after.messages[1]!.content.includes('- Status: superseded in play — now destroyed'), 'what the model was sent');
      const [line] = after.retrieval.superseded!;
      assert.deepEqual([after.retrieval.superseded!.length, line!.sourcePath, line!.line, line!.canonValue, line!.currentValue, line!.statePath], [1, 'places/bridge.md', 7, 'standing', 'destroyed', 'world.bridge']);
      assert.equal(line!.reason, 'The Old Bridge — Status: canon "standing" (places/bridge.md:7) superseded in play: world.bridge = destroyed');
      assert.deepEqual(after.sections.find((s) => s.id === 'canon')!.superseded, [{ id: line!.passageId, reason: line!.reason }]);
      const decision = after.retrieval.candidates.find((c) => c.passageId === line!.passageId)!;
      assert.match(decision.reason, /superseded in play: world\.bridge = destroyed$/, 'Turn Provenance shows why');
      assert.equal(after.messages[0]!.content, before.messages[0]!.content, 'the cacheable prefix did not move');

      const other = play.createAdventure({ campaignId: campaign.id, title: 'Crossing', persona: KAELEN, statSchema: bridgeState });
      const elsewhere = await engine.previewContext(other.id, { kind: 'do', text: 'look down at the old bridge' });
      assert.match(canonOf(elsewhere.sections), /- Status: standing/, 'an adventure where the bridge stands gets the canon as written');
      const noState = play.createAdventure({ campaignId: campaign.id, title: 'Stateless', persona: KAELEN });
      assert.match(canonOf((await engine.previewContext(noState.id, { kind: 'do', text: 'look down at the old bridge' })).sections), /- Status: standing/);
    });

    it('always-included canon: the cacheable prefix changes once, when play supersedes it, then stays byte-identical', async () => {
      fs.writeFileSync(path.join(dir, 'places', 'bridge.md'), BRIDGE.replace('title: The Old Bridge\n', 'title: The Old Bridge\nalways_include: true\n'));
      await importCampaign(campaign, index);
      const engine = new StoryEngine(play, indexKnowledge(index), new OllamaNarrator({ host: fake.url, env: {} }), { model: 'llama3.2', autoMemories: false });
      const adventure = play.createAdventure({ campaignId: campaign.id, title: 'Siege', persona: KAELEN, statSchema: { ...bridgeState, player: { hp: { initial: 10, min: 0, max: 10 } } } });
      const prefixes: string[] = [];
      for (const reply of ['The bridge falls.\n```json\n{"world.bridge": "destroyed"}\n```', 'You are cut.\n```json\n{"player.hp": -2}\n```', 'You rest.']) {
        fake.queue({ chunks: [reply] });
        const outcome = await engine.takeTurn(adventure.id, { kind: 'do', text: 'wait by the river' });
        assert.equal(outcome.error, null);
        prefixes.push(play.getSnapshot(outcome.turn.id)!.messages[0]!.content);
      }
      assert.match(prefixes[0]!, /- Status: standing/, 'sent before the bridge fell');
      assert.doesNotMatch(prefixes[1]!, /Status: standing/);
      assert.match(prefixes[1]!, /- Status: superseded in play — now destroyed/);
      assert.equal(prefixes[2], prefixes[1], 'a state change that supersedes nothing new leaves the prefix byte-identical');
    });
  });
});

function outcomeTurn(narration: string) {
  return storedTurn({ id: 't', narration });
}
