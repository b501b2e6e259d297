// The graph's layout: a force simulation (d3-force) run to rest before anything is drawn, so the picture
// never jiggles; `bench/graphBench.ts` times it on the SRD campaign.
import { forceCollide, forceLink, forceManyBody, forceSimulation, forceX, forceY, type SimulationNodeDatum } from 'd3-force';

export interface Placed {
  x: number;
  y: number;
}

/**
 * Cooling from alpha 1 to 0.01 in 31 ticks (d3's default takes 300 to 0.001): on the SRD's thousand
 * entities the picture has its shape by then, and the ticks past it only polished what no one can see.
 */
const ALPHA_DECAY = 0.14;
const ALPHA_MIN = 0.01;
const TICKS = Math.ceil(Math.log(ALPHA_MIN) / Math.log(1 - ALPHA_DECAY));
/**
 * Collisions are resolved only once charge has spread the nodes out (alpha below 0.3): in the crowded first
 * ticks every node overlaps dozens, and resolving them there cost as much as all the other forces together.
 */
const SPREAD_TICKS = Math.ceil(Math.log(0.3) / Math.log(1 - ALPHA_DECAY));
/** Then overlaps alone, with nothing else pulling, six passes a tick: no two nodes sit on each other. */
const SETTLE_TICKS = 10;

const GOLDEN_ANGLE = Math.PI * (3 - Math.sqrt(5));
const SEED_SPACING = 14;

/** A node's radius by how often the campaign mentions it: the picture and the bench size nodes alike. */
export const nodeRadius = (mentions: number): number => 5 + Math.min(14, Math.sqrt(mentions) * 2);

interface SimNode extends SimulationNodeDatum {
  id: string;
  r: number;
}

/**
 * Positions for `nodes`. Nodes placed by an earlier layout stay where they were, so a refresh after an edit
 * never rearranges what the writer has learnt to read; new nodes start beside a neighbour and settle around
 * them, or at their `seeds` (an opened group's entities start where the group was). The same input gives the same picture (d3-force places unplaced nodes on a fixed spiral, which
 * measured better than seeding them in breadth-first order: linked entities ended closer).
 */
export function layoutGraph(
  nodes: readonly { id: string; radius: number }[],
  edges: readonly { from: string; to: string }[],
  previous: ReadonlyMap<string, Placed> = new Map(),
  seeds: ReadonlyMap<string, Placed> = new Map(),
): Map<string, Placed> {
  // Nothing new to place: the picture stays exactly as it was (an edit that changed only text or counts).
  if (nodes.every((n) => previous.has(n.id))) return new Map(nodes.map((n) => [n.id, { ...previous.get(n.id)! }]));
  const neighbour = new Map<string, string>();
  for (const e of edges) {
    if (!neighbour.has(e.from)) neighbour.set(e.from, e.to);
    if (!neighbour.has(e.to)) neighbour.set(e.to, e.from);
  }
  let seeded = 0;
  const sim: SimNode[] = nodes.map((n) => {
    const seed = seeds.get(n.id);
    const at = seed ?? previous.get(neighbour.get(n.id) ?? '');
    const kept = previous.get(n.id);
    if (kept) return { id: n.id, r: n.radius, x: kept.x, y: kept.y, fx: kept.x, fy: kept.y };
    // Seeded nodes share one point: they start on a sunflower spiral round it, evenly spread, a node's width apart.
    const i = seed ? seeded++ : 0;
    const turn = seed ? { x: Math.cos(i * GOLDEN_ANGLE) * SEED_SPACING * Math.sqrt(i + 1), y: Math.sin(i * GOLDEN_ANGLE) * SEED_SPACING * Math.sqrt(i + 1) } : { x: n.radius * 2, y: 0 };
    return { id: n.id, r: n.radius, ...(at ? { x: at.x + turn.x, y: at.y + turn.y } : {}) };
  });
  const known = new Set(nodes.map((n) => n.id));
  const links = edges.filter((e) => known.has(e.from) && known.has(e.to)).map((e) => ({ source: e.from, target: e.to }));
  const collide = forceCollide<SimNode>((d) => d.r + 3);
  const simulation = forceSimulation(sim)
    .force('link', forceLink<SimNode, { source: string; target: string }>(links).id((d) => d.id).distance(40))
    // Barnes-Hut at theta 1.2 (d3: 0.9): far clusters are summed coarser, which no reader sees in the picture.
    .force('charge', forceManyBody<SimNode>().strength(-60).distanceMax(300).theta(1.2))
    // Pulls loose entities (no links) in, so the picture stays one readable cluster.
    .force('x', forceX<SimNode>(0).strength(0.04))
    .force('y', forceY<SimNode>(0).strength(0.04))
    .alphaDecay(ALPHA_DECAY)
    .stop();
  simulation.tick(SPREAD_TICKS);
  simulation.force('collide', collide).tick(TICKS - SPREAD_TICKS);
  simulation.force('link', null).force('charge', null).force('x', null).force('y', null).force('collide', collide.iterations(6)).tick(SETTLE_TICKS);
  return new Map(sim.map((n) => [n.id, { x: n.x ?? 0, y: n.y ?? 0 }]));
}
