import { worldFactsFromState } from '../knowledge/conflicts';
import type { WorldFact } from '../knowledge/retrieval';
import { promptField } from '../models';
import { parseStatSchema, StatSchemaError } from '../knowledge/campaign';
import type { Persona, StatDef, StatSchema, StateValue, WorldState } from './types';

// The schema is read with the campaign's files (a restored bundle's play data is checked against it); the state's
// types live with the rest of story's types. All are named here too, beside the code that reads them.
export type { StatDef, StatSchema, StateValue, WorldState };
export { parseStatSchema, StatSchemaError };

/**
 * World state from the adventure's stat schema. Values live under stable paths (`player.hp`,
 * `npc.gwen.trust`, `world.day`, `flags.alarm_raised`, `milestones.escaped`) that never carry the persona's
 * name: replayed history holds literal paths, and a rename must not break them. The name appears only in
 * labels ("Kaelen (player): hp 100/100").
 */

/** The state as facts about the entities canon describes (`npc.gwen.*` about the schema's "Gwen"), to supersede stale canon. */
export function stateWorldFacts(schema: StatSchema, state: WorldState): WorldFact[] {
  return worldFactsFromState(state, Object.fromEntries(Object.entries(schema.npcs).map(([id, npc]) => [id, npc.name])));
}

export function hasWorldState(schema: StatSchema): boolean {
  return tracked(schema).size > 0;
}

type Tracked =
  | { kind: 'number'; def: StatDef }
  | { kind: 'text'; def: StatDef }
  | { kind: 'flag'; initial: boolean }
  | { kind: 'milestone' };

function tracked(schema: StatSchema): Map<string, Tracked> {
  const out = new Map<string, Tracked>();
  const stats = (prefix: string, defs: Record<string, StatDef>) => {
    for (const [name, def] of Object.entries(defs)) {
      out.set(`${prefix}.${name}`, { kind: typeof def.initial === 'number' ? 'number' : 'text', def });
    }
  };
  stats('world', schema.world);
  stats('player', schema.player);
  for (const [id, npc] of Object.entries(schema.npcs)) stats(`npc.${id}`, npc.stats);
  for (const [name, flag] of Object.entries(schema.flags)) out.set(`flags.${name}`, { kind: 'flag', initial: flag.initial });
  for (const name of Object.keys(schema.milestones)) out.set(`milestones.${name}`, { kind: 'milestone' });
  return out;
}

export function initialState(schema: StatSchema): WorldState {
  const state: WorldState = {};
  for (const [path, t] of tracked(schema)) {
    if (t.kind === 'number' || t.kind === 'text') state[path] = t.def.initial;
    else if (t.kind === 'flag') state[path] = t.initial;
    else state[path] = false;
  }
  return state;
}

/** Brings a stored state in line with the current schema: new values get their initial, removed ones go. */
export function normalizeState(schema: StatSchema, state: WorldState): WorldState {
  const base = initialState(schema);
  for (const path of Object.keys(base)) {
    const stored = state[path];
    if (stored !== undefined && typeof stored === typeof base[path]) base[path] = stored;
  }
  return base;
}

const FENCE = /```(?:json)?[ \t]*\r?\n([\s\S]*?)```/gi;

/** Splits a reply into the narration the writer reads and the last fenced state block, if any. */
export function extractStateBlock(reply: string): { narration: string; block: string | null } {
  const matches = [...reply.matchAll(FENCE)];
  const last = matches.at(-1);
  if (!last || last.index === undefined) return { narration: reply.trim(), block: null };
  const narration = (reply.slice(0, last.index) + reply.slice(last.index + last[0].length)).trim();
  return { narration, block: last[1]!.trim() };
}

/**
 * Streams a reply as the writer should see it: a fenced block is held back from its opening fence to its
 * closing one, so the state JSON never flashes on screen. Backticks that might start a fence wait for the
 * next piece.
 */
export class NarrationStream {
  private text = '';
  private shown = 0;

