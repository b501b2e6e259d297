import assert from 'node:assert/strict';
import { adventureMap, type AdventureMap } from '../../src/story/adventureMap';
import type { Memory, Turn } from '../../src/story/types';
import { storedTurn } from './storySupport';

/** An adventure built in memory, each turn a tick of a clock after the last, as play stores them. */
function adventure() {
  const turns: Turn[] = [];
  let clock = 0;
  const play = (parent: Turn | null, action: string, narration = `The reply to ${action}.`): Turn => {
    const stamp = new Date(Date.UTC(2026, 0, 1) + ++clock * 1000).toISOString();
    const turn = storedTurn({
      id: `t${clock}`,
      parentId: parent?.id ?? null,
      depth: parent ? parent.depth + 1 : 0,
      action: { kind: 'do', text: action },
      narration,
      createdAt: stamp,
      updatedAt: stamp,
    });
    turns.push(turn);
    return turn;
  };
  return { turns, play };
}

const placeOf = (map: AdventureMap) => new Map(map.nodes.map((n) => [n.id, `${n.row},${n.column}`]));
const node = (map: AdventureMap, id: string) => map.nodes.find((n) => n.id === id)!;

describe('the adventure map', () => {
  it('draws an adventure of one turn as one current node with its action and the first words of its reply', () => {
    const { turns, play } = adventure();
    const only = play(null, 'I knock on the abbey gate', 'The gate creaks open and a lantern swings towards you through the fog, held by a sister in grey who has clearly been waiting.');
    const map = adventureMap(turns, only.id);
    assert.deepEqual({ columns: map.columns, rows: map.rows, edges: map.edges.length }, { columns: 1, rows: 1, edges: 0 });
    const [drawn] = map.nodes;
    assert.equal(drawn!.action, 'I knock on the abbey gate');
    assert.match(drawn!.summary, /^The gate creaks open .*…$/, 'the reply cut at a word');
    assert.ok(drawn!.summary.length < 100);
    assert.deepEqual([drawn!.current, drawn!.head, drawn!.alternative, drawn!.number], [true, true, null, 1]);
    assert.deepEqual(adventureMap([], null), { nodes: [], edges: [], columns: 0, rows: 0 }, 'nothing played: nothing drawn');
  });

  it('sets swipes and forks beside the story in columns of their own, and marks the branch the head is on', () => {
    const { turns, play } = adventure();
    const gate = play(null, 'I knock');
    const inside = play(gate, 'I step inside');
    const bells = play(inside, 'I ring the bells');
    const bellsAgain = play(inside, 'I ring the bells', 'Another telling: the bells are silent.');
    const river = play(gate, 'I walk to the river instead');
    const ferry = play(river, 'I take the ferry');
    const map = adventureMap(turns, ferry.id);

    assert.deepEqual(
      map.nodes.map((n) => [n.action, n.row, n.column]),
      [
        ['I knock', 0, 0],
        ['I step inside', 1, 0],
        ['I ring the bells', 2, 0],
        ['I ring the bells', 2, 1],
        ['I walk to the river instead', 1, 2],
        ['I take the ferry', 2, 2],
      ],
      'the first story runs straight down; each younger child opens the next column',
    );
    assert.equal(node(map, bellsAgain.id).alternative, 'swipe', 'another reply to the same action');
    assert.deepEqual(node(map, bellsAgain.id).siblings, { index: 2, count: 2 });
    assert.equal(node(map, river.id).alternative, 'fork', 'a different action from the same moment');
    assert.equal(node(map, bells.id).alternative, null);
    assert.deepEqual(map.nodes.filter((n) => n.current).map((n) => n.id), [gate.id, river.id, ferry.id], 'the head and its lineage are current');
    assert.deepEqual(map.nodes.filter((n) => n.head).map((n) => n.id), [ferry.id]);
    assert.deepEqual(map.edges.filter((e) => e.current).map((e) => [e.from, e.to]), [[gate.id, river.id], [river.id, ferry.id]]);
    assert.equal(map.edges.length, turns.length - 1, 'one edge into every turn but the first');
    assert.deepEqual([map.columns, map.rows], [3, 3]);
  });

  it('keeps every turn where it was drawn as the story is played on, swiped, forked and undone', () => {
    const { turns, play } = adventure();
    const first = play(null, 'I knock');
    const second = play(first, 'I step inside');
    const before = placeOf(adventureMap(turns, second.id));
    const retold = play(null, 'I knock');
    play(second, 'I climb the tower');
    play(first, 'I turn back');
    play(retold, 'I wait');
    const after = placeOf(adventureMap(turns, first.id));
    for (const [id, place] of before) assert.equal(after.get(id), place, `${id} stays at ${place}`);
    assert.equal(new Set(after.values()).size, turns.length, 'no two turns share a place');
    assert.deepEqual(
      placeOf(adventureMap(turns, null)),
      after,
      'undoing to the start changes only what is marked current',
    );
  });

  it('shows the memory that holds a turn in place of its reply, on the lineage it was written from', () => {
    const { turns, play } = adventure();
    const one = play(null, 'I knock');
    const two = play(one, 'I step inside');
    const three = play(two, 'I ring the bells');
    const elsewhere = play(two, 'I leave');
    const memory: Memory = {
      id: 'm1',
      adventureId: 'a',
      anchorTurnId: three.id,
      sourceStart: 1,
      sourceEnd: 2,
      text: 'Kaelen entered the abbey and rang its bells.',
      pinned: false,
      retrievedCount: 0,
      createdAt: three.createdAt,
      updatedAt: three.createdAt,
    };
    const map = adventureMap(turns, three.id, [memory, { ...memory, id: 'typed', anchorTurnId: null, sourceStart: null, sourceEnd: null, text: 'typed by hand' }]);
    assert.equal(node(map, two.id).summary, 'Memory of turns 2–3: Kaelen entered the abbey and rang its bells.');
    assert.equal(node(map, three.id).summary, node(map, two.id).summary);
    assert.equal(node(map, one.id).summary, 'The reply to I knock.', 'before the block: its own reply');
    assert.equal(node(map, elsewhere.id).summary, 'The reply to I leave.', 'another branch is not what the memory was written from');
  });

  it('says why a turn has no reply', () => {
    const { turns, play } = adventure();
    const failed = play(null, 'I knock', '');
    failed.status = 'error';
    failed.error = 'Cannot reach Ollama';
    const waiting = play(failed, 'I wait', '');
    waiting.status = 'streaming';
    const map = adventureMap(turns, waiting.id);
    assert.equal(node(map, failed.id).summary, 'No reply: Cannot reach Ollama');
    assert.equal(node(map, waiting.id).summary, 'No reply yet.');
  });

  it('shapes an adventure thousands of turns deep with a fork every ten turns, each turn drawn once', () => {
    const { turns, play } = adventure();
    let at: Turn | null = null;
    let forks = 0;
    for (let i = 0; i < 3000; i++) {
      at = play(at, `step ${i}`);
      if (i % 10 === 9) {
        play(at.parentId ? turns.find((t) => t.id === at!.parentId)! : null, `a fork at ${i}`);
        forks++;
      }
    }
    const map = adventureMap(turns, at!.id);
    assert.equal(map.nodes.length, turns.length);
    assert.equal(new Set(map.nodes.map((n) => n.id)).size, turns.length);
    assert.deepEqual([map.rows, map.columns], [3000, forks + 1]);
    assert.equal(map.nodes.filter((n) => n.current).length, 3000, 'the whole main story is current, followed without recursion');
    assert.ok(map.nodes.filter((n) => n.column === 0).every((n) => n.current));
  });
});
