import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCampaign, type Campaign } from '../../src/knowledge/campaign';
import { importCampaign } from '../../src/knowledge/importer';
import { KnowledgeStore } from '../../src/knowledge/store';
import { StoryEngine } from '../../src/story/engine';
import { indexKnowledge } from '../../src/story/indexKnowledge';
import { OllamaNarrator } from '../../src/story/narrator';
import { PlayStore } from '../../src/story/playStore';
import { EXAMPLE_CAMPAIGN } from '../support/corpora';
import { FakeOllama } from '../support/fakeOllama';
import { KAELEN } from './storySupport';

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
});

function outcomeTurn(narration: string) {
  return {
    id: 't',
    adventureId: 'a',
    parentId: null,
    depth: 0,
    action: { kind: 'do' as const, text: 'greet Aldric' },
    narration,
    status: 'complete' as const,
    error: null,
    model: null,
    stateDelta: null,
    stateAfter: {},
    refusals: [],
    promptEvalCount: null,
    evalCount: null,
    createdAt: '',
    updatedAt: '',
  };
}
