// The graph's layout: a force simulation (d3-force) run to rest before anything is drawn, so the picture
// never jiggles; `bench/graphBench.ts` times it on the SRD campaign.
import { forceCollide, forceLink, forceManyBody, forceSimulation, forceX, forceY, type SimulationNodeDatum } from 'd3-force';

export interface Placed {
  x: number;
  y: number;
}

/** Cooling fast enough to rest in ~130 ticks (d3's default takes 300): a thousand entities lay out in a third of the time, as readable. */
const ALPHA_DECAY = 0.05;
const TICKS = Math.ceil(Math.log(0.001) / Math.log(1 - ALPHA_DECAY));

interface SimNode extends SimulationNodeDatum {
  id: string;
  r: number;
}

/**
 * Positions for `nodes`. Nodes placed by an earlier layout stay where they were, so a refresh after an edit
 * never rearranges what the writer has learnt to read; new nodes start beside a neighbour and settle around
 * them. The same input gives the same picture (d3-force places unplaced nodes on a fixed spiral).
 */
export function layoutGraph(
  nodes: readonly { id: string; radius: number }[],
  edges: readonly { from: string; to: string }[],
  previous: ReadonlyMap<string, Placed> = new Map(),
): Map<string, Placed> {
  // Nothing new to place: the picture stays exactly as it was (an edit that changed only text or counts).
  if (nodes.every((n) => previous.has(n.id))) return new Map(nodes.map((n) => [n.id, { ...previous.get(n.id)! }]));
  const neighbour = new Map<string, string>();
  for (const e of edges) {
    if (!neighbour.has(e.from)) neighbour.set(e.from, e.to);
    if (!neighbour.has(e.to)) neighbour.set(e.to, e.from);
  }
  const sim: SimNode[] = nodes.map((n) => {
    const at = previous.get(neighbour.get(n.id) ?? '');
    const kept = previous.get(n.id);
    if (kept) return { id: n.id, r: n.radius, x: kept.x, y: kept.y, fx: kept.x, fy: kept.y };
    return { id: n.id, r: n.radius, ...(at ? { x: at.x + n.radius * 2, y: at.y } : {}) };
  });
  const known = new Set(nodes.map((n) => n.id));
  const links = edges.filter((e) => known.has(e.from) && known.has(e.to)).map((e) => ({ source: e.from, target: e.to }));
  const simulation = forceSimulation(sim)
    .force('link', forceLink<SimNode, { source: string; target: string }>(links).id((d) => d.id).distance(40))
    .force('charge', forceManyBody<SimNode>().strength(-60).distanceMax(300).theta(0.95))
    .force('collide', forceCollide<SimNode>((d) => d.r + 3))
    // Pulls loose entities (no links) in, so the picture stays one readable cluster.
    .force('x', forceX<SimNode>(0).strength(0.04))
    .force('y', forceY<SimNode>(0).strength(0.04))
    .alphaDecay(ALPHA_DECAY)
    .stop();
  simulation.tick(TICKS);
  return new Map(sim.map((n) => [n.id, { x: n.x ?? 0, y: n.y ?? 0 }]));
}
