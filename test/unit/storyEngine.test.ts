import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StoryEngine, type EngineSettings } from '../../src/story/engine';
import { NarratorError, OllamaNarrator } from '../../src/models/narrator';
import { INTERRUPTED_MESSAGE, PlayStore } from '../../src/story/playStore';
import type { ChatMessage } from '../../src/story/types';
import { turnsLeftByCrash } from '../support/crashedPlay';
import { FakeOllama, unusedLoopbackUrl } from '../support/fakeOllama';
import { IndexedExampleCampaign } from '../support/knowledgeFixtures';
import { KAELEN, STAT_SCHEMA } from './storySupport';

const kindOf = (error: Error | null) => (error instanceof NarratorError ? error.kind : error?.message);

describe('story engine over a real HTTP Ollama stand-in', () => {
  let dir: string;
  let store: PlayStore;
  let fake: FakeOllama;
  let knowledge: IndexedExampleCampaign;
  let adventureId: string;

  const engineFor = (settings: Partial<EngineSettings> = {}, host = fake.url, idleTimeoutMs?: number) =>
    new StoryEngine(store, knowledge.port, new OllamaNarrator({ host, env: {}, ...(idleTimeoutMs ? { idleTimeoutMs } : {}) }), {
      model: 'llama3.2',
      autoMemories: false,
      ...settings,
    });
  const sentMessages = (i: number) => (fake.requestsTo('/api/chat')[i]!.body as { messages: ChatMessage[] }).messages;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-engine-'));
    store = new PlayStore(path.join(dir, 'play.db'));
    fake = await FakeOllama.start({ chatModels: ['llama3.2'], contextLength: 8192 });
    knowledge = await IndexedExampleCampaign.open();
    adventureId = store.createAdventure({ campaignId: 'westhaven', title: 'Fog', persona: KAELEN, statSchema: STAT_SCHEMA }).id;
  });
  afterEach(async () => {
    await fake.close();
    knowledge.dispose();
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('plays a full turn: action stored, snapshot frozen before generation, reply streamed, state applied', async () => {
    const engine = engineFor();
    fake.queue({ chunks: ['Mara unlocks ', 'the bronze door.', '\n```json\n{"player.hp": -15, "milestones.crypt_opened": true,}\n```'], promptEvalCount: 900, evalCount: 40 });
    const streamed: string[] = [];
    let seenAtStart: { status: string; snapshot: boolean } | undefined;
    const outcome = await engine.takeTurn(adventureId, { kind: 'do', text: 'ask Mara to open the crypt door' }, {
      onChunk: (t) => streamed.push(t),
      onStarted: (turn) => (seenAtStart = { status: store.turn(turn.id).status, snapshot: store.getSnapshot(turn.id) !== undefined }),
    });
    assert.deepEqual(seenAtStart, { status: 'streaming', snapshot: true });
    assert.equal(outcome.error, null);
    assert.equal(streamed.join(''), 'Mara unlocks the bronze door.\n', 'the state block never reaches the screen');
    const turn = store.turn(outcome.turn.id);
    assert.equal(turn.status, 'complete');
    assert.equal(turn.narration, 'Mara unlocks the bronze door.');
    assert.equal(turn.stateAfter['player.hp'], 85);
    assert.equal(turn.stateAfter['milestones.crypt_opened'], true);
    assert.equal(turn.promptEvalCount, 900);
    assert.equal(store.adventure(adventureId).headTurnId, turn.id);
    const snapshot = store.getSnapshot(turn.id)!;
    assert.deepEqual(snapshot.messages, sentMessages(0), 'the snapshot is exactly what was sent');
    assert.ok(snapshot.sections.find((s) => s.id === 'canon')!.text.includes('Mara holds the only key'));
    assert.equal((fake.requestsTo('/api/chat')[0]!.body as { options: { num_ctx: number } }).options.num_ctx, 8192);
    assert.ok(store.turnsUsingPassage(snapshot.sections.find((s) => s.id === 'canon')!.itemIds[0]!).includes(turn.id));
    assert.notEqual(engine.estimator().calibration.factor, 1, 'prompt_eval_count calibrated the estimate');
    assert.throws(() => store.writeSnapshot(turn.id, outcome.context!, 'llama3.2'), /UNIQUE/, 'a snapshot is written once');
  });

  it('refuses a model attempt to rename the persona and feeds the refusal back next turn', async () => {
    const engine = engineFor();
    fake.queue({ chunks: ['You are now Bob.\n```json\n{"persona.name": "Bob", "milestones.crypt_opened": false}\n```'] });
    const first = await engine.takeTurn(adventureId, { kind: 'do', text: 'look around' });
    assert.deepEqual(first.turn.refusals, ['persona.name is not a tracked value', 'milestones.crypt_opened: a milestone is sticky, so only true is accepted']);
    assert.equal(store.adventure(adventureId).persona.name, 'Kaelen');
    fake.queue({ chunks: ['The fog thins.'] });
    await engine.takeTurn(adventureId, { kind: 'do', text: 'wait' });
    const user = sentMessages(1)[1]!.content;
    assert.match(user, /Refused state changes\n.*\n- persona\.name is not a tracked value\n- milestones\.crypt_opened: a milestone is sticky/);
    assert.match(sentMessages(1)[0]!.content, /You are Kaelen \(he\/him\)/);
    assert.equal(sentMessages(1)[0]!.content, sentMessages(0)[0]!.content, 'the cacheable prefix is byte-identical across turns');
    fake.queue({ chunks: ['Quiet.'] });
    await engine.takeTurn(adventureId, { kind: 'do', text: 'wait again' });
    assert.doesNotMatch(sentMessages(2)[1]!.content, /Refused state changes/, 'a refusal is fed back once');
  });

  it('failed attempts are kept only until one succeeds: the success deletes them, and restore brings them back', async () => {
    const engine = engineFor();
    fake.queue({ chunks: ['The gate creaks.'] });
    const first = (await engine.takeTurn(adventureId, { kind: 'do', text: 'open the gate' })).turn;
    for (let i = 0; i < 5; i++) fake.queue({ status: 500, error: 'the model failed to generate a response' });
    const failures = [];
    failures.push(await engine.takeTurn(adventureId, { kind: 'do', text: 'ring the bell' }));
    for (let i = 0; i < 4; i++) failures.push(await engine.retry(adventureId));
    assert.ok(failures.every((f) => f.turn.status === 'error' && f.turn.narration === ''), 'five server errors');
    // A different action that also failed is the writer's typed text: it stays.
    fake.queue({ status: 500, error: 'the model failed to generate a response' });
    const other = (await engine.takeTurn(adventureId, { kind: 'do', text: 'shout for help' })).turn;
    assert.equal(store.children(adventureId, first.id).length, 6, 'six failed attempts, side by side');
    fake.queue({ chunks: ['The bell tolls.'] });
    const success = await engine.retry(adventureId, failures[0]!.turn.id);
    assert.equal(success.turn.status, 'complete');
    assert.equal(success.replacedFailures.length, 5);
    assert.deepEqual(store.children(adventureId, first.id).map((t) => t.id), [other.id, success.turn.id], 'only the success and the other action are left');
    for (const deleted of success.replacedFailures) store.restore(deleted);
    assert.equal(store.children(adventureId, first.id).length, 7, 'Undo puts every failed attempt back');
    assert.equal(store.adventure(adventureId).headTurnId, success.turn.id, 'the head stays on the success');
  });

  it('deletes a reply with everything after it, moving the head beside it, and restores it exactly; redo takes an undo back', async () => {
    const engine = engineFor();
    fake.queue({ chunks: ['A1.'] }, { chunks: ['A2.'] }, { chunks: ['A2 again.'] }, { chunks: ['A3.'] });
    const a1 = (await engine.takeTurn(adventureId, { kind: 'do', text: 'enter' })).turn;
    const a2 = (await engine.takeTurn(adventureId, { kind: 'do', text: 'look' })).turn;
    const swipe = (await engine.retry(adventureId)).turn;
    const a3 = (await engine.takeTurn(adventureId, { kind: 'do', text: 'listen' })).turn;
    const before = store.allTurns(adventureId);
    const deleted = store.deleteBranch(swipe.id);
    assert.deepEqual(deleted.turns.map((t) => t.id).sort(), [swipe.id, a3.id].sort());
    assert.deepEqual(store.allTurns(adventureId).map((t) => t.id), [a1.id, a2.id]);
    assert.equal(store.adventure(adventureId).headTurnId, a2.id, 'the head moves to the other reply');
    assert.equal(store.getSnapshot(a3.id), undefined);
    store.restore(deleted);
    assert.deepEqual(store.allTurns(adventureId), before, 'every turn back as it was');
    assert.equal(store.adventure(adventureId).headTurnId, a3.id);
    assert.ok(store.getSnapshot(a3.id), 'with its prompt snapshot');
    assert.equal(engine.undo(adventureId)!.id, swipe.id);
    assert.equal(engine.redo(adventureId, a3.id).id, a3.id);
    assert.equal(store.adventure(adventureId).headTurnId, a3.id);
    engine.undo(adventureId);
    engine.undo(adventureId);
    assert.throws(() => engine.redo(adventureId, a3.id), /turn 3 cannot be redone: the story has moved since it was undone/);
  });

  it('keeps branches apart: retry, undo, fork and edit each see only their own lineage and state', async () => {
    const engine = engineFor();
    fake.queue({ chunks: ['A1 narration.'] }, { chunks: ['A2 narration.\n```json\n{"player.hp": -50}\n```'] });
    const a1 = (await engine.takeTurn(adventureId, { kind: 'do', text: 'enter the Abbey' })).turn;
    const a2 = (await engine.takeTurn(adventureId, { kind: 'do', text: 'fight the shadow' })).turn;
    assert.equal(a2.stateAfter['player.hp'], 50);

    fake.queue({ chunks: ['A2 retried.'] });
    const retried = (await engine.retry(adventureId)).turn;
    assert.equal(retried.parentId, a1.id);
    assert.deepEqual(retried.action, a2.action);
    assert.equal(retried.stateAfter['player.hp'], 100, 'a retry starts from the parent state');
    assert.deepEqual(store.children(adventureId, a1.id).map((t) => t.id), [a2.id, retried.id]);

    assert.equal(engine.undo(adventureId)!.id, a1.id);
    fake.queue({ chunks: ['B2 narration.'] });
    const b2 = (await engine.takeTurn(adventureId, { kind: 'say', text: 'Is anyone here?' })).turn;
    assert.equal(b2.parentId, a1.id);
    fake.queue({ chunks: ['B3 narration.'] });
    await engine.takeTurn(adventureId, { kind: 'do', text: 'listen' });
    const b3Prompt = sentMessages(4)[1]!.content;
    assert.match(b3Prompt, /B2 narration\./);
    assert.doesNotMatch(b3Prompt, /A2 narration|A2 retried/);
    assert.match(b3Prompt, /Kaelen \(player\): hp 100\/100/);

    engine.fork(adventureId, a2.id);
    fake.queue({ chunks: ['A3 narration.'] });
    const a3 = (await engine.takeTurn(adventureId, { kind: 'do', text: 'run' })).turn;
    assert.deepEqual(store.lineage(a3.id).map((t) => t.id), [a1.id, a2.id, a3.id]);
    assert.match(sentMessages(5)[1]!.content, /Kaelen \(player\): hp 50\/100[\s\S]*A2 narration\./);
    assert.doesNotMatch(sentMessages(5)[1]!.content, /B2 narration/);

    fake.queue({ chunks: ['Edited.'] });
    const edited = (await engine.editAction(adventureId, a3.id, 'walk slowly')).turn;
    assert.equal(edited.parentId, a2.id);
    assert.equal(edited.action.text, 'walk slowly');
    assert.equal(store.turn(a3.id).action.text, 'run', 'the original action is kept');
  });

  it('reads the world state after any turn, the head by default, following a schema that grew since', async () => {
    const engine = engineFor();
    fake.queue({ chunks: ['Mara frowns.\n```json\n{"player.hp": -20, "npc.mara.trust": 5}\n```'] }, { chunks: ['Nothing changes.'] });
    assert.equal(engine.stateAfter(adventureId)['player.hp'], 100, 'before the first turn: the initial state');
    const first = (await engine.takeTurn(adventureId, { kind: 'do', text: 'argue with Mara' })).turn;
    await engine.takeTurn(adventureId, { kind: 'do', text: 'wait' });
    assert.equal(engine.stateAfter(adventureId)['player.hp'], 80, 'the head carries the state forward');
    assert.equal(engine.stateAfter(adventureId, first.id)['npc.mara.trust'], 45);
    assert.equal(engine.stateAfter(adventureId, null)['player.hp'], 100);
    store.updateAdventure(adventureId, { statSchema: { ...STAT_SCHEMA, world: { ...STAT_SCHEMA.world, day: { initial: 1 } } } });
    assert.equal(engine.stateAfter(adventureId)['world.day'], 1, 'a value added to the schema starts at its initial');
    assert.equal(engine.stateAfter(adventureId)['player.hp'], 80);
    const other = store.createAdventure({ campaignId: 'westhaven', title: 'Elsewhere', statSchema: STAT_SCHEMA }).id;
    assert.throws(() => engine.stateAfter(other, first.id), /belongs to another adventure/);
    await assert.rejects(engine.editAction(other, first.id, 'steal the action'), /belongs to another adventure/);
    assert.equal(store.allTurns(other).length, 0, 'no turn was seeded from another adventure');
  });

  it('names the missing model and the ollama pull to run, keeping the action', async () => {
    const engine = engineFor({ model: 'mistral-nemo' });
    const outcome = await engine.takeTurn(adventureId, { kind: 'do', text: 'open the door' });
    assert.equal(kindOf(outcome.error), 'model-missing');
    assert.match(outcome.error!.message, /`ollama pull mistral-nemo`/);
    assert.equal(outcome.turn.status, 'error');
    assert.equal(store.turn(outcome.turn.id).action.text, 'open the door');
  });

  it('says the server is down, and the next action replaces the failed turn, which goes once it succeeds', async () => {
    const engine = engineFor({}, await unusedLoopbackUrl());
    const outcome = await engine.takeTurn(adventureId, { kind: 'do', text: 'open the door' });
    assert.equal(kindOf(outcome.error), 'server-down');
    assert.match(outcome.error!.message, /cannot reach Ollama at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
    assert.equal(outcome.turn.status, 'error');
    const working = engineFor();
    const next = await working.takeTurn(adventureId, { kind: 'do', text: 'open the door' });
    assert.equal(next.turn.parentId, null);
    assert.deepEqual(next.replacedFailures.map((d) => d.turns.map((t) => t.id)), [[outcome.turn.id]]);
    assert.deepEqual(store.children(adventureId, null).map((t) => t.id), [next.turn.id], 'the failed attempt does not pile up');
  });

  it('keeps a reply cut by an error mid-stream, marked incomplete, without applying its state', async () => {
    const engine = engineFor();
    fake.queue({ chunks: ['The door ', 'groans ', 'open.\n```json\n{"player.hp": -5}\n```'], errorAfterChunks: { after: 2, message: 'an error was encountered while running the model' } });
    const outcome = await engine.takeTurn(adventureId, { kind: 'do', text: 'push' });
    assert.equal(kindOf(outcome.error), 'mid-stream');
    assert.match(outcome.error!.message, /an error was encountered while running the model/);
    const turn = store.turn(outcome.turn.id);
    assert.equal(turn.status, 'incomplete');
    assert.equal(turn.narration, 'The door groans');
    assert.equal(turn.stateAfter['player.hp'], 100);
    fake.queue({ chunks: ['Next.'] });
    await engine.takeTurn(adventureId, { kind: 'do', text: 'go on' });
    assert.match(sentMessages(1)[1]!.content, /The door groans\n\[this reply was cut off before it ended\]/);
  });

  it('marks a stream that ended without done as incomplete', async () => {
    const outcome = await engineFor().takeTurn(adventureId, { kind: 'do', text: 'push' }, {});
    assert.equal(outcome.error, null);
    fake.queue({ chunks: ['Half a sen'], endWithoutDone: true });
    const cut = await engineFor().takeTurn(adventureId, { kind: 'do', text: 'push harder' });
    assert.equal(kindOf(cut.error), 'no-done');
    assert.equal(cut.turn.status, 'incomplete');
    assert.equal(cut.turn.narration, 'Half a sen');
  });

  it('times out when the server says nothing', async () => {
    fake.queue({ chunks: ['late'], delayMs: 1500 });
    const outcome = await engineFor({}, fake.url, 200).takeTurn(adventureId, { kind: 'do', text: 'wait' });
    assert.equal(kindOf(outcome.error), 'timeout');
    assert.match(outcome.error!.message, /sent nothing for 0 s|sent nothing/);
    assert.equal(outcome.turn.status, 'error');
  });

  it('cancels mid-stream and keeps what arrived', async () => {
    fake.queue({ chunks: ['One. ', 'Two. ', 'Three. ', 'Four.'], chunkDelayMs: 150 });
    const controller = new AbortController();
    const outcome = await engineFor().takeTurn(adventureId, { kind: 'do', text: 'count' }, {
      signal: controller.signal,
      onChunk: () => controller.abort(),
    });
    assert.equal(kindOf(outcome.error), 'cancelled');
    assert.equal(outcome.turn.status, 'incomplete');
    assert.equal(outcome.turn.narration, 'One.');
  });

  it('recovers a turn cut off by a crash as incomplete, with the flushed text', async () => {
    const [streamed, pendingId] = await turnsLeftByCrash(path.join(dir, 'play.db'), adventureId, null, [{ action: 'run', streamed: 'You run into the fog and' }, { action: 'hide' }]);
    const live = store.createTurn({ adventureId, parentId: pendingId!, action: { kind: 'do', text: 'wait' }, model: 'llama3.2', stateAfter: {} });
    store.markStreaming(live.id);
    assert.equal(store.recoverInterrupted(), 2, 'the killed process’s two turns, not this process’s live one');
    assert.equal(store.turn(live.id).status, 'streaming');
    const recovered = store.turn(streamed!);
    assert.equal(recovered.status, 'incomplete');
    assert.equal(recovered.narration, 'You run into the fog and');
    assert.equal(recovered.error, INTERRUPTED_MESSAGE);
    assert.equal(store.turn(pendingId!).status, 'error');
    assert.equal(store.turn(pendingId!).action.text, 'hide');
  });

  it('keeps the text an old turn was given after its source is deleted', async () => {
    const engine = engineFor();
    const outcome = await engine.takeTurn(adventureId, { kind: 'do', text: 'ask Sister Mara about her ledger' });
    const before = JSON.stringify(store.getSnapshot(outcome.turn.id));
    assert.match(before, /keeps a ledger of every patient/);
    await knowledge.edit('characters/mara.md', null);
    const preview = await engine.previewContext(adventureId, { kind: 'do', text: 'ask Sister Mara about her ledger' });
    assert.doesNotMatch(JSON.stringify(preview.sections), /keeps a ledger of every patient/);
    assert.equal(JSON.stringify(store.getSnapshot(outcome.turn.id)), before);
  });

  it('refuses a second turn on the same adventure while one is generating', async () => {
    const engine = engineFor();
    fake.queue({ chunks: ['Slow ', 'reply.'], chunkDelayMs: 100 });
    const first = engine.takeTurn(adventureId, { kind: 'do', text: 'wait' });
    await assert.rejects(engine.takeTurn(adventureId, { kind: 'do', text: 'also wait' }), /still being generated/);
    assert.equal((await first).turn.narration, 'Slow reply.');
    assert.equal(store.allTurns(adventureId).length, 1);
    await assert.rejects(engine.takeTurn(adventureId, { kind: 'say', text: '  ' }), /a 'say' action needs some text/);
    assert.equal(store.allTurns(adventureId).length, 1, 'an empty action stores nothing');
  });

  it('keeps one turn in flight per adventure: Stop stops it, and undo, fork, retry and edit are refused meanwhile', async () => {
    const engine = engineFor();
    fake.queue({ chunks: ['The bell tolls once.'] });
    const settled = await engine.takeTurn(adventureId, { kind: 'do', text: 'listen' });
    fake.queue({ chunks: ['One. ', 'Two. ', 'Three. ', 'Four. ', 'Five.'], chunkDelayMs: 200 });
    let accepted: string | undefined;
    let firstChunk!: () => void;
    const streaming = new Promise<void>((resolve) => (firstChunk = resolve));
    const running = engine.takeTurn(adventureId, { kind: 'do', text: 'count the bells' }, { onAccepted: (turn) => (accepted = turn.action.text), onChunk: () => firstChunk() });
    assert.equal(accepted, 'count the bells', 'the action is stored before the model is asked');
    await streaming;
    assert.equal(engine.isGenerating(adventureId), true);
    assert.throws(() => engine.undo(adventureId), /still being generated/);
    assert.throws(() => engine.fork(adventureId, settled.turn.id), /still being generated/);
    await assert.rejects(engine.retry(adventureId), /still being generated/);
    await assert.rejects(engine.editAction(adventureId, settled.turn.id, 'listen closely'), /still being generated/);
    assert.equal(engine.stop(adventureId), true);
    const outcome = await running;
    assert.equal(kindOf(outcome.error), 'cancelled', 'Stop stops the turn that is running');
    assert.equal(outcome.turn.status, 'incomplete');
    assert.match(outcome.turn.narration, /^One\./, 'what arrived is kept');
    assert.equal(store.allTurns(adventureId).length, 2, 'nothing refused left a turn behind');
    assert.equal(store.adventure(adventureId).headTurnId, outcome.turn.id, 'no refused undo or fork moved the head');
    assert.equal(engine.stop(adventureId), false, 'nothing is left to stop');
    assert.equal(engine.undo(adventureId)?.id, settled.turn.id, 'once the turn ended, undo works again');
  });

  it('refuses to replay an unchanged action, so an edit never duplicates a branch', async () => {
    const engine = engineFor();
    const first = await engine.takeTurn(adventureId, { kind: 'do', text: 'light a candle' });
    await assert.rejects(engine.editAction(adventureId, first.turn.id, ' light a candle '), /unchanged/);
    assert.equal(store.allTurns(adventureId).length, 1);
  });

  it('previews a context without calling the model', async () => {
    const engine = engineFor();
    const context = await engine.previewContext(adventureId, { kind: 'do', text: 'open the crypt' });
    assert.ok(context.messages[1]!.content.includes('open the crypt'));
    assert.equal(fake.requests.length, 0);
  });
});
