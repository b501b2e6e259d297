import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { defaultSettings } from '../../src/session/defaults';
import { openSession, openSessionAt, type CampaignSession } from '../../src/session/session';
import { PlayStore } from '../../src/story/playStore';
import type { Turn } from '../../src/story/types';
import { makeCampaign, removeDir, writeFile } from '../support/campaignDirs';
import { turnsLeftByCrash } from '../support/crashedPlay';
import { reindexClosingMidway } from '../support/sessionClose';
import { FakeOllama } from '../support/fakeOllama';

const CHUNKS = ['The fog ', 'parts ', 'and Mara ', 'steps ', 'out.'];

describe('campaign session', () => {
  let root: string;
  let fake: FakeOllama;
  let session: CampaignSession;

  beforeEach(async () => {
    root = makeCampaign({ 'characters/mara.md': '---\nclass: canon\n---\n# Sister Mara\n\n- Age: 34\n' }, 'id: westhaven\ntitle: Westhaven\n');
    fake = await FakeOllama.start({ chatModels: ['llama3.2'] });
    session = openSession(root, { settings: () => defaultSettings({ ollamaHost: fake.url, narratorModel: 'llama3.2' }) });
  });
  afterEach(async () => {
    await session.close();
    await fake.close();
    removeDir(root);
  });

  /** Plays one turn whose chunks arrive 150 ms apart, calling `at[n]` when chunk n (1-based) is shown. */
  const streamTurn = async (play: PlayStore, takeTurn: CampaignSession['engine']['takeTurn'], at: Record<number, (turn: Turn) => void>) => {
    fake.queue({ chunks: CHUNKS, chunkDelayMs: 150 });
    const adventure = play.createAdventure({ campaignId: 'westhaven', title: 'Fog' });
    let started: Turn | undefined;
    let shown = 0;
    const outcome = await takeTurn(adventure.id, { kind: 'do', text: 'wait' }, {
      onStarted: (turn) => (started = turn),
      onChunk: () => at[++shown]?.(play.turn(started!.id)),
    });
    return { outcome, adventure };
  };

  it('a raw second play-store open that runs recovery mid-turn leaves the streaming turn alone: it belongs to a live process', async () => {
    const play = session.play;
    const seen: Partial<Turn>[] = [];
    const engine = session.engine;
    const { outcome } = await streamTurn(play, engine.takeTurn.bind(engine), {
      1: () => {
        // What every surface used to do, and what a second process still does: its own connection, recovering.
        const second = new PlayStore(session.campaign.playPath);
        assert.equal(second.recoverInterrupted(), 0);
        second.close();
      },
      // Chunks come 150 ms apart: by the fourth, more than one flush interval (250 ms) has passed.
      4: (turn) => seen.push({ status: turn.status, narration: turn.narration, error: turn.error }),
    });
    assert.equal(seen[0]!.error, null, 'the turn streaming right now was not marked interrupted');
    assert.notEqual(seen[0]!.narration, '', 'and its progress kept being saved');
    assert.equal(play.turn(outcome.turn.id).narration, CHUNKS.join(''));
  });

  it('is opened once per campaign: a second open mid-turn is the same session and leaves the turn streaming', async () => {
    const seen: Partial<Turn>[] = [];
    let previewed = false;
    const engine = session.engine;
    const { outcome, adventure } = await streamTurn(session.play, engine.takeTurn.bind(engine), {
      1: () => {
        const again = openSession(root);
        assert.equal(again, session);
        assert.equal(again.play, session.play);
        assert.equal(again.engine, engine);
      },
      2: () => void openSession(root).engine.previewContext(session.play.listAdventures()[0]!.id, { kind: 'do', text: 'look' }).then(() => (previewed = true)),
      4: (turn) => seen.push({ status: turn.status, narration: turn.narration }),
    });
    assert.equal(seen[0]!.status, 'streaming');
    assert.notEqual(seen[0]!.narration, '', 'progress keeps being saved while the turn streams');
    assert.equal(outcome.error, null);
    assert.equal(session.play.turn(outcome.turn.id).status, 'complete');
    assert.equal(session.play.turn(outcome.turn.id).narration, CHUNKS.join(''));
    assert.ok(previewed);
    assert.equal(session.play.adventure(adventure.id).headTurnId, outcome.turn.id);
  });

  it('recovers a turn cut off by a crash once, when the session opens the play store', async () => {
    const play = new PlayStore(session.campaign.playPath);
    const adventure = play.createAdventure({ campaignId: 'westhaven', title: 'Fog' });
    play.close();
    const [cut] = await turnsLeftByCrash(session.campaign.playPath, adventure.id, null, [{ action: 'run', streamed: 'You run' }]);
    assert.equal(session.play.turn(cut!).status, 'incomplete');
    // A turn started afterwards is never touched by another open of the same session.
    const live = session.play.createTurn({ adventureId: adventure.id, parentId: cut!, action: { kind: 'do', text: 'hide' }, model: 'llama3.2', stateAfter: {} });
    session.play.markStreaming(live.id);
    assert.equal(openSession(root).play.turn(live.id).status, 'streaming');
  });

  it('closes cleanly: a closed session stops importing, leaves the registry and a new open is a new session', async () => {
    for (let i = 0; i < 40; i++) writeFile(root, `notes/n${i}.md`, `# Note ${i}\n\nThe abbey bell rang ${i} times.\n`);
    const report = await reindexClosingMidway(session);
    assert.equal(report, undefined, 'the import was cancelled, not finished');
    assert.equal(openSessionAt(root), undefined);
    assert.throws(() => session.store, /closed/);
    const next = openSession(root);
    try {
      assert.notEqual(next, session);
      const sources = next.store.listSources().length;
      assert.ok(sources < 41, `the cancelled import stopped early (${sources} sources written)`);
      assert.equal((await next.reindex())?.files.length, 41);
    } finally {
      await next.close();
    }
  });

  it('a changed campaign.yaml cancels the import under the old config and indexes under the new one', async () => {
    for (let i = 0; i < 40; i++) writeFile(root, `drafts/d${i}.md`, `# Draft ${i}\n\nThe bell tower leans ${i} degrees.\n`);
    let reloaded = false;
    const sub = session.indexing.onDidChangeState((state) => {
      if (state.kind !== 'indexing' || state.done < 2 || reloaded) return;
      fs.writeFileSync(path.join(root, 'campaign.yaml'), 'id: westhaven\ntitle: Westhaven\nignore: [drafts/]\n');
      reloaded = session.reload();
    });
    const first = await session.reindex();
    sub.dispose();
    assert.ok(reloaded);
    assert.equal(first, undefined, 'the import under the old config did not finish');
    await session.indexing.idle();
    assert.deepEqual(session.store.listSources().map((s) => s.path), ['characters/mara.md'], 'drafts/ is ignored now, and what the cancelled import wrote of it is gone');
  });

  it('applies the writer’s size cap to the campaign it indexes; campaign.yaml wins', async () => {
    await session.close();
    session = openSession(root, { settings: () => defaultSettings({ sizeCapBytes: 10 }) });
    assert.equal(session.campaign.sizeCapBytes, 10);
    await session.reindex();
    assert.equal(session.store.getSourceByPath('characters/mara.md')?.lexicalState, 'error');
    fs.writeFileSync(path.join(root, 'campaign.yaml'), 'id: westhaven\ntitle: Westhaven\nsize_cap_bytes: 100000\n');
    assert.equal(session.reload(), true);
    await session.indexing.idle();
    assert.equal(session.campaign.sizeCapBytes, 100000);
    assert.equal(session.store.getSourceByPath('characters/mara.md')?.lexicalState, 'ready');
  });
});
