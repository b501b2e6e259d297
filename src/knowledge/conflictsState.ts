import type { EntityNames, FactStatement } from './facts';
import { attributeKey, valueKey, valuesConflict } from './factsNormalize';

/**
 * Canon versus the story as played (seed 000 §44): canon says the north gate is open, play collapsed it.
 * That is not a conflict to fix — the canon was the starting point — but the prompt must not keep
 * re-asserting the stale statement as current truth. The story engine asks which canon facts the current
 * state supersedes and drops those lines from the passages it sends.
 */

/** One fact of the current world state, about a named entity. */
export interface WorldFact {
  entity: string;
  /** Absent: the entity's condition as a whole (`bridge = destroyed`). */
  attribute?: string;
  value: string;
  /** Where it came from, for the reason shown to the writer (`world.bridge`). */
  statePath?: string;
}

export interface StateSupersession {
  statement: FactStatement;
  current: WorldFact;
}

/** Attributes that describe an entity's condition, which a bare `bridge = destroyed` state speaks to. */
const CONDITION_ATTRIBUTES = new Set(['status', 'state', 'condition'].map(attributeKey));

/**
 * World state paths as the story engine keeps them (`world.north_gate`, `npc.gwen.mood`) → facts about
 * entities. `npcNames` maps an npc id to its display name so `npc.gwen.*` meets canon about "Gwen".
 * Flags and milestones are booleans about the plot, not about an entity, and are skipped.
 */
export function worldFactsFromState(state: Record<string, number | string | boolean>, npcNames: Record<string, string> = {}): WorldFact[] {
  const facts: WorldFact[] = [];
  for (const [statePath, raw] of Object.entries(state)) {
    const value = String(raw);
    const parts = statePath.split('.');
    if (parts[0] === 'world' && parts.length === 2) facts.push({ entity: parts[1]!, value, statePath });
    else if (parts[0] === 'world' && parts.length >= 3) facts.push({ entity: parts[1]!, attribute: parts.slice(2).join(' '), value, statePath });
    else if (parts[0] === 'npc' && parts.length >= 3) facts.push({ entity: npcNames[parts[1]!] ?? parts[1]!, attribute: parts.slice(2).join(' '), value, statePath });
  }
  return facts;
}

/** The canon statements the current state contradicts. Canon that agrees with the state is not superseded. */
export function supersededByState(facts: readonly FactStatement[], state: readonly WorldFact[], names: EntityNames): StateSupersession[] {
  const out: StateSupersession[] = [];
  for (const current of state) {
    const entityKey = names.keyFor(current.entity);
    const wanted = current.attribute === undefined ? null : attributeKey(current.attribute);
    const currentValue = valueKey(current.value);
    for (const statement of facts) {
      if (statement.entityKey !== entityKey) continue;
      const sameAttribute = wanted === null ? CONDITION_ATTRIBUTES.has(statement.attributeKey) : statement.attributeKey === wanted;
      if (sameAttribute && valuesConflict(statement.valueKey, currentValue)) out.push({ statement, current });
    }
  }
  return out;
}

export interface PassageText {
  sourcePath: string;
  text: string;
}

/**
 * The passage with every superseded canon line replaced by a note of what is true now, so the narrator
 * reads "Status: superseded in play — now destroyed" instead of the stale "Status: standing".
 */
export function withoutSupersededCanon(passage: PassageText, supersessions: readonly StateSupersession[]): { text: string; replaced: StateSupersession[] } {
  const relevant = supersessions.filter((s) => s.statement.path === passage.sourcePath);
  if (relevant.length === 0) return { text: passage.text, replaced: [] };
  const replaced: StateSupersession[] = [];
  const lines = passage.text.split('\n').map((line) => {
    const hit = relevant.find((s) => line.trim() === s.statement.quote);
    if (!hit) return line;
    replaced.push(hit);
    const indent = /^\s*(?:[-*+]\s+)?/.exec(line)![0];
    return `${indent}${hit.statement.attribute}: superseded in play — now ${hit.current.value}`;
  });
  return { text: lines.join('\n'), replaced };
}
