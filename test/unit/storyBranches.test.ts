import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { branchesOf, latestLeaf, siblingPosition } from '../../src/story/branches';
import { PlayStore } from '../../src/story/playStore';

describe('story branches', () => {
  let dir: string;
  let store: PlayStore;
  let adventureId: string;
  const play = (parentId: string | null, text: string) => store.createTurn({ adventureId, parentId, action: { kind: 'do', text }, model: null, stateAfter: {} });
  const actions = (turns: { action: { text: string } }[]) => turns.map((t) => t.action.text);

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-branches-'));
    store = new PlayStore(path.join(dir, 'play.db'));
    adventureId = store.createAdventure({ campaignId: 'westhaven', title: 'Fog' }).id;
  });
  afterEach(() => {
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reads a long session as one flat branch, and each fork as a new branch from where it left', () => {
    let at: string | null = null;
    const main: string[] = [];
    for (let i = 1; i <= 12; i++) {
      at = play(at, `step ${i}`).id;
      main.push(at);
    }
    const retry = play(main[10]!, 'step 12 again');
    const fork = play(main[3]!, 'turn back at step 5');
    play(fork.id, 'run to the river');
    store.setHead(adventureId, main[11]!);

    const branches = branchesOf(store.allTurns(adventureId), store.adventure(adventureId).headTurnId);
    assert.equal(branches.length, 3);
    assert.equal(branches[0]!.current, true);
    assert.equal(branches[0]!.turns.length, 12, 'twelve turns, one level: no nesting per turn');
    assert.deepEqual(actions(branches[1]!.turns), ['step 12 again'], 'a retry is a branch of its own');
    assert.equal(branches[1]!.id, retry.id);
    assert.equal(branches[1]!.forkedAfter?.id, main[10]);
    assert.deepEqual(actions(branches[2]!.turns), ['turn back at step 5', 'run to the river'], 'a fork reads as one run from where it left');
    assert.equal(branches[2]!.id, fork.id);
    assert.equal(branches[2]!.forkedAfter?.action.text, 'step 4');
    assert.equal(branches.flatMap((b) => b.turns).length, store.allTurns(adventureId).length, 'every turn is on exactly one branch');
  });

  it('places a reply among its siblings and switches to the newest story after one', () => {
    const first = play(null, 'knock');
    const after = play(first.id, 'enter');
    const second = play(null, 'knock');
    const turns = store.allTurns(adventureId);
    assert.deepEqual(siblingPosition(turns, second), { index: 2, count: 2, previousId: first.id, nextId: null });
    assert.deepEqual(siblingPosition(turns, after), { index: 1, count: 1, previousId: null, nextId: null });
    assert.equal(latestLeaf(turns, first.id).id, after.id);
  });
});
