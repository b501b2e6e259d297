import { parseStatSchema, StatSchemaError, type StatSchema } from '../campaign';
import type { Db } from './sqlite';

/**
 * Play data read as a story: every turn's parent is a turn of the same adventure one step nearer its start,
 * the first turn has none, and an adventure's head and memories point at its own turns. Rows that come from
 * outside (a bundle) pass `playDataProblem` before they are kept; the store asks `storyProblem` of what it
 * reads, so a play.db damaged by hand is named, never walked forever.
 */

export interface PlayStoryProblem {
  adventureId: string | null;
  turnId: string | null;
  reason: string;
}

/** Play data whose story cannot be read; the message names the file, the adventure, the turn and why. */
export class DamagedPlayError extends Error {
  constructor(
    readonly file: string,
    readonly problem: PlayStoryProblem,
  ) {
    super(`${file} is damaged: ${describePlayProblem(problem)}. Restore the campaign from a bundle or a backup, or delete the adventure`);
  }
}

export function describePlayProblem(problem: PlayStoryProblem): string {
  const where = [problem.adventureId === null ? '' : `adventure ${problem.adventureId}`, problem.turnId === null ? '' : `turn ${problem.turnId}`].filter(Boolean);
  return `${where.join(', ')}${where.length > 0 ? ': ' : ''}${problem.reason}`;
}

/** An adventure's stored stat schema, or a StatSchemaError saying which field cannot be read and why. */
export function readStoredStatSchema(text: string): StatSchema {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new StatSchemaError(`stat_schema is not readable JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  try {
    return parseStatSchema(data);
  } catch (error) {
    if (error instanceof StatSchemaError) throw new StatSchemaError(`stat_schema is not a stat schema (${error.message.replace(/^stat schema: /, '')})`);
    throw error;
  }
}

interface TurnLink {
  id: string;
  adventure_id: string;
  parent_id: string | null;
  depth: unknown;
}

/** How far a list of turns in a message goes before "…". */
const NAMED_TURNS = 6;

/**
 * Why the turn's link to its parent breaks the story, or undefined when it holds. A parent is one step up:
 * a turn of the same adventure exactly one shallower; the first turn has none and depth 0.
 */
export function turnLinkProblem(db: Db, turnId: string): PlayStoryProblem | undefined {
  const link = db.prepare('SELECT id, adventure_id, parent_id, depth FROM turns WHERE id = ?');
  const turn = link.get(turnId) as TurnLink | undefined;
  if (!turn) return undefined;
  const at = (reason: string): PlayStoryProblem => ({ adventureId: turn.adventure_id, turnId: turn.id, reason });
  if (typeof turn.depth !== 'number' || !Number.isInteger(turn.depth) || turn.depth < 0) return at(`its depth ${JSON.stringify(turn.depth)} is not a whole number of steps from the start`);
  if (turn.parent_id === null) return turn.depth === 0 ? undefined : at(`it has no parent, so it starts the adventure, but its depth is ${turn.depth}, not 0`);
  if (turn.parent_id === turn.id) return at('it is its own parent');
  // Up the parents, each turn once: coming back to one already passed is a cycle with no start.
  const passed = new Map([[turn.id, 0]]);
  for (let up = link.get(turn.parent_id) as TurnLink | undefined; up; up = up.parent_id === null ? undefined : (link.get(up.parent_id) as TurnLink | undefined)) {
    const again = passed.get(up.id);
    if (again !== undefined) {
      const loop = [...[...passed.keys()].slice(again), up.id];
      const named = loop.length > NAMED_TURNS ? [...loop.slice(0, NAMED_TURNS - 1), '…', up.id] : loop;
      return at(`its parents form a cycle (${named.join(' → ')}), so its branch never reaches the adventure's start`);
    }
    passed.set(up.id, passed.size);
  }
  const parent = link.get(turn.parent_id) as TurnLink | undefined;
  if (!parent) return at(`its parent ${turn.parent_id} is not a turn of this play data`);
  if (parent.adventure_id !== turn.adventure_id) return at(`its parent ${parent.id} belongs to another adventure (${parent.adventure_id})`);
  if (parent.depth !== turn.depth - 1) return at(`its depth is ${turn.depth}, but its parent ${parent.id} is at depth ${JSON.stringify(parent.depth)}: a turn is one step deeper than its parent`);
  return undefined;
}

/**
 * The first way the play data's story is broken, or undefined: turns' links to their parents, the heads,
 * memories and summaries anchored at another adventure's turns, and stat schemas that cannot be read.
 * Over one adventure when `adventureId` is given (what the store reads), else over all of them.
 */
