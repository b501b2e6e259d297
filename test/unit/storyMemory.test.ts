import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { castFromSchema } from '../../src/story/cast';
import { StoryEngine } from '../../src/story/engine';
import { buildMemoryPrompt, rankMemories } from '../../src/story/memory';
import { OllamaNarrator } from '../../src/models/narrator';
import { PlayStore } from '../../src/story/playStore';
import type { ChatMessage, Turn } from '../../src/story/types';
import { parseStatSchema } from '../../src/story/worldState';
import { FakeOllama } from '../support/fakeOllama';
import { IndexedExampleCampaign } from '../support/knowledgeFixtures';
import { KAELEN, STAT_SCHEMA } from './storySupport';

const turn = (depth: number, action: string, narration: string): Turn => ({
  id: `t${depth}`,
  adventureId: 'a',
  parentId: depth === 0 ? null : `t${depth - 1}`,
  depth,
  action: { kind: 'do', text: action },
  narration,
  status: 'complete',
  error: null,
  model: 'm',
  stateDelta: null,
  stateAfter: {},
  refusals: [],
  promptEvalCount: null,
  evalCount: null,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
});

describe('story memory bank', () => {
  let knowledge: IndexedExampleCampaign;
  before(async () => (knowledge = await IndexedExampleCampaign.open()));
  after(() => knowledge.dispose());

  it('tells the summarizer who everyone is: protagonist, matched cast first, topped-up characters, setting', async () => {
    const cast = [...castFromSchema(parseStatSchema(STAT_SCHEMA)), ...(await knowledge.port.cast())];
    const [system, user] = buildMemoryPrompt({
      persona: KAELEN,
      cast,
      setting: 'Kaelen has come to Westhaven to learn who marks the doors.',
      block: [turn(0, 'push the door of the Old Abbey open', 'She grabs your arm.'), turn(1, 'shake her off', 'She lets go, hurt.')],
    }) as [ChatMessage, ChatMessage];
    assert.match(system.content, /third person, never "you"/);
    assert.match(system.content, /Refer to the protagonist by name, as Kaelen \(he\/him\)/);
    assert.match(system.content, /at most 50 words, in past tense/);
    assert.match(system.content, /Name characters rather than using bare pronouns/);
    const lines = user.content.split('\n');
    assert.equal(lines[0], 'Cast:');
    assert.equal(lines[1], '- Kaelen (he/him) — the protagonist. A half-elf ranger, exiled from the northern holds.');
    assert.match(lines[2]!, /^- The Old Abbey — The Old Abbey stands on a hill/, 'a place the block mentions comes first');
    assert.ok(lines.includes('- Brother Aldric'), 'a hidden character is named, its secret left out');
    assert.ok(lines.some((l) => /^- Sister Mara — Keeper of the infirmary\./.test(l)), 'an unmentioned character tops up the roster');
    assert.equal(lines.filter((l) => l.startsWith('- Sister Mara')).length, 1, 'the schema NPC and the canon note are one entry');
    assert.doesNotMatch(user.content, /draws the broken circle/);
    assert.doesNotMatch(user.content, /trust/, 'no live stats in the brief');
    assert.match(user.content, /\n\nSetting:\nKaelen has come to Westhaven to learn who marks the doors\.\n\nStory excerpt:\n\nPlayer action: push the door of the Old Abbey open\nShe grabs your arm\.\n\nPlayer action: shake her off\nShe lets go, hurt\.\n\nMemory:$/);
  });

  it('adds nothing when there is no persona, cast or setting', () => {
    const [system, user] = buildMemoryPrompt({ persona: { name: '', pronouns: '', description: '' }, cast: [], setting: '', block: [turn(0, 'wait', 'Rain.')] });
    assert.match(system!.content, /Refer to the protagonist as "the player"/);
    assert.equal(user!.content, 'Story excerpt:\n\nPlayer action: wait\nRain.\n\nMemory:');
  });

  it('ranks pinned memories first, then by shared words, and offers nothing unrelated', () => {
    const base = { adventureId: 'a', anchorTurnId: null, sourceStart: null, sourceEnd: null, retrievedCount: 0, createdAt: '', updatedAt: '' };
    const pinned = { ...base, id: 'p', text: 'Kaelen owes Mara a favour.', pinned: true };
    const crypt = { ...base, id: 'c', text: 'Kaelen found the bronze crypt door locked.', pinned: false };
    const salt = { ...base, id: 's', text: 'The river salt trade has failed.', pinned: false };
    assert.deepEqual(rankMemories([salt, crypt, pinned], 'open the crypt door', 5).map((m) => m.id), ['p', 'c']);
  });

  describe('in play', () => {
    let dir: string;
    let store: PlayStore;
    let fake: FakeOllama;
    let engine: StoryEngine;
    let adventureId: string;
    const sent = (i: number) => (fake.requestsTo('/api/chat')[i]!.body as { messages: ChatMessage[] }).messages;

    beforeEach(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-memory-'));
      store = new PlayStore(path.join(dir, 'play.db'));
      fake = await FakeOllama.start();
      engine = new StoryEngine(store, knowledge.port, new OllamaNarrator({ host: fake.url, env: {} }), { model: 'llama3.2', memoryEvery: 2 });
      adventureId = store.createAdventure({ campaignId: 'westhaven', title: 'Fog', persona: KAELEN, plotEssentials: 'Westhaven, under fog.', statSchema: STAT_SCHEMA }).id;
    });
    afterEach(async () => {
      await fake.close();
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it('writes a memory every N actions on its lineage, builds the summary on it, and never leaks it to another branch', async () => {
      fake.queue(
        { chunks: ['She grabs your arm at the door.'] },
        { chunks: ['Mara leads you down the crypt stair.'] },
        { chunks: ['Memory: Kaelen followed Sister Mara down the crypt stair beneath the Old Abbey.'] },
        { chunks: ['Kaelen entered the Old Abbey and went down to the crypt with Sister Mara.'] },
      );
      await engine.takeTurn(adventureId, { kind: 'do', text: 'enter the Abbey' });
      const second = await engine.takeTurn(adventureId, { kind: 'do', text: 'follow her' });
      assert.equal(second.memoryError, null);
      assert.equal(second.memories.length, 1);
      const memory = second.memories[0]!;
      assert.equal(memory.text, 'Kaelen followed Sister Mara down the crypt stair beneath the Old Abbey.');
      assert.deepEqual([memory.anchorTurnId, memory.sourceStart, memory.sourceEnd], [second.turn.id, 0, 1]);
      const memoryPrompt = sent(2);
      assert.deepEqual(memoryPrompt, await engine.memoryPrompt(store.adventure(adventureId), store.lineage(second.turn.id)), 'one prompt assembly');
      assert.match(sent(3)[1]!.content, /Memories, oldest first:\n- Kaelen followed Sister Mara/);

      fake.queue({ chunks: ['The crypt is cold.'] });
      const third = await engine.takeTurn(adventureId, { kind: 'do', text: 'search the crypt stair' });
      const sections = third.context!.sections;
      assert.deepEqual(sections.find((s) => s.id === 'memories')!.itemIds, [memory.id]);
      assert.match(sections.find((s) => s.id === 'story-summary')!.text, /went down to the crypt with Sister Mara/);
      assert.equal(store.memory(memory.id).retrievedCount, 1);

      // A new branch from the very start: the memory and the summary belong to the other lineage.
      engine.undo(adventureId);
      engine.undo(adventureId);
      engine.undo(adventureId);
      fake.queue({ chunks: ['The north road is empty.'] }, { chunks: ['Nothing stirs on the crypt stair.'] });
      await engine.takeTurn(adventureId, { kind: 'do', text: 'walk the north road' });
      const other = await engine.takeTurn(adventureId, { kind: 'do', text: 'search the crypt stair' });
      assert.ok(!other.context!.sections.some((s) => s.id === 'memories' || s.id === 'story-summary'));
      assert.doesNotMatch(JSON.stringify(sent(6)), /followed Sister Mara/);
    });

    it('rewrites a memory in place from the block on its own lineage, keeping its pin', async () => {
      fake.queue({ chunks: ['Gwen waits.'] }, { chunks: ['She nods.'] }, { chunks: ['You and she waited.'] }, { chunks: ['Summary.'] });
      await engine.takeTurn(adventureId, { kind: 'do', text: 'wait with Gwen' });
      const { memories } = await engine.takeTurn(adventureId, { kind: 'say', text: 'Ready?' });
      const memory = store.setMemoryPinned(memories[0]!.id, true);
      // Play on elsewhere so the current branch differs from the memory's.
      engine.undo(adventureId);
      fake.queue({ chunks: ['A different answer.'] });
      await engine.takeTurn(adventureId, { kind: 'say', text: 'Now?' });

      fake.queue({ chunks: ['Kaelen waited beside Gwen, and she nodded when he asked if she was ready.'] });
      const rewritten = await engine.rewriteMemory(memory.id);
      assert.equal(rewritten.id, memory.id);
      assert.equal(rewritten.pinned, true);
      assert.equal(rewritten.text, 'Kaelen waited beside Gwen, and she nodded when he asked if she was ready.');
      const prompt = fake.requestsTo('/api/chat').at(-1)!.body as { messages: ChatMessage[] };
      assert.match(prompt.messages[1]!.content, /Ready\?[\s\S]*She nods\./);
      assert.doesNotMatch(prompt.messages[1]!.content, /A different answer/);

      const typed = store.addMemory({ adventureId, anchorTurnId: null, sourceStart: null, sourceEnd: null, text: 'Kaelen hates bells.' });
      await assert.rejects(engine.rewriteMemory(typed.id), /no source block to rewrite from/);
    });
  });
});