  push(piece: string): string {
    this.text += piece;
    let visible = '';
    while (this.shown < this.text.length) {
      const rest = this.text.slice(this.shown);
      const open = rest.indexOf('```');
      if (open === -1) {
        const pending = /`{1,2}$/.exec(rest)?.[0].length ?? 0;
        visible += rest.slice(0, rest.length - pending);
        this.shown += rest.length - pending;
        break;
      }
      visible += rest.slice(0, open);
      const close = rest.indexOf('```', open + 3);
      if (close === -1) {
        this.shown += open;
        break;
      }
      this.shown += close + 3;
    }
    return visible;
  }
}

/** Parses the model's state block, forgiving what weaker models emit: trailing commas and leading `+`. */
export function parseStateBlock(block: string): { delta: Record<string, unknown> | null; error: string | null } {
  const cleaned = block
    .replace(/,(\s*[}\]])/g, '$1')
    .replace(/([:[,]\s*)\+(\d)/g, '$1$2');
  try {
    const value: unknown = JSON.parse(cleaned);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      return { delta: null, error: 'the state block must be a JSON object mapping paths to changes; nothing was applied' };
    }
    return { delta: flatten(value as Record<string, unknown>), error: null };
  } catch (error) {
    return { delta: null, error: `the state block was not valid JSON (${(error as Error).message}); nothing was applied` };
  }
}

/** `{"player": {"hp": -5}}` means the same as `{"player.hp": -5}`. */
function flatten(value: Record<string, unknown>, prefix = ''): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) Object.assign(out, flatten(v as Record<string, unknown>, path));
    else out[path] = v;
  }
  return out;
}

export interface DeltaResult {
  state: WorldState;
  applied: Record<string, StateValue>;
  refusals: string[];
}

/** Applies a proposed delta value by value; whatever is refused is explained so the model can correct it. */
export function applyDelta(schema: StatSchema, state: WorldState, delta: Record<string, unknown>): DeltaResult {
  const paths = tracked(schema);
  const next = normalizeState(schema, state);
  const applied: Record<string, StateValue> = {};
  const refusals: string[] = [];
  for (const [path, proposed] of Object.entries(delta)) {
    const t = paths.get(path);
    if (!t) {
      refusals.push(`${path} is not a tracked value`);
      continue;
    }
    const outcome = applyOne(path, t, next[path]!, proposed);
    if ('refusal' in outcome) refusals.push(outcome.refusal);
    else {
      next[path] = outcome.value;
      applied[path] = outcome.value;
    }
  }
  return { state: next, applied, refusals };
}

function applyOne(path: string, t: Tracked, current: StateValue, proposed: unknown): { value: StateValue } | { refusal: string } {
  switch (t.kind) {
    case 'milestone':
      if (proposed === true || proposed === 'true') return { value: true };
      return { refusal: `${path}: a milestone is sticky, so only true is accepted` };
    case 'flag':
      if (typeof proposed === 'boolean') return { value: proposed };
      if (proposed === 'true' || proposed === 'false') return { value: proposed === 'true' };
      return { refusal: `${path} is a flag: use true or false` };
    case 'text': {
      if (typeof proposed !== 'string' || proposed.trim() === '') return { refusal: `${path} takes a text value` };
      const options = t.def.options;
      if (options && !options.includes(proposed)) return { refusal: `${path} must be one of: ${options.join(', ')}` };
      return { value: proposed };
    }
    case 'number': {
      let next: number;
      if (typeof proposed === 'number' && Number.isFinite(proposed)) next = (current as number) + proposed;
      else if (typeof proposed === 'string' && /^=\s*-?\d+(\.\d+)?$/.test(proposed.trim())) next = Number(proposed.trim().slice(1));
      else if (typeof proposed === 'string' && /^[+-]\s*\d+(\.\d+)?$/.test(proposed.trim())) next = (current as number) + Number(proposed.replace(/\s/g, ''));
      else return { refusal: `${path} takes a number change such as -5 or +2, or "=10" to set it` };
      if (t.def.min !== undefined) next = Math.max(t.def.min, next);
      if (t.def.max !== undefined) next = Math.min(t.def.max, next);
      return { value: next };
    }
  }
}

