import type { Turn } from './types';

/** A run of turns with no choice in it: where the story went after a fork, read as one flat list. */
export interface Branch {
  /** The first turn of the run; the branch's identity. */
  id: string;
  /** From the first turn of the run to its leaf, oldest first. */
  turns: Turn[];
  /** The turn the run continues from (null: it starts the adventure). */
  forkedAfter: Turn | null;
  /** The branch the head is on. */
  current: boolean;
}

/** Where a turn stands among the replies to the same moment (retries, edits, forks): 1-based. */
export interface SiblingPosition {
  index: number;
  count: number;
  previousId: string | null;
  nextId: string | null;
}

/**
 * The turn's parent among `byId`, when it is one step up: the store's walk keeps the same rule, so a walk up
 * the parents ends on any data (the depth falls at each step), even turns that point at each other.
 */
export function parentIn(byId: ReadonlyMap<string, Turn>, turn: Turn): Turn | undefined {
  const parent = turn.parentId === null ? undefined : byId.get(turn.parentId);
  return parent && parent.depth === turn.depth - 1 ? parent : undefined;
}

/** From the first turn down to `turnId`, following `parentIn`: the branch a turn ends. */
export function ancestry(byId: ReadonlyMap<string, Turn>, turnId: string | null): Turn[] {
  const up: Turn[] = [];
  for (let at = turnId === null ? undefined : byId.get(turnId); at; at = parentIn(byId, at)) up.push(at);
  return up.reverse();
}

/** Children of each turn (the roots under null), oldest first; a turn is a child only one step down (`parentIn`). */
export function childrenOf(turns: readonly Turn[]): Map<string | null, Turn[]> {
  const byId = new Map(turns.map((t) => [t.id, t]));
  const byParent = new Map<string | null, Turn[]>();
  const ordered = [...turns].sort((a, b) => a.depth - b.depth || a.createdAt.localeCompare(b.createdAt));
  for (const turn of ordered) {
    const parent = turn.parentId === null ? null : parentIn(byId, turn)?.id;
    if (parent === undefined) continue;
    const list = byParent.get(parent) ?? [];
    list.push(turn);
    byParent.set(parent, list);
  }
  return byParent;
}

/** Follows the newest child down from `start` to a leaf: the latest story told from there. */
function newestRun(start: Turn, byParent: Map<string | null, Turn[]>): Turn[] {
  const run = [start];
  for (let next = byParent.get(start.id)?.at(-1); next; next = byParent.get(next.id)?.at(-1)) run.push(next);
  return run;
}

/** The leaf the newest story under a turn reaches: switching to a reply shows everything played after it. */
export function latestLeaf(turns: readonly Turn[], turnId: string): Turn {
  const start = turns.find((t) => t.id === turnId);
  if (!start) throw new Error(`turn ${turnId} is not in this adventure`);
  return newestRun(start, childrenOf(turns)).at(-1)!;
}

/**
 * The adventure as flat branches: first the one the head is on (its lineage, then the newest replies
 * after the head), then every other run in the order it was started, each from the fork it left by.
 */
export function branchesOf(turns: readonly Turn[], headTurnId: string | null): Branch[] {
  const byParent = childrenOf(turns);
  const byId = new Map(turns.map((t) => [t.id, t]));
  const headLineage = ancestry(byId, headTurnId);
  const root = headLineage[0] ?? byParent.get(null)?.at(-1);
  if (!root) return [];
  const main = headLineage.length > 0 ? [...headLineage, ...newestRun(headLineage.at(-1)!, byParent).slice(1)] : newestRun(root, byParent);
  const branches: Branch[] = [{ id: main[0]!.id, turns: main, forkedAfter: null, current: headLineage.length > 0 }];
  const listed = new Set(main.map((t) => t.id));
  // Breadth over the branches found so far: every child not already on a run starts a new one.
  for (let i = 0; i < branches.length; i++) {
    const { turns: run } = branches[i]!;
    const starts = [...(byParent.get(null) ?? []).filter(() => i === 0), ...run.flatMap((t) => byParent.get(t.id) ?? [])];
    for (const start of starts.sort((a, b) => a.createdAt.localeCompare(b.createdAt))) {
      if (listed.has(start.id)) continue;
      const next = newestRun(start, byParent);
      next.forEach((t) => listed.add(t.id));
      branches.push({ id: start.id, turns: next, forkedAfter: start.parentId ? byId.get(start.parentId)! : null, current: false });
    }
  }
  return branches;
}

/** The turn's place among its siblings, for flipping between replies in place. */
export function siblingPosition(turns: readonly Turn[], turn: Turn): SiblingPosition {
  const siblings = childrenOf(turns).get(turn.parentId) ?? [turn];
  const at = siblings.findIndex((t) => t.id === turn.id);
  return { index: at + 1, count: siblings.length, previousId: siblings[at - 1]?.id ?? null, nextId: siblings[at + 1]?.id ?? null };
}

/** The first words of a text, on one line, to name a turn or a branch in a sentence. */
export function firstWords(text: string, max = 48): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max).replace(/\s+\S*$/, '')}…` : flat;
}
