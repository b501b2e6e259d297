import type { FactStatement } from './facts';
import { attributeKey, valueKey, valuesConflict } from './factsNormalize';
import { nameKey, stripInlineMarkup, type EntityNames } from '../names';
import type { KnowledgeSection, RetrievalResult, SelectedPassage, SupersededCanonLine, TokenMeasure, WorldFact } from '../retrieval';
import { estimateTokens } from '../campaign';

/**
 * Canon versus the story as played: canon says the north gate is open, play collapsed it.
 * That is not a conflict to fix — the canon was the starting point — but the prompt must not keep
 * re-asserting the stale statement as current truth. The story engine asks which canon facts the current
 * state supersedes and drops those lines from the passages it sends.
 */

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
    // A declared name meets its entity anywhere; an undeclared one meets headings of that name in any file.
    const declared = names.resolve(current.entity);
    const headingSuffix = `#${nameKey(current.entity)}`;
    const isAbout = (s: FactStatement) => (declared !== undefined ? s.entityKey === declared : s.entityKey.endsWith(headingSuffix));
    const wanted = current.attribute === undefined ? null : attributeKey(current.attribute);
    const currentValue = valueKey(current.value);
    for (const statement of facts) {
      if (!isAbout(statement)) continue;
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

/** A canon statement to send as superseded: the line is rewritten, and the record says why. */
interface LineReplacement {
  statement: FactStatement;
  /** What the narrator reads instead of the stale value ("superseded in play — now destroyed"). */
  note: string;
  currentValue: string;
  statePath: string | null;
  reason: (entity: string) => string;
}

/** Rewrites the passage's lines that state a replaced statement; returns the text and the replacements made. */
function replaceCanonLines(passage: PassageText, replacements: readonly LineReplacement[]): { text: string; replaced: LineReplacement[] } {
  const relevant = replacements.filter((r) => r.statement.path === passage.sourcePath);
  if (relevant.length === 0) return { text: passage.text, replaced: [] };
  const replaced: LineReplacement[] = [];
  // The index keeps passage text with inline markup removed (`- Status: standing`), the fact its line as written.
  const quotes = relevant.map((r) => stripInlineMarkup(r.statement.quote));
  const lines = passage.text.split('\n').map((line) => {
    const plain = stripInlineMarkup(line);
    const hit = relevant.find((_, i) => plain === quotes[i]);
    if (!hit) return line;
    replaced.push(hit);
    const indent = /^\s*(?:[-*+]\s+)?/.exec(line)![0];
    return `${indent}${hit.statement.attribute}: ${hit.note}`;
  });
  return { text: lines.join('\n'), replaced };
}

function stateReplacement({ statement, current }: StateSupersession): LineReplacement {
  return {
    statement,
    note: `superseded in play — now ${current.value}`,
    currentValue: current.value,
    statePath: current.statePath ?? null,
    reason: (entity) => `${entity} — ${statement.attribute}: canon "${statement.value}" (${statement.path}:${statement.line}) superseded in play: ${describeWorldFact(current)}`,
  };
}

function canonReplacement({ statement, by, settledBy }: CanonSupersession): LineReplacement {
  const why = settledBy === 'writer' ? 'the writer kept that statement' : `which declares supersedes: [${statement.path}]`;
  return {
    statement,
    note: `superseded by ${by.path} — now ${by.value}`,
    currentValue: by.value,
    statePath: null,
    reason: (entity) =>
      `${entity} — ${statement.attribute}: canon "${statement.value}" (${statement.path}:${statement.line}) superseded by ${by.path}:${by.line} ("${by.value}")${settledBy === 'writer' ? ': ' : ', '}${why}`,
  };
}

/**
 * The passage with every superseded canon line replaced by a note of what is true now, so the narrator
 * reads "Status: superseded in play — now destroyed" instead of the stale "Status: standing".
 */
export function withoutSupersededCanon(passage: PassageText, supersessions: readonly StateSupersession[]): { text: string; replaced: StateSupersession[] } {
  const { text, replaced } = replaceCanonLines(passage, supersessions.map(stateReplacement));
  return { text, replaced: supersessions.filter((s) => replaced.some((r) => r.statement === s.statement)) };
}

/** `world.bridge = destroyed`: the state that supersedes, as the writer set it up. */
export function describeWorldFact(fact: WorldFact): string {
  return `${fact.statePath ?? [fact.entity, fact.attribute].filter(Boolean).join('.')} = ${fact.value}`;
}

/** A canon statement another canon source supersedes (its front matter says `supersedes: [<path>]`) where they disagree. */
export interface CanonSupersession {
  statement: FactStatement;
  by: FactStatement;
  settledBy: 'supersedes' | 'writer';
}

/** Canon facts of one source at a time, from the same extraction and names the conflict analysis uses. */
export interface CanonFactsReader {
  names(): EntityNames;
  factsOf(sourceId: string, names: EntityNames): FactStatement[];
  /** Every settled conflict's losing statement, with the statement that won. */
  supersededCanon(): readonly CanonSupersession[];
}

/** Sections whose passages are canon; Reference and Inspiration are never truth, so nothing there is superseded. */
const CANON_SECTIONS: readonly KnowledgeSection[] = ['alwaysInclude', 'canon'];

/**
 * A retrieval result as the prompt may carry it: every retrieved canon line that the current state
 * contradicts, or that newer canon supersedes (a conflict the writer settled with `supersedes:`), is
 * replaced by a note of what is true now, and the record lists each replacement and why. Relevance, order
 * and budgets are retrieval's and stay as they were; a rewritten passage is recounted by the query's
 * `measure`, so its count stays in the unit of the rest.
 */
export function supersedeRetrievedCanon(result: RetrievalResult, state: readonly WorldFact[], canon: CanonFactsReader, measure?: TokenMeasure): RetrievalResult {
  const sourcePaths = new Set(CANON_SECTIONS.flatMap((key) => result.sections[key].map((p) => p.sourcePath)));
  const replacements = canon
    .supersededCanon()
    .filter((s) => sourcePaths.has(s.statement.path))
    .map(canonReplacement);
  const names = state.length > 0 || replacements.length > 0 ? canon.names() : undefined;
  if (names && state.length > 0) {
    // One pass over the facts of every retrieved canon source: the state's names are resolved once per turn.
    const sourceIds = new Set(CANON_SECTIONS.flatMap((key) => result.sections[key].map((p) => p.sourceId)));
    const byState = supersededByState([...sourceIds].flatMap((id) => canon.factsOf(id, names)), state, names);
    // What play says now wins over what newer canon says.
    const settledByPlay = new Set(byState.map((s) => s.statement));
    replacements.splice(0, replacements.length, ...byState.map(stateReplacement), ...replacements.filter((r) => !settledByPlay.has(r.statement)));
  }
  if (!names || replacements.length === 0) return result;
  const superseded: SupersededCanonLine[] = [];
  const rewrite = (passage: SelectedPassage): SelectedPassage => {
    const { text, replaced } = replaceCanonLines(passage, replacements);
    if (replaced.length === 0) return passage;
    for (const { statement, currentValue, statePath, reason } of replaced) {
      const entity = names.displayName(statement.entityKey) ?? statement.entity;
      superseded.push({
        passageId: passage.passageId,
        sourcePath: statement.path,
        line: statement.line,
        entity,
        attribute: statement.attribute,
        canonValue: statement.value,
        quote: statement.quote,
        currentValue,
        statePath,
        reason: reason(entity),
      });
    }
    return { ...passage, text, tokenCount: measure ? measure.passage({ ...passage, text }) : estimateTokens(text) };
  };
  const sections = { ...result.sections };
  for (const key of CANON_SECTIONS) sections[key] = result.sections[key].map(rewrite);
  if (superseded.length === 0) return result;
  const notes = new Map<string, string[]>();
  for (const s of superseded) notes.set(s.passageId, [...(notes.get(s.passageId) ?? []), s.reason]);
  const candidates = result.record.candidates.map((c) => {
    const reasons = notes.get(c.passageId);
    return reasons ? { ...c, reason: `${c.reason}; ${reasons.join('; ')}` } : c;
  });
  return { sections, record: { ...result.record, candidates, superseded } };
}
