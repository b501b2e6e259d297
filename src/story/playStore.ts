import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { CAMPAIGN_FILE, type Campaign } from '../knowledge/campaign';
import { THIS_PROCESS, parseProcessOwner, processOwnerAlive } from '../knowledge/files';
import { DamagedPlayError, PLAY_MIGRATIONS, openDatabase, readStoredStatSchema, statementCache, storyProblem, turnLinkProblem, type Db } from '../knowledge/indexing';
import type { RetrievalRecord } from '../knowledge/retrieval';
import { latestLeaf } from './branches';
import type { ResearchRecord } from './types';
import { initialState, normalizeState, parseStatSchema, StatSchemaError, type StatSchema, type WorldState } from './worldState';
import type {
  ActionKind,
  Adventure,
  AssembledContext,
  ChatMessage,
  ContextSection,
  Memory,
  Persona,
  PlayerAction,
  PromptSnapshot,
  StorySummary,
  Turn,
  TurnStatus,
  TurnWorldInfo,
} from './types';

interface AdventureRow {
  id: string;
  campaign_id: string;
  title: string;
  persona_name: string;
  persona_pronouns: string;
  persona_desc: string;
  plot_essentials: string;
  authors_note: string;
  stat_schema: string;
  head_turn_id: string | null;
  created_at: string;
  updated_at: string;
  /** The adventure the head turn belongs to (read with the row), which must be this one. */
  head_owner: string | null;
}

/**
 * Adventures as the store reads them: with the adventure of the head turn, to check it is their own. A
 * subquery, not a LEFT JOIN: SQLite compiles a LEFT JOIN filtered by a bound id again at every run (and
 * better-sqlite3 builds its row maker again), a quarter of a warm turn's preview on the SRD.
 */
const ADVENTURES = 'SELECT a.*, (SELECT h.adventure_id FROM turns h WHERE h.id = a.head_turn_id) AS head_owner FROM adventures a';

interface TurnRow {
  id: string;
  adventure_id: string;
  parent_id: string | null;
  depth: number;
  action_kind: string;
  action: string;
  narration: string;
  status: string;
  error: string | null;
  model: string | null;
  state_delta: string | null;
  state_after: string;
  refusals: string;
  prompt_eval_count: number | null;
  eval_count: number | null;
  created_at: string;
  updated_at: string;
}

interface MemoryRow {
  id: string;
  adventure_id: string;
  anchor_turn_id: string | null;
  source_start: number | null;
  source_end: number | null;
  text: string;
  pinned: number;
  retrieved_count: number;
  created_at: string;
  updated_at: string;
}

export const INTERRUPTED_MESSAGE = 'interrupted: the app stopped while this turn was being generated';

export interface NewAdventure {
  campaignId: string;
  title: string;
  persona?: Partial<Persona>;
  plotEssentials?: string;
  authorsNote?: string;
  statSchema?: unknown;
}

/**
 * A new adventure of the campaign, tracking what its campaign.yaml's `stats:` declares. A bad block is
 * refused naming the file and the path inside it, and no adventure is written.
 */
export function campaignAdventure(campaign: Pick<Campaign, 'id' | 'root' | 'stats'>, title: string): NewAdventure {
  try {
    return { campaignId: campaign.id, title, statSchema: parseStatSchema(campaign.stats) };
  } catch (error) {
    if (error instanceof StatSchemaError) throw new StatSchemaError(`${path.join(campaign.root, CAMPAIGN_FILE)}: stats: ${error.message.replace(/^stat schema: /, '')}`);
    throw error;
  }
}

export interface AdventurePatch {
  title?: string;
  persona?: Partial<Persona>;
  plotEssentials?: string;
  authorsNote?: string;
  statSchema?: unknown;
}

/** What deleteBranch or deleteAdventure took out of play.db: every row, so restore can put it back exactly. */
export interface DeletedPlay {
  adventureId: string;
  headBefore: string | null;
  /** The adventure's own row, when the whole adventure went. */
  adventure?: Record<string, unknown>;
  turns: Record<string, unknown>[];
  snapshots: Record<string, unknown>[];
  turnPassages: Record<string, unknown>[];
  memories: Record<string, unknown>[];
  summaries: Record<string, unknown>[];
}

