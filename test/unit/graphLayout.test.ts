import assert from 'node:assert/strict';
import { EntityModel, entityLinks, entitySourcesFromStore } from '../../src/knowledge/entities';
import { placeLabels, overlap, shortened } from '../../webview-ui/graph/labels';
import { layoutGraph, nodeRadius } from '../../webview-ui/graph/layout';
import { fitView, labelRequests, layoutDrawn, overview, OVERVIEW_HUBS, type OverviewEdge } from '../../webview-ui/graph/overview';
import { corpusPath } from '../support/corpora';
import { importCorpora } from '../support/knowledgeFixtures';

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

describe('campaign graph labels and overview, on Torys and the SRD', () => {
  type Node = { id: string; label: string; kind: string; mentions: number };
  const campaigns = new Map<string, { nodes: Node[]; edges: OverviewEdge[] }>();
  const radius = (n: Node) => nodeRadius(n.mentions);

  before(async function () {
    this.timeout(180_000);
    for (const [name, corpus] of [['Torys', 'torys'], ['the SRD', 'dnd-srd-5.1']]) {
      // As the graph panel builds its nodes: canon entities, kinds as the campaign says them, links between their files.
      const library = await importCorpora('labels', { [corpus!]: { corpus: corpusPath(corpus!), class: 'canon' } });
      try {
        const model = new EntityModel(entitySourcesFromStore(library.store));
        const nodes = model.canonEntities().map((e) => ({ id: e.key, label: e.display, kind: e.group, mentions: model.usage(e.key).mentions }));
        campaigns.set(name!, { nodes, edges: entityLinks(model) });
      } finally {
        library.dispose();
      }
    }
  });

  for (const name of ['Torys', 'the SRD']) {
    it(`draws no two labels of ${name} over each other at any zoom, none cut by the picture's edge, and labels the most connected when fitted`, () => {
      const { nodes, edges } = campaigns.get(name)!;
      const drawn = overview(nodes, edges, new Set());
      const placed = layoutDrawn(drawn, radius, new Map());
      const fitted = fitView([...placed.values()], 900, 600)!;
      for (const k of [fitted.k / 2, fitted.k, fitted.k * 3]) {
        // The 900 × 600 picture as fitted, zoomed about its centre: where it lies in the labels' (zoomed) units.
        const zoomed = (centre: number, offset: number) => (centre - offset) * (k / fitted.k) - centre;
        const picture = { left: zoomed(450, fitted.x), top: zoomed(300, fitted.y), width: 900, height: 600 };
        const labels = placeLabels(labelRequests(drawn, placed, radius), k, undefined, picture);
        for (const [i, a] of labels.entries()) for (const b of labels.slice(i + 1)) assert.ok(!overlap(a, b), `at zoom ${k.toFixed(2)}, "${a.text}" and "${b.text}" overlap`);
        for (const l of labels) assert.ok(l.left >= picture.left && l.left + l.width <= picture.left + picture.width && l.top >= picture.top && l.top + l.height <= picture.top + picture.height, `"${l.text}" inside the picture`);
        if (k !== fitted.k) continue;
        const labelled = new Set(labels.map((l) => l.id));
        const top = [...drawn.nodes].sort((a, b) => drawn.degree.get(b.id)! - drawn.degree.get(a.id)!).slice(0, 10);
        assert.deepEqual(top.filter((n) => !labelled.has(n.id)).map((n) => n.label), [], 'the ten most connected are labelled');
        assert.ok(labels.length >= 0.75 * (drawn.nodes.length + drawn.groups.length), `most of what is drawn is labelled: ${labels.length}`);
      }
      assert.ok(placeLabels(labelRequests(drawn, placed, radius), fitted.k * 3).length === drawn.nodes.length + drawn.groups.length, 'zoomed in, every label is drawn');
    });
  }

  it('opens the SRD on its most connected entities and one node per kind, the kinds the campaign\'s own folders', () => {
    const { nodes, edges } = campaigns.get('the SRD')!;
    const drawn = overview(nodes, edges, new Set());
    assert.equal(drawn.nodes.length, OVERVIEW_HUBS);
    assert.equal(drawn.nodes.length + drawn.groups.reduce((n, g) => n + g.members.length, 0), nodes.length, 'every entity is drawn or folded');
    assert.ok(['Spells', 'Monsters', 'Races'].every((kind) => drawn.groups.some((g) => g.kind === kind)), drawn.groups.map((g) => g.kind).join(', '));
    assert.ok(nodes.filter((n) => n.kind === 'other').length < 10, 'few entities are left without a kind');
    // Opening Monsters draws its entities where the group was; what was drawn stays where the writer saw it.
    const before = layoutDrawn(drawn, radius, new Map());
    const monsters = drawn.groups.find((g) => g.kind === 'Monsters')!;
    const opened = overview(nodes, edges, new Set(['Monsters']));
    const after = layoutDrawn(opened, radius, before, new Map(monsters.members.map((id) => [id, before.get(monsters.id)!])));
    for (const n of drawn.nodes) assert.deepEqual(after.get(n.id), before.get(n.id));
    assert.ok(monsters.members.every((id) => opened.nodes.some((n) => n.id === id)), 'every monster is drawn');
  });

  it('shortens a long label at a word before dropping it', () => {
    assert.equal(shortened('Semeret the Motherly'), 'Semeret the…');
    assert.equal(shortened('Ice'), 'Ice');
  });
});
