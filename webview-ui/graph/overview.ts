import type { LabelRequest } from './labels';
import { layoutGraph, type Placed } from './layout';

// What the graph draws of a large campaign: the most-connected entities one by one, the rest folded into one
// node per kind (the SRD's Monsters, Spells, Races), each opened on demand. A thousand entities drawn at once
// are a ball no one can read; this is the picture they open on.

/** Past this many entities the picture opens on the overview; up to it, everything is drawn. */
const OVERVIEW_OVER = 150;
/** How many of the most-connected entities the overview draws one by one. */
export const OVERVIEW_HUBS = 40;
/** The id prefix of a folded kind: `group:Monsters`. */
const GROUP_NODE = 'group:';
/** Up to this many nodes drawn, the layout leaves room under each for its label, so labels do not pile up. */
const LABEL_ALL = 150;
/** Room a label takes under its node. */
const LABEL_ROOM = 14;
/** Room around the outermost nodes for their labels (a 20-letter label is ~110 units wide, centred on its node). */
const FIT_MARGIN = 80;

export interface OverviewInput {
  id: string;
  kind: string;
  mentions: number;
}

export interface OverviewEdge {
  from: string;
  to: string;
  count: number;
  weak: number;
  linked: boolean;
}

/** A kind's entities the overview has not drawn, as one node. */
export interface FoldedGroup {
  id: string;
  kind: string;
  members: string[];
}

export interface Overview<N extends OverviewInput> {
  nodes: N[];
  groups: FoldedGroup[];
  /** Edges between what is drawn: an entity's edge to a folded one goes to its group, counts summed. */
  edges: OverviewEdge[];
  /** Distinct neighbours of every entity, over all the edges given. */
  degree: ReadonlyMap<string, number>;
}

export function degrees(edges: readonly OverviewEdge[]): Map<string, Set<string>> {
  const around = new Map<string, Set<string>>();
  for (const e of edges) {
    if (e.from === e.to) continue;
    around.set(e.from, (around.get(e.from) ?? new Set()).add(e.to));
    around.set(e.to, (around.get(e.to) ?? new Set()).add(e.from));
  }
  return around;
}

/**
 * `nodes` as drawn: all of them when there are few or `everything` is asked (a focus, a text filter), else the
 * OVERVIEW_HUBS most connected (by distinct neighbours, then mentions), every entity of the kinds in
 * `opened`, and one folded node per other kind.
 */
export function overview<N extends OverviewInput>(nodes: readonly N[], edges: readonly OverviewEdge[], opened: ReadonlySet<string>, everything = false): Overview<N> {
  const around = degrees(edges);
  const degree = new Map(nodes.map((n) => [n.id, around.get(n.id)?.size ?? 0]));
  const ids = new Set(nodes.map((n) => n.id));
  const among = edges.filter((e) => ids.has(e.from) && ids.has(e.to));
  if (everything || nodes.length <= OVERVIEW_OVER) return { nodes: [...nodes], groups: [], edges: among, degree };
  const ranked = [...nodes].sort((a, b) => degree.get(b.id)! - degree.get(a.id)! || b.mentions - a.mentions || a.id.localeCompare(b.id));
  const hubs = new Set(ranked.slice(0, OVERVIEW_HUBS).map((n) => n.id));
  const rest = new Map<string, string[]>();
  for (const n of ranked) if (!hubs.has(n.id) && !opened.has(n.kind)) rest.set(n.kind, [...(rest.get(n.kind) ?? []), n.id]);
  // A kind with one entity left over is that entity, not a group of one.
  const groups = [...rest].filter(([, members]) => members.length > 1).map(([kind, members]) => ({ id: `${GROUP_NODE}${kind}`, kind, members }));
  const owner = new Map<string, string>();
  for (const g of groups) for (const m of g.members) owner.set(m, g.id);
  const drawn = ranked.filter((n) => !owner.has(n.id));
  const folded = new Map<string, OverviewEdge>();
  for (const e of among) {
    const [from, to] = [owner.get(e.from) ?? e.from, owner.get(e.to) ?? e.to];
    if (from === to) continue;
    const key = `${from}\u0000${to}`;
    const edge = folded.get(key) ?? { from, to, count: 0, weak: 0, linked: false };
    edge.count += e.count;
    edge.weak += e.weak;
    edge.linked ||= e.linked;
    folded.set(key, edge);
  }
  return { nodes: drawn, groups, edges: [...folded.values()], degree };
}

/** A folded kind's node grows with how many it holds. */
export const groupRadius = (g: FoldedGroup): number => 10 + Math.min(22, Math.sqrt(g.members.length) * 1.6);

/** Positions for what `drawn` holds, keeping `previous` where it has them (layoutGraph); `seeds` start new ones. */
export function layoutDrawn<N extends OverviewInput>(
  drawn: Overview<N>,
  radiusOf: (n: N) => number,
  previous: ReadonlyMap<string, Placed>,
  seeds: ReadonlyMap<string, Placed> = new Map(),
): Map<string, Placed> {
  const room = drawn.nodes.length + drawn.groups.length <= LABEL_ALL ? LABEL_ROOM : 0;
  const sized = [...drawn.groups.map((g) => ({ id: g.id, radius: groupRadius(g) + room })), ...drawn.nodes.map((n) => ({ id: n.id, radius: radiusOf(n) + room }))];
  return layoutGraph(sized, drawn.edges, previous, seeds);
}

/** The pan and zoom that fits `points` (and room for their labels) in a `width` × `height` picture, zoom at most 2. */
export function fitView(points: readonly Placed[], width: number, height: number): { x: number; y: number; k: number } | undefined {
  if (points.length === 0) return undefined;
  const xs = points.map((p) => p.x);
  const ys = points.map((p) => p.y);
  const [minX, maxX, minY, maxY] = [Math.min(...xs) - FIT_MARGIN, Math.max(...xs) + FIT_MARGIN, Math.min(...ys) - FIT_MARGIN, Math.max(...ys) + FIT_MARGIN];
  const k = Math.min(2, width / (maxX - minX), height / (maxY - minY));
  return { k, x: width / 2 - ((minX + maxX) / 2) * k, y: height / 2 - ((minY + maxY) / 2) * k };
}

export const groupLabel = (g: FoldedGroup): string => `${g.kind} (${g.members.length})`;

/** What labels.ts is asked to place: the focused entity first, then the folded kinds, then the most connected. */
export function labelRequests<N extends OverviewInput & { label: string }>(
  drawn: Overview<N>,
  positions: ReadonlyMap<string, Placed>,
  radiusOf: (n: N) => number,
  focus?: string,
): LabelRequest[] {
  return [
    ...drawn.groups.map((g) => ({ id: g.id, ...positions.get(g.id)!, r: groupRadius(g), text: groupLabel(g), priority: 1e9 + g.members.length })),
    ...drawn.nodes.map((n) => ({ id: n.id, ...positions.get(n.id)!, r: radiusOf(n), text: n.label, priority: n.id === focus ? 1e12 : (drawn.degree.get(n.id) ?? 0) * 1e4 + n.mentions })),
  ];
}