export interface TurnResult {
  status: Exclude<TurnStatus, 'pending' | 'streaming'>;
  narration: string;
  error: string | null;
  stateDelta: Record<string, unknown> | null;
  stateAfter: WorldState;
  refusals: string[];
  promptEvalCount: number | null;
  evalCount: number | null;
}

let lastStamp = 0;
/** Timestamps that never repeat within a process: turns made in the same millisecond still say which came first. */
const now = () => {
  lastStamp = Math.max(Date.now(), lastStamp + 1);
  return new Date(lastStamp).toISOString();
};

/** An adventure row as the story reads it; one whose stat schema or head cannot be read is named as damaged in `file`. */
function toAdventure(row: AdventureRow, file: string): Adventure {
  const damaged = (reason: string) => new DamagedPlayError(file, { adventureId: row.id, turnId: null, reason });
  if (row.head_turn_id !== null && row.head_owner !== row.id) {
    throw damaged(row.head_owner === null ? `its head turn ${row.head_turn_id} is not a turn of this play data` : `its head turn ${row.head_turn_id} belongs to another adventure (${row.head_owner})`);
  }
  let statSchema: StatSchema;
  try {
    statSchema = readStoredStatSchema(row.stat_schema);
  } catch (error) {
    if (error instanceof StatSchemaError) throw damaged(error.message);
    throw error;
  }
  return {
    id: row.id,
    campaignId: row.campaign_id,
    title: row.title,
    persona: { name: row.persona_name, pronouns: row.persona_pronouns, description: row.persona_desc },
    plotEssentials: row.plot_essentials,
    authorsNote: row.authors_note,
    statSchema,
    headTurnId: row.head_turn_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function toTurn(row: TurnRow): Turn {
  return {
    id: row.id,
    adventureId: row.adventure_id,
    parentId: row.parent_id,
    depth: row.depth,
    action: { kind: row.action_kind as ActionKind, text: row.action },
    narration: row.narration,
    status: row.status as TurnStatus,
    error: row.error,
    model: row.model,
    stateDelta: row.state_delta === null ? null : (JSON.parse(row.state_delta) as Record<string, unknown>),
    stateAfter: JSON.parse(row.state_after) as WorldState,
    refusals: JSON.parse(row.refusals) as string[],
    promptEvalCount: row.prompt_eval_count,
    evalCount: row.eval_count,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function toMemory(row: MemoryRow): Memory {
  return {
    id: row.id,
    adventureId: row.adventure_id,
    anchorTurnId: row.anchor_turn_id,
    sourceStart: row.source_start,
    sourceEnd: row.source_end,
    text: row.text,
    pinned: row.pinned === 1,
    retrievedCount: row.retrieved_count,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function clean(text: string | undefined, field: string, max: number): string {
  const value = (text ?? '').trim();
  if (value.length > max) throw new RangeError(`${field} is ${value.length} characters; at most ${max} are allowed`);
  return value;
}

/**
 * Where each adventure of a campaign stands now (at the turn the writer is on), read from an open play.db:
 * for surfaces that only read, such as a hover, without opening a second store on the file.
 */
export function currentAdventureStates(db: Db, campaignId: string): { adventure: Adventure; state: WorldState }[] {
  const rows = db
    .prepare(
      `SELECT a.*, t.adventure_id AS head_owner, t.state_after AS head_state FROM adventures a LEFT JOIN turns t ON t.id = a.head_turn_id
       WHERE a.campaign_id = ? ORDER BY a.updated_at DESC, a.rowid DESC`,
    )
    .all(campaignId) as (AdventureRow & { head_state: string | null })[];
  return rows.map((row) => {
    const adventure = toAdventure(row, db.name);
    const schema = adventure.statSchema;
    return { adventure, state: row.head_state === null ? initialState(schema) : normalizeState(schema, JSON.parse(row.head_state) as WorldState) };
  });
}

/**
 * Play data over `<campaign>/.storyteller/play.db`. Every write is its own transaction, and the user's
 * action is stored before any model call, so a crash loses at most the part of a reply not yet flushed.
 */
function mustExist<T>(found: T | undefined, what: string): T {
  if (found === undefined) throw new Error(`no ${what}`);
  return found;
}

export class PlayStore {
  readonly db: Db;

  /** Compiled once per store: the reads every turn's assembly makes would each compile theirs again. */
  private readonly statement: ReturnType<typeof statementCache>;

  /** Opens (and migrates) play.db. Crash recovery is the campaign session's to run, once, when it opens the store. */
  constructor(file: string) {
    this.db = openDatabase(file, PLAY_MIGRATIONS);
    this.statement = statementCache(this.db);
  }

  close(): void {
    this.db.close();
  }

  /**
   * Marks every turn left pending or streaming by a process that is gone (a crash, kill -9, a restart) as
   * cut off; returns how many. A turn another live process is generating (the extension, while the CLI
   * opens the campaign) is its own, so this is safe in any process at any time.
   */
  recoverInterrupted(): number {
    return this.db.transaction(() => {
      const open = this.db.prepare("SELECT id, owner FROM turns WHERE status IN ('pending', 'streaming')").all() as { id: string; owner: string | null }[];
      const mark = this.db.prepare(
        `UPDATE turns SET status = CASE WHEN narration <> '' THEN 'incomplete' ELSE 'error' END, error = ?, owner = NULL, updated_at = ? WHERE id = ?`,
      );
      let recovered = 0;
      for (const turn of open) {
        const owner = turn.owner === null ? undefined : parseProcessOwner(turn.owner);
        if (owner && processOwnerAlive(owner)) continue;
        mark.run(INTERRUPTED_MESSAGE, now(), turn.id);
        recovered++;
      }
      return recovered;
    })();
  }

  // ── adventures ──────────────────────────────────────────────────────────────────────────────────

  createAdventure(input: NewAdventure): Adventure {
    const schema = parseStatSchema(input.statSchema ?? {});
    const id = randomUUID();
    const at = now();
    this.db
      .prepare(
        `INSERT INTO adventures (id, campaign_id, title, persona_name, persona_pronouns, persona_desc, plot_essentials,
           authors_note, stat_schema, head_turn_id, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)`,
      )
      .run(
        id,
        input.campaignId,
        clean(input.title, 'title', 200) || 'Untitled adventure',
        clean(input.persona?.name, 'persona name', 80),
        clean(input.persona?.pronouns, 'persona pronouns', 40),
        clean(input.persona?.description, 'persona description', 4000),
        input.plotEssentials?.trim() ?? '',
        input.authorsNote?.trim() ?? '',
        JSON.stringify(schema),
        at,
        at,
      );
    return this.adventure(id);
  }

  getAdventure(id: string): Adventure | undefined {
    const row = this.statement(`${ADVENTURES} WHERE a.id = ?`).get(id) as AdventureRow | undefined;
    return row && toAdventure(row, this.db.name);
  }

  /** Like getAdventure, for ids that must exist. */
  adventure(id: string): Adventure {
    return mustExist(this.getAdventure(id), `adventure with id ${id}`);
  }

  listAdventures(campaignId?: string): Adventure[] {
    const rows = (
      campaignId === undefined
        ? this.db.prepare(`${ADVENTURES} ORDER BY a.updated_at DESC, a.rowid DESC`).all()
        : this.db.prepare(`${ADVENTURES} WHERE a.campaign_id = ? ORDER BY a.updated_at DESC, a.rowid DESC`).all(campaignId)
    ) as AdventureRow[];
    return rows.map((row) => toAdventure(row, this.db.name));
  }

  /** The writer's edits. The model has no path here: its output only ever reaches turns. */
  updateAdventure(id: string, patch: AdventurePatch): Adventure {
    const current = this.adventure(id);
    const persona = { ...current.persona, ...patch.persona };
    const schema: StatSchema = patch.statSchema === undefined ? current.statSchema : parseStatSchema(patch.statSchema);
    this.db
      .prepare(
        `UPDATE adventures SET title = ?, persona_name = ?, persona_pronouns = ?, persona_desc = ?, plot_essentials = ?,
           authors_note = ?, stat_schema = ?, updated_at = ? WHERE id = ?`,
      )
      .run(
        patch.title === undefined ? current.title : clean(patch.title, 'title', 200) || current.title,
        clean(persona.name, 'persona name', 80),
        clean(persona.pronouns, 'persona pronouns', 40),
        clean(persona.description, 'persona description', 4000),
        patch.plotEssentials?.trim() ?? current.plotEssentials,
        patch.authorsNote?.trim() ?? current.authorsNote,
        JSON.stringify(schema),
        now(),
        id,
      );
    return this.adventure(id);
  }

  /** Deletes the adventure with everything played in it, in one transaction; returns it all, for restore. */
  deleteAdventure(id: string): DeletedPlay {
    const turnIds = (this.db.prepare('SELECT id FROM turns WHERE adventure_id = ?').all(id) as { id: string }[]).map((r) => r.id);
    const rowsOf = (sql: string, keys: readonly string[]) => keys.flatMap((key) => this.db.prepare(sql).all(key) as Record<string, unknown>[]);
    const deleted: DeletedPlay = {
      adventureId: id,
      headBefore: this.adventure(id).headTurnId,
      adventure: this.db.prepare('SELECT * FROM adventures WHERE id = ?').get(id) as Record<string, unknown>,
      turns: rowsOf('SELECT * FROM turns WHERE adventure_id = ?', [id]),
      snapshots: rowsOf('SELECT * FROM prompt_snapshots WHERE turn_id = ?', turnIds),
      turnPassages: rowsOf('SELECT * FROM turn_passages WHERE turn_id = ?', turnIds),
      memories: rowsOf('SELECT * FROM memories WHERE adventure_id = ?', [id]),
      summaries: rowsOf('SELECT * FROM story_summaries WHERE adventure_id = ?', [id]),
    };
    this.db.transaction(() => {
      // Memories and summaries point at turns; they go first so the cascade has nothing left to trip on.
      this.db.prepare('DELETE FROM story_summaries WHERE adventure_id = ?').run(id);
      this.db.prepare('DELETE FROM memories WHERE adventure_id = ?').run(id);
      this.db.prepare('UPDATE adventures SET head_turn_id = NULL WHERE id = ?').run(id);
      // One statement: SQLite checks the parent_id references once it has finished, with no turn left.
      this.db.prepare('DELETE FROM turns WHERE adventure_id = ?').run(id);
      this.db.prepare('DELETE FROM adventures WHERE id = ?').run(id);
    })();
    return deleted;
  }

  /**
   * Deletes a turn and every turn after it on its branches, with their prompt snapshots, the passages they
   * retrieved and the memories and summaries anchored in them, in one transaction. A head inside moves to the
   * newest reply beside the turn, else to its parent. Returns everything deleted, for restoreBranch.
   */
  deleteBranch(turnId: string): DeletedPlay {
    const turn = this.turn(turnId);
    const adventure = this.adventure(turn.adventureId);
    const all = this.allTurns(turn.adventureId);
    const ids = new Set([turnId]);
    for (const t of all) if (t.parentId !== null && ids.has(t.parentId)) ids.add(t.id);
    const list = [...ids];
    const rowsOf = (sql: string) => list.flatMap((id) => this.db.prepare(sql).all(id) as Record<string, unknown>[]);
    const deleted: DeletedPlay = {
      adventureId: turn.adventureId,
      headBefore: adventure.headTurnId,
      turns: rowsOf('SELECT * FROM turns WHERE id = ?'),
      snapshots: rowsOf('SELECT * FROM prompt_snapshots WHERE turn_id = ?'),
      turnPassages: rowsOf('SELECT * FROM turn_passages WHERE turn_id = ?'),
      memories: rowsOf('SELECT * FROM memories WHERE anchor_turn_id = ?'),
      summaries: rowsOf('SELECT * FROM story_summaries WHERE anchor_turn_id = ?'),
    };
    const headInside = adventure.headTurnId !== null && ids.has(adventure.headTurnId);
    const beside = all.filter((t) => t.parentId === turn.parentId && t.id !== turnId).at(-1);
    const newHead = !headInside ? adventure.headTurnId : beside ? latestLeaf(all.filter((t) => !ids.has(t.id)), beside.id).id : turn.parentId;
    this.db.transaction(() => {
      this.db.prepare('UPDATE adventures SET head_turn_id = ?, updated_at = ? WHERE id = ?').run(newHead, now(), turn.adventureId);
      for (const id of list) {
        this.db.prepare('DELETE FROM story_summaries WHERE anchor_turn_id = ?').run(id);
        this.db.prepare('DELETE FROM memories WHERE anchor_turn_id = ?').run(id);
      }
      // Deepest first: no turn is deleted while a child still points at it.
      const deepestFirst = [...deleted.turns].sort((a, b) => Number(b.depth) - Number(a.depth));
      for (const row of deepestFirst) this.db.prepare('DELETE FROM turns WHERE id = ?').run(row.id);
    })();
    return deleted;
  }

  /** Puts a deleted branch or adventure back as it was, and the head where it stood. */
  restore(deleted: DeletedPlay): void {
    const insert = (table: string, row: Record<string, unknown>) => {
      const columns = Object.keys(row);
      this.db.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`).run(...columns.map((c) => row[c]));
    };
    this.db.transaction(() => {
      if (deleted.adventure) insert('adventures', { ...deleted.adventure, head_turn_id: null });
      for (const row of [...deleted.turns].sort((a, b) => Number(a.depth) - Number(b.depth))) insert('turns', row);
      for (const row of deleted.snapshots) insert('prompt_snapshots', row);
      for (const row of deleted.turnPassages) insert('turn_passages', row);
      for (const row of deleted.memories) insert('memories', row);
      for (const row of deleted.summaries) insert('story_summaries', row);
      this.db.prepare('UPDATE adventures SET head_turn_id = ?, updated_at = ? WHERE id = ?').run(deleted.headBefore, now(), deleted.adventureId);
    })();
  }

  setHead(adventureId: string, turnId: string | null): void {
    if (turnId !== null) {
      const turn = this.turn(turnId);
      if (turn.adventureId !== adventureId) throw new Error(`turn ${turnId} belongs to another adventure`);
    }
    this.db.prepare('UPDATE adventures SET head_turn_id = ?, updated_at = ? WHERE id = ?').run(turnId, now(), adventureId);
  }

  // ── turns ───────────────────────────────────────────────────────────────────────────────────────

  /** Stores the action first: whatever happens to the model call, what the writer typed is kept. */
  createTurn(input: { adventureId: string; parentId: string | null; action: PlayerAction; model: string | null; stateAfter: WorldState }): Turn {
    const parent = input.parentId === null ? null : this.turn(input.parentId);
    if (parent && parent.adventureId !== input.adventureId) throw new Error(`turn ${parent.id} belongs to another adventure`);
    const id = randomUUID();
    const at = now();
    this.db.transaction(() => {
      this.db
        .prepare(
          `INSERT INTO turns (id, adventure_id, parent_id, depth, action_kind, action, status, model, state_after, owner, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?)`,
        )
        .run(id, input.adventureId, input.parentId, parent ? parent.depth + 1 : 0, input.action.kind, input.action.text, input.model, JSON.stringify(input.stateAfter), THIS_PROCESS, at, at);
      this.db.prepare('UPDATE adventures SET head_turn_id = ?, updated_at = ? WHERE id = ?').run(id, at, input.adventureId);
    })();
    return this.turn(id);
  }

  getTurn(id: string): Turn | undefined {
    const row = this.statement('SELECT * FROM turns WHERE id = ?').get(id) as TurnRow | undefined;
    return row && toTurn(row);
  }

  turn(id: string): Turn {
    return mustExist(this.getTurn(id), `turn with id ${id}`);
  }

  /** Children of a turn (or the roots, for null), oldest first: retries and forks are siblings. */
  children(adventureId: string, parentId: string | null): Turn[] {
    const rows = (
      parentId === null
        ? this.db.prepare('SELECT * FROM turns WHERE adventure_id = ? AND parent_id IS NULL ORDER BY created_at, rowid').all(adventureId)
        : this.db.prepare('SELECT * FROM turns WHERE adventure_id = ? AND parent_id = ? ORDER BY created_at, rowid').all(adventureId, parentId)
    ) as TurnRow[];
    return rows.map(toTurn);
  }

  /**
   * Every turn of the adventure, for drawing the tree; every surface walks its branches in memory, so the
   * story is checked first and a damaged one named (DamagedPlayError) rather than walked.
   */
  allTurns(adventureId: string): Turn[] {
    const problem = storyProblem(this.db, adventureId);
    if (problem) throw new DamagedPlayError(this.db.name, problem);
    return (this.db.prepare('SELECT * FROM turns WHERE adventure_id = ? ORDER BY depth, created_at, rowid').all(adventureId) as TurnRow[]).map(toTurn);
  }

  /**
   * Root first, ending at the turn: the one story this branch has lived. Every branch walk is this one. A
   * parent is followed only one step up, within the adventure, so the depth falls at each step and the walk
   * ends on any data (a cycle, a parent elsewhere); a branch that does not reach the first turn that way is
   * damaged, and named (DamagedPlayError).
   */
  lineage(turnId: string | null): Turn[] {
    if (turnId === null) return [];
    const rows = this.statement(
      `WITH RECURSIVE up(id, parent_id, adventure_id, depth) AS (
         SELECT id, parent_id, adventure_id, depth FROM turns WHERE id = ?
         UNION ALL
         SELECT t.id, t.parent_id, t.adventure_id, t.depth FROM turns t JOIN up ON t.id = up.parent_id
         WHERE t.adventure_id = up.adventure_id AND t.depth = up.depth - 1)
       SELECT turns.* FROM turns JOIN up ON turns.id = up.id ORDER BY turns.depth`,
    ).all(turnId) as TurnRow[];
    const first = rows[0];
    if (first && (first.parent_id !== null || first.depth !== 0)) {
      throw new DamagedPlayError(this.db.name, turnLinkProblem(this.db, first.id) ?? { adventureId: first.adventure_id, turnId: first.id, reason: 'its branch does not reach the adventure\'s first turn' });
    }
    return rows.map(toTurn);
  }

  markStreaming(turnId: string): void {
    this.db.prepare("UPDATE turns SET status = 'streaming', updated_at = ? WHERE id = ?").run(now(), turnId);
  }

  /** Flushes the reply so far, so a crash mid-stream keeps it (recovered as incomplete on next open). */
  saveProgress(turnId: string, narration: string): void {
    this.db.prepare("UPDATE turns SET narration = ?, updated_at = ? WHERE id = ? AND status = 'streaming'").run(narration, now(), turnId);
  }

  finishTurn(turnId: string, result: TurnResult): Turn {
    this.db
      .prepare(
        `UPDATE turns SET status = ?, narration = ?, error = ?, state_delta = ?, state_after = ?, refusals = ?,
           prompt_eval_count = ?, eval_count = ?, owner = NULL, updated_at = ? WHERE id = ?`,
      )
      .run(
        result.status,
        result.narration,
        result.error,
        result.stateDelta === null ? null : JSON.stringify(result.stateDelta),
        JSON.stringify(result.stateAfter),
        JSON.stringify(result.refusals),
        result.promptEvalCount,
        result.evalCount,
        now(),
        turnId,
      );
    return this.turn(turnId);
  }

  // ── prompt snapshots ────────────────────────────────────────────────────────────────────────────

  /**
   * Freezes what the turn is given, before generation. Rendered text is stored, not passage ids, so the
   * turn stays readable after its sources are edited or deleted. Written once: a second write fails.
   */
  writeSnapshot(turnId: string, context: AssembledContext, model: string | null): void {
    const at = now();
    this.db.transaction(() => {
      this.db
        .prepare('INSERT INTO prompt_snapshots (turn_id, sections, messages, retrieval, total_tokens, model, created_at, research) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
        .run(turnId, JSON.stringify(context.sections), JSON.stringify(context.messages), JSON.stringify(context.retrieval), context.budget.used, model, at, context.research ? JSON.stringify(context.research) : null);
      const insert = this.db.prepare(
        'INSERT OR IGNORE INTO turn_passages (turn_id, passage_id, source_id, selected, reason) VALUES (?, ?, ?, ?, ?)',
      );
      for (const c of context.retrieval.candidates) insert.run(turnId, c.passageId, c.sourceId, c.outcome === 'selected' ? 1 : 0, c.reason);
      const wi = context.retrieval.worldInfo;
      if (wi) this.db.prepare('UPDATE turns SET world_info = ? WHERE id = ?').run(JSON.stringify({ seed: wi.seed, chatLength: wi.chatLength, state: wi.state } satisfies TurnWorldInfo), turnId);
    })();
  }

  /**
   * The World Info a branch carries after its last turn: the newest turn of the lineage that recorded any
   * (a turn that failed before its prompt recorded none). Undo, retry, edit and fork all read it through
   * the lineage they continue, so timed effects rewind with them.
   */
  worldInfoAfter(lineage: readonly Turn[]): TurnWorldInfo | null {
    if (lineage.length === 0) return null;
    const newest = 'SELECT world_info FROM turns WHERE id IN (SELECT value FROM json_each(?)) AND world_info IS NOT NULL ORDER BY depth DESC LIMIT 1';
    const row = this.statement(newest).get(JSON.stringify(lineage.map((t) => t.id))) as { world_info: string } | undefined;
    return row ? (JSON.parse(row.world_info) as TurnWorldInfo) : null;
  }

  getSnapshot(turnId: string): PromptSnapshot | undefined {
    const row = this.db.prepare('SELECT * FROM prompt_snapshots WHERE turn_id = ?').get(turnId) as
      | { turn_id: string; sections: string; messages: string; retrieval: string; total_tokens: number; model: string | null; created_at: string; research: string | null }
      | undefined;
    if (!row) return undefined;
    return {
      turnId: row.turn_id,
      sections: JSON.parse(row.sections) as ContextSection[],
      messages: JSON.parse(row.messages) as ChatMessage[],
      retrieval: JSON.parse(row.retrieval) as RetrievalRecord,
      totalTokens: row.total_tokens,
      model: row.model,
      createdAt: row.created_at,
      ...(row.research ? { research: JSON.parse(row.research) as ResearchRecord } : {}),
    };
  }

  /** Turns whose retrieval selected the passage, newest first ("retrieved by N turns"). */
  turnsUsingPassage(passageId: string): string[] {
    return (
      this.db
        .prepare('SELECT tp.turn_id FROM turn_passages tp JOIN turns t ON t.id = tp.turn_id WHERE tp.passage_id = ? AND tp.selected = 1 ORDER BY t.created_at DESC')
        .all(passageId) as { turn_id: string }[]
    ).map((r) => r.turn_id);
  }

  // ── memories and summaries ──────────────────────────────────────────────────────────────────────

  addMemory(input: { adventureId: string; anchorTurnId: string | null; sourceStart: number | null; sourceEnd: number | null; text: string; pinned?: boolean }): Memory {
    const id = randomUUID();
    const at = now();
    this.db
      .prepare(
        `INSERT INTO memories (id, adventure_id, anchor_turn_id, source_start, source_end, text, pinned, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(id, input.adventureId, input.anchorTurnId, input.sourceStart, input.sourceEnd, input.text.trim(), input.pinned ? 1 : 0, at, at);
    return this.memory(id);
  }

  memory(id: string): Memory {
    const row = this.db.prepare('SELECT * FROM memories WHERE id = ?').get(id) as MemoryRow | undefined;
    if (!row) throw new Error(`no memory with id ${id}`);
    return toMemory(row);
  }

  listMemories(adventureId: string): Memory[] {
    return (this.statement('SELECT * FROM memories WHERE adventure_id = ? ORDER BY created_at, rowid').all(adventureId) as MemoryRow[]).map(toMemory);
  }

  /**
   * Memories this branch may see: written on its own lineage (anchored at one of its turns), or typed by
   * the writer for the whole adventure. Memories of abandoned branches never leak in.
   */
  memoriesForLineage(adventureId: string, lineage: readonly Turn[]): Memory[] {
    const ids = new Set(lineage.map((t) => t.id));
    return this.listMemories(adventureId).filter((m) => m.anchorTurnId === null || ids.has(m.anchorTurnId));
  }

  setMemoryPinned(id: string, pinned: boolean): Memory {
    this.db.prepare('UPDATE memories SET pinned = ?, updated_at = ? WHERE id = ?').run(pinned ? 1 : 0, now(), id);
    return this.memory(id);
  }

  /** Replaces the text in place: pin, retrieval count and anchor stay; a stored vector would be stale. */
  rewriteMemoryText(id: string, text: string): Memory {
    this.db.prepare('UPDATE memories SET text = ?, embedding = NULL, embed_model = NULL, updated_at = ? WHERE id = ?').run(text.trim(), now(), id);
    return this.memory(id);
  }

  deleteMemory(id: string): void {
    this.db.prepare('DELETE FROM memories WHERE id = ?').run(id);
  }

  markMemoriesRetrieved(ids: readonly string[]): void {
    const update = this.db.prepare('UPDATE memories SET retrieved_count = retrieved_count + 1 WHERE id = ?');
    this.db.transaction(() => ids.forEach((id) => update.run(id)))();
  }

  putSummary(adventureId: string, anchorTurnId: string, text: string): StorySummary {
    const at = now();
    this.db
      .prepare('INSERT INTO story_summaries (adventure_id, anchor_turn_id, text, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET text = excluded.text, created_at = excluded.created_at')
      .run(adventureId, anchorTurnId, text.trim(), at);
    return { adventureId, anchorTurnId, text: text.trim(), createdAt: at };
  }

  /** The newest summary written on this lineage. */
  summaryForLineage(adventureId: string, lineage: readonly Turn[]): StorySummary | undefined {
    const depthOf = new Map(lineage.map((t) => [t.id, t.depth]));
    const rows = this.statement('SELECT * FROM story_summaries WHERE adventure_id = ?').all(adventureId) as {
      adventure_id: string;
      anchor_turn_id: string;
      text: string;
      created_at: string;
    }[];
    const best = rows.filter((r) => depthOf.has(r.anchor_turn_id)).sort((a, b) => depthOf.get(b.anchor_turn_id)! - depthOf.get(a.anchor_turn_id)!)[0];
    return best && { adventureId: best.adventure_id, anchorTurnId: best.anchor_turn_id, text: best.text, createdAt: best.created_at };
  }

  // ── token calibration ───────────────────────────────────────────────────────────────────────────

  getCalibration(model: string): { factor: number; samples: number } | undefined {
    return this.statement('SELECT factor, samples FROM token_calibration WHERE model = ?').get(model) as { factor: number; samples: number } | undefined;
  }

  saveCalibration(model: string, factor: number, samples: number): void {
    this.db
      .prepare('INSERT INTO token_calibration (model, factor, samples, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET factor = excluded.factor, samples = excluded.samples, updated_at = excluded.updated_at')
      .run(model, factor, samples, now());
  }
}
