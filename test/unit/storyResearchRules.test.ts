import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { searchKnowledge } from '../../src/knowledge/retrieval';
import { OpenAICompatibleNarrator, OpenAIToolChat, resolveBackend } from '../../src/models';
import { StoryEngine, type EngineSettings } from '../../src/story/engine';
import { indexKnowledge } from '../../src/story/indexKnowledge';
import { PlayStore } from '../../src/story/playStore';
import { FakeOpenAI } from '../support/fakeOpenAI';

/** A small imported book: two entries fire on this turn's keys, one is pinned, one page is found only by its words. */
const BOOK: Record<string, string> = {
  'lore/inn.md': '---\ntitle: The Crooked Inn\nkeys: [inn, tavern]\nsillytavern:\n  entry: { order: 100, position: 1 }\n---\nThe Crooked Inn leans over the river road.\n',
  'lore/river.md': '---\ntitle: The River Road\nkeys: [river road]\nsillytavern:\n  entry: { order: 150, position: 1 }\n---\nThe river road runs north to the ferry.\n',
  'lore/world.md': '---\ntitle: The World\nalways_include: true\nsillytavern:\n  entry: { constant: true, order: 10 }\n---\nThe river kingdoms have no king.\n',
  'notes/ferryman.md': '---\ntitle: Ferry customs\n---\nThe ferryman takes a copper for every crossing of the river and sings while he poles.\n',
};
const ACTION = 'I step into the inn off the river road and ask about the ferry crossing.';
const FIRED = ['The Crooked Inn leans over the river road.', 'The river road runs north to the ferry.'];
const PINNED = 'The river kingdoms have no king.';
const call = (name: string, args: unknown) => ({ name, arguments: JSON.stringify(args) });

describe("research adds to the writer's rules, never replaces them", () => {
  let dir: string;
  let index: KnowledgeStore;
  let play: PlayStore;
  let fake: FakeOpenAI;
  const model = 'qwen2.5-7b-instruct';

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-research-rules-'));
    fs.writeFileSync(path.join(dir, 'campaign.yaml'), 'id: ferry\ntitle: Ferry\ndefault_class: canon\n');
    for (const [file, text] of Object.entries(BOOK)) {
      fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      fs.writeFileSync(path.join(dir, file), text);
    }
    const campaign = loadCampaign(dir);
    index = KnowledgeStore.open(campaign);
    await importCampaign(campaign, index);
    play = new PlayStore(campaign.playPath);
    fake = await FakeOpenAI.start();
  });
  afterEach(async () => {
    await fake.close();
    play.close();
    index.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const engine = (settings: Partial<EngineSettings>) => {
    const backend = resolveBackend('openai-compatible', fake.baseUrl);
    return new StoryEngine(play, indexKnowledge(index), new OpenAICompatibleNarrator({ backend }), { model, autoMemories: false, ...settings }, new OpenAIToolChat(backend));
  };
  /** What the narrator was sent on the last turn: the last chat request that offered no tools. */
  const narratorRequest = () => JSON.stringify(fake.requestsTo('/v1/chat/completions').filter((r) => (r.body as { tools?: unknown }).tools === undefined).at(-1)!.body);
  const newAdventure = () => play.createAdventure({ campaignId: 'ferry', title: 'Crossing', persona: { name: 'Wren', pronouns: 'she/her', description: 'A courier.' }, statSchema: {} }).id;

  it('fired World Info and pins reach the narrator with research on, as with it off, when the model keeps nothing', async () => {
    fake.queue({ chunks: ['The inn is warm.'] });
    const off = await engine({ research: 'off' }).takeTurn(newAdventure(), { kind: 'do', text: ACTION });
    assert.equal(off.error, null);
    const offRequest = narratorRequest();
    for (const text of [...FIRED, PINNED]) assert.ok(offRequest.includes(text), `research off sends ${text}`);

    fake.queue({ toolCalls: [call('finish', { keep: [], reason: 'nothing here is needed' })] }, { chunks: ['The inn is warm.'] });
    const on = await engine({ research: 'on' }).takeTurn(newAdventure(), { kind: 'do', text: ACTION });
    assert.equal(on.error, null);
    assert.equal(on.context!.research!.ran, 'native');
    const onRequest = narratorRequest();
    for (const text of [...FIRED, PINNED]) assert.ok(onRequest.includes(text), `research on still sends ${text}`);
    const fired = on.context!.retrieval.candidates.filter((c) => /^World Info/.test(c.reason));
    assert.ok(fired.length >= 2 && fired.every((c) => c.outcome === 'selected'), 'the record keeps them selected by World Info, never "not kept by research"');
    assert.ok(!on.context!.retrieval.candidates.some((c) => c.sourcePath.startsWith('lore/') && /not kept by research/.test(c.reason)));
    // The researcher is told they are sent, and is not offered them to keep.
    const asked = JSON.stringify(fake.requestsTo('/v1/chat/completions').find((r) => (r.body as { tools?: unknown }).tools !== undefined)!.body);
    assert.match(asked, /3 passages the writer's rules place/);
  });

  it('what the model keeps is added beside the fired entries and the pin', async () => {
    const ferry = (await searchKnowledge(index, 'ferryman copper crossing')).hits.find((h) => h.sourcePath === 'notes/ferryman.md')!.passageId;
    fake.queue(
      { toolCalls: [call('search', { query: 'ferryman copper crossing' })] },
      { toolCalls: [call('finish', { keep: [ferry], reason: 'the crossing costs a copper' })] },
      { chunks: ['The ferryman waves.'] },
    );
    const on = await engine({ research: 'on' }).takeTurn(newAdventure(), { kind: 'do', text: ACTION });
    assert.equal(on.error, null);
    assert.deepEqual(on.context!.research!.kept.map((k) => k.id), [ferry]);
    const request = narratorRequest();
    for (const text of [...FIRED, PINNED, 'The ferryman takes a copper']) assert.ok(request.includes(text), `the narrator gets ${text}`);
  });
});
