import { ancestry, childrenOf, firstWords, parentIn } from './branches';
import type { ActionKind, Memory, Turn, TurnStatus } from './types';

/** One turn as the Adventure Map draws it: where it sits, what it says on hover, and how it stands to the head. */
export interface MapNode {
  id: string;
  parentId: string | null;
  /** The row: the turn's depth, so turn N of every branch sits at the same height. */
  row: number;
  /** The column: its run's, numbered in the order the runs were started. */
  column: number;
  /** Its number in its branch, from 1. */
  number: number;
  actionKind: ActionKind;
  action: string;
  /** The memory that holds this turn ("Memory of turns 1–8: …") when one does, else the reply's first words. */
  summary: string;
  status: TurnStatus;
  /** On the head's lineage: the story the play panel shows. */
  current: boolean;
  head: boolean;
  /**
   * How it came beside an older sibling: another reply to the same action (a swipe, as Retry makes) or a
   * different action from the same moment (a fork, or an edited action); null for a turn's first child.
   */
  alternative: 'swipe' | 'fork' | null;
  /** Its place among the replies to the same moment, from 1. */
  siblings: { index: number; count: number };
}

export interface MapEdge {
  from: string;
  to: string;
  /** Both ends on the head's lineage. */
  current: boolean;
}

export interface AdventureMap {
  nodes: MapNode[];
  edges: MapEdge[];
  columns: number;
  rows: number;
}

const REPLY_WORDS = 90;

/** What each turn's memory says, by turn: the newest memory written over a block holds every turn of it. */
function memoriesByTurn(memories: readonly Memory[], byId: ReadonlyMap<string, Turn>): Map<string, string> {
  const told = new Map<string, string>();
  for (const memory of [...memories].sort((a, b) => a.createdAt.localeCompare(b.createdAt))) {
    const { anchorTurnId, sourceStart: start, sourceEnd: end } = memory;
    if (anchorTurnId === null || start === null || end === null) continue;
    // Up the anchor's own lineage, not today's branch: the block is the turns the memory was written from.
    for (let at = byId.get(anchorTurnId); at && at.depth >= start; at = parentIn(byId, at)) {
      if (at.depth <= end) told.set(at.id, `Memory of turns ${start + 1}–${end + 1}: ${memory.text}`);
    }
  }
  return told;
}

function replySummary(turn: Turn): string {
  if (turn.narration.trim()) return firstWords(turn.narration, REPLY_WORDS);
  if (turn.status === 'pending' || turn.status === 'streaming') return 'No reply yet.';
  return turn.error ? `No reply: ${turn.error}` : 'No reply.';
}

/**
 * An adventure's turns as a tree picture's data. A run follows each turn's oldest child down; every younger
 * child (a swipe or a fork) starts a run in a new column to the right, numbered in the order the runs began.
 * Playing on, swiping, forking and undoing therefore never move a turn already drawn: a new turn extends its
 * run or opens the next column, and the head only changes which turns are marked current.
 */
export function adventureMap(turns: readonly Turn[], headTurnId: string | null, memories: readonly Memory[] = []): AdventureMap {
  const byParent = childrenOf(turns);
  const byId = new Map(turns.map((t) => [t.id, t]));
  const current = new Set(ancestry(byId, headTurnId).map((t) => t.id));
  const told = memoriesByTurn(memories, byId);

  // Run starts, in the order they were played; each turn's place among its siblings on the way.
  const position = new Map<string, { index: number; count: number; alternative: MapNode['alternative'] }>();
  const starts: Turn[] = [];
  for (const [parentId, children] of byParent) {
    children.forEach((child, i) => {
      // Every root starts a run; so does each younger child.
      const swipe = children.slice(0, i).some((older) => older.action.kind === child.action.kind && older.action.text.trim() === child.action.text.trim());
      position.set(child.id, { index: i + 1, count: children.length, alternative: i === 0 ? null : swipe ? 'swipe' : 'fork' });
      if (i > 0 || parentId === null) starts.push(child);
    });
  }
  // Every start is younger than the first root (it descends from a root or is one), so that run is column 0.
  const order = new Map(turns.map((t, i) => [t.id, i]));
  starts.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.depth - b.depth || order.get(a.id)! - order.get(b.id)!);

  const nodes: MapNode[] = [];
  const edges: MapEdge[] = [];
  let rows = 0;
  starts.forEach((start, column) => {
    for (let turn: Turn | undefined = start; turn; turn = byParent.get(turn.id)?.[0]) {
      const { index, count, alternative } = position.get(turn.id)!;
      nodes.push({
        id: turn.id,
        parentId: turn.parentId,
        row: turn.depth,
        column,
        number: turn.depth + 1,
        actionKind: turn.action.kind,
        action: turn.action.text,
        summary: told.get(turn.id) ?? replySummary(turn),
        status: turn.status,
        current: current.has(turn.id),
        head: turn.id === headTurnId,
        alternative,
        siblings: { index, count },
      });
      if (turn.parentId !== null) edges.push({ from: turn.parentId, to: turn.id, current: current.has(turn.id) });
      rows = Math.max(rows, turn.depth + 1);
    }
  });
  return { nodes, edges, columns: starts.length, rows };
}