export function storyProblem(db: Db, adventureId?: string): PlayStoryProblem | undefined {
  const only = (column: string) => (adventureId === undefined ? '' : `AND ${column} = @adventureId`);
  const params = adventureId === undefined ? {} : { adventureId };
  const adventures = db.prepare(`SELECT id, stat_schema FROM adventures WHERE 1 ${only('id')} ORDER BY rowid`).all(params) as { id: string; stat_schema: string }[];
  for (const adventure of adventures) {
    try {
      readStoredStatSchema(adventure.stat_schema);
    } catch (error) {
      if (!(error instanceof StatSchemaError)) throw error;
      return { adventureId: adventure.id, turnId: null, reason: error.message };
    }
  }
  // One pass finds a link that does not hold; the turn's own check says why (and finds a cycle through it).
  // A parent that is missing, elsewhere or the turn itself is named before the depths it puts out of step.
  const broken = db
    .prepare(
      `SELECT t.id FROM turns t LEFT JOIN turns p ON p.id = t.parent_id
       WHERE NOT (CASE WHEN t.parent_id IS NULL THEN t.depth IS 0
                       ELSE p.adventure_id IS t.adventure_id AND typeof(t.depth) = 'integer' AND p.depth IS t.depth - 1 END) ${only('t.adventure_id')}
       ORDER BY (t.parent_id IS NOT NULL AND (p.adventure_id IS NOT t.adventure_id OR p.id = t.id)) DESC, t.rowid LIMIT 1`,
    )
    .get(params) as { id: string } | undefined;
  if (broken) return turnLinkProblem(db, broken.id) ?? { adventureId: null, turnId: broken.id, reason: 'its link to its parent does not hold' };
  const head = db
    .prepare(
      `SELECT a.id, a.head_turn_id, h.adventure_id AS owner FROM adventures a LEFT JOIN turns h ON h.id = a.head_turn_id
       WHERE a.head_turn_id IS NOT NULL AND h.adventure_id IS NOT a.id ${only('a.id')} ORDER BY a.rowid LIMIT 1`,
    )
    .get(params) as { id: string; head_turn_id: string; owner: string | null } | undefined;
  if (head) {
    const reason = head.owner === null ? `its head turn ${head.head_turn_id} is not a turn of this play data` : `its head turn ${head.head_turn_id} belongs to another adventure (${head.owner})`;
    return { adventureId: head.id, turnId: null, reason };
  }
  for (const [table, what] of [
    ['memories', 'a memory'],
    ['story_summaries', 'a story summary'],
  ] as const) {
    const anchored = db
      .prepare(
        `SELECT m.adventure_id, m.anchor_turn_id, t.adventure_id AS owner FROM ${table} m JOIN turns t ON t.id = m.anchor_turn_id
         WHERE t.adventure_id IS NOT m.adventure_id ${only('m.adventure_id')} LIMIT 1`,
      )
      .get(params) as { adventure_id: string; anchor_turn_id: string; owner: string } | undefined;
    if (anchored) return { adventureId: anchored.adventure_id, turnId: null, reason: `${what} is anchored at turn ${anchored.anchor_turn_id} of another adventure (${anchored.owner})` };
  }
  return undefined;
}

/** JSON the story parses from each play row, by table: the row's own key, its adventure, and the columns. */
const JSON_COLUMNS = [
  { table: 'turns', turn: 'id', adventure: 'adventure_id', columns: ['state_after', 'refusals', 'state_delta', 'world_info'] },
  { table: 'prompt_snapshots', turn: 'turn_id', adventure: '(SELECT adventure_id FROM turns WHERE id = turn_id)', columns: ['sections', 'messages', 'retrieval', 'research'] },
] as const;

/**
 * The one check every play row from outside passes before it is kept: the story (`storyProblem`), then the
 * JSON each row carries for the story to read. Run on a database migrated to the newest schema.
 */
export function playDataProblem(db: Db): PlayStoryProblem | undefined {
  const story = storyProblem(db);
  if (story) return story;
  for (const { table, turn, adventure, columns } of JSON_COLUMNS) {
    for (const column of columns) {
      const bad = db
        .prepare(`SELECT ${turn} AS turn, ${adventure} AS adventure FROM ${table} WHERE ${column} IS NOT NULL AND NOT json_valid(${column}) ORDER BY rowid LIMIT 1`)
        .get() as { turn: string | null; adventure: string | null } | undefined;
      if (bad) return { adventureId: bad.adventure, turnId: bad.turn, reason: `${table}.${column} is not readable JSON` };
    }
  }
  return undefined;
}