function statLine(prefix: string, defs: Record<string, StatDef>, state: WorldState): string {
  return Object.entries(defs)
    .map(([name, def]) => {
      const value = state[`${prefix}.${name}`] ?? def.initial;
      return def.max !== undefined && typeof value === 'number' ? `${name} ${value}/${def.max}` : `${name} ${value}`;
    })
    .join(', ');
}

/** The protagonist's label: the persona's name beside the path it is addressed by. */
export function playerLabel(persona: Persona): string {
  return persona.name ? `${persona.name} (player)` : 'You';
}

/** Current state, rendered after imported canon so that it wins where the story has moved on. */
export function renderStateSection(schema: StatSchema, state: WorldState, persona: Persona): string {
  const lines: string[] = [];
  if (Object.keys(schema.player).length > 0) lines.push(`${playerLabel(persona)}: ${statLine('player', schema.player, state)}.`);
  for (const [id, npc] of Object.entries(schema.npcs)) {
    if (Object.keys(npc.stats).length > 0) lines.push(`${npc.name} (npc.${id}): ${statLine(`npc.${id}`, npc.stats, state)}.`);
  }
  if (Object.keys(schema.world).length > 0) lines.push(`World: ${statLine('world', schema.world, state)}.`);
  const flags = Object.keys(schema.flags);
  if (flags.length > 0) lines.push(`Flags: ${flags.map((f) => `${f} ${state[`flags.${f}`] === true ? 'true' : 'false'}`).join(', ')}.`);
  const milestones = Object.keys(schema.milestones);
  if (milestones.length > 0) {
    const reached = milestones.filter((m) => state[`milestones.${m}`] === true);
    lines.push(`Milestones reached: ${reached.length > 0 ? reached.join(', ') : 'none yet'}.`);
  }
  // Each line is one line whatever the names, labels and values in it hold.
  return lines.map(promptField).join('\n');
}

function describe(path: string, def: StatDef): string {
  const range =
    typeof def.initial === 'number'
      ? def.min !== undefined || def.max !== undefined
        ? ` (${def.min ?? '…'}–${def.max ?? '…'})`
        : ''
      : def.options
        ? ` (one of: ${def.options.join(', ')})`
        : ' (text)';
  return `${path}${range}${def.desc ? `: ${def.desc}` : ''}`;
}

/** The static guide to paths and the delta format; part of the cacheable prefix. */
export function renderStateGuide(schema: StatSchema, persona: Persona): string {
  const lines = [
    'The story tracks values by path. When the story changes one, end your reply with a fenced ```json block that maps',
    'paths to changes, for example {"player.hp": -15, "flags.alarm_raised": true}. A number is a change (+2, -5);',
    '"=10" sets it. Propose only what this reply changed; leave the block out when nothing changed.',
    'Tracked values:',
  ];
  const player = Object.entries(schema.player).map(([n, d]) => describe(`player.${n}`, d));
  if (player.length > 0) {
    const who = persona.name ? `Protagonist ${persona.name}` : 'The player';
    lines.push(`- ${who} — stats are addressed as player.<stat>: ${player.join('; ')}`);
  }
  for (const [id, npc] of Object.entries(schema.npcs)) {
    const stats = Object.entries(npc.stats).map(([n, d]) => describe(`npc.${id}.${n}`, d));
    if (stats.length > 0) lines.push(`- ${npc.name} — addressed as npc.${id}.<stat>: ${stats.join('; ')}`);
  }
  for (const [n, d] of Object.entries(schema.world)) lines.push(`- ${describe(`world.${n}`, d)}`);
  for (const [n, f] of Object.entries(schema.flags)) lines.push(`- flags.${n} (true or false)${f.desc ? `: ${f.desc}` : ''}`);
  for (const [n, m] of Object.entries(schema.milestones)) lines.push(`- milestones.${n} (sticky: once true, stays true)${m.desc ? `: ${m.desc}` : ''}`);
  return lines.map(promptField).join('\n');
}

export function renderRefusals(refusals: readonly string[]): string {
  if (refusals.length === 0) return '';
  return ['Your last state block was partly refused; correct it if the story still needs the change:', ...refusals.map((r) => promptField(`- ${r}`))].join('\n');
}
