import assert from 'node:assert/strict';
import { layoutGraph } from '../../webview-ui/graph/layout';

// A small web: a hub with spokes and a ring, the shape a setting's characters and places often make.
const nodes = Array.from({ length: 30 }, (_, i) => ({ id: `n${i}`, radius: 6 }));
const edges = [...nodes.slice(1).map((n) => ({ from: 'n0', to: n.id })), ...nodes.slice(1, 10).map((n, i) => ({ from: n.id, to: `n${i + 2}` }))];
const distance = (a: { x: number; y: number }, b: { x: number; y: number }) => Math.hypot(a.x - b.x, a.y - b.y);

describe('campaign graph layout', () => {
  it('draws the same picture from the same entities, with no two nodes on top of each other', () => {
    const first = layoutGraph(nodes, edges);
    assert.deepEqual(layoutGraph(nodes, edges), first, 'a reopened graph looks the same');
    const placed = [...first.values()];
    for (const [i, a] of placed.entries()) for (const b of placed.slice(i + 1)) assert.ok(distance(a, b) > 6, 'nodes keep apart');
  });

  it('keeps the picture where it was when an entity is added: the others stay, the new one lands by its link', () => {
    const before = layoutGraph(nodes, edges);
    const after = layoutGraph([...nodes, { id: 'new', radius: 6 }], [...edges, { from: 'new', to: 'n5' }], before);
    const spread = Math.max(...[...before.values()].map((p) => distance(p, before.get('n0')!)));
    for (const n of nodes) assert.deepEqual(after.get(n.id), before.get(n.id), `${n.id} stays where the writer saw it`);
    assert.ok(distance(after.get('new')!, after.get('n5')!) < spread, 'the new entity lands near what it links to');
    assert.ok([...before.values()].every((p) => distance(p, after.get('new')!) > 6), 'and on no other node');
  });

  it('keeps a large, crowded campaign readable in its few ticks: no node is drawn over another', () => {
    // 780 entities round 13 hubs, each page naming its hub and the next one, sized by mentions up to the largest: crowded, as the SRD is.
    const big = Array.from({ length: 780 }, (_, i) => ({ id: `e${i}`, radius: i % 60 === 0 ? 19 : 5 + ((i * 7) % 15) }));
    const links = big.flatMap((n, i) => {
      const hub = i - (i % 60);
      return i === hub ? [] : [{ from: n.id, to: `e${hub}` }, { from: n.id, to: `e${(hub + 60) % 780}` }];
    });
    const placed = layoutGraph(big, links);
    for (const [i, a] of big.entries()) {
      for (const b of big.slice(i + 1)) {
        assert.ok(distance(placed.get(a.id)!, placed.get(b.id)!) >= a.radius + b.radius, `${a.id} and ${b.id} do not overlap`);
      }
    }
  });
});
