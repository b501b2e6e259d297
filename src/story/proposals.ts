import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  DATA_DIR,
  WRITER_ONLY_FIELDS,
  atxHeading,
  changedWriterOnlyFields,
  frontMatterBlock,
  linkLeavingCampaign,
  splitFrontMatter,
  unsafeName,
  unsafeRelativePath,
  withFrontMatterField,
  withFrontMatterListItem,
  withoutFrontMatterFields,
  writerOnlyField,
  writerOnlyFieldsOf,
  type Campaign,
  type WriterOnlyField,
} from '../knowledge/campaign';
import { analyzeStoreConflicts, attributeKey, clearConflictDecision, loadConflictDecisions, supersededByState, type ConflictAnalysis } from '../knowledge/conflicts';
import type { FactStatement } from '../knowledge/conflicts';
import type { WorldFact } from '../knowledge/retrieval';
import { EntityModel, entitySourcesFromStore } from '../knowledge/entities';
import { WriteConflictError, writeFailure, writeFileSet, type SetFile } from '../knowledge/files';
import { isCandidateSource, type Db, type KnowledgeStore } from '../knowledge/indexing';
import { plainLine } from '../models';
import type { PlayStore } from './playStore';
import type { NarratorOnlyText } from './secrets';
import type { Adventure, Memory, Turn } from './types';
import { initialState, normalizeState, stateWorldFacts, type WorldState } from './worldState';

/**
 * From play back to the bible. Play changes the world (Mara turns 52, the bridge falls, a smuggler gets a
 * name); these are the edits to canon that the adventure's current branch implies, as proposals: each names
 * a campaign-relative file, the exact text it replaces (empty for a new file), the new text, the reason and
 * the turns behind it. Nothing here writes canon on its own: the writer reviews the edits and applies them
 * (VS Code's refactor preview, `storyteller propose --write`).
 *
 * Every proposal, whoever drafted it — the deterministic rules below or a model through `propose_edit` — is
 * validated the same way (validateProposals): inside the campaign, an indexed canon source or a new markdown
 * file, never a locked one (its change becomes a new canon file that supersedes it), the replaced text found
 * exactly once, sizes bounded, no control characters, and no say over the front-matter fields only the writer may
 * change (WRITER_ONLY_FIELDS: what a file is, who may read it, what is pinned, what activates it): an edit that
 * touches one is refused, and a new page goes without them, with the campaign's defaults, and says so.
 */

export type ProposalOrigin = 'world-state' | 'settled-conflict' | 'new-character' | 'model';

/** A turn of the branch, as the writer sees it numbered in the Adventures view. */
export interface ProposalTurn {
  id: string;
  number: number;
  action: string;
}

/** What a rule or a model wants changed, before validation. */
export interface ProposalDraft {
  /** Campaign-relative POSIX path. */
  file: string;
  /** Exact text to replace; empty for a new file. */
  oldText: string;
  newText: string;
  reason: string;
  turns: readonly ProposalTurn[];
  origin: ProposalOrigin;
  /** What the proposal rests on, one line each (a turn's action, a state value, the canon line). */
  evidence?: readonly string[];
  /** Conflict keys the writer settled in play.db that this edit makes true in the files. */
  settles?: readonly string[];
}

export interface CanonProposal {
  /** Identifies the proposal across runs: its file, the text it replaces and its turns. */
  key: string;
  file: string;
  oldText: string;
  newText: string;
  reason: string;
  turns: ProposalTurn[];
  origin: ProposalOrigin;
  evidence: string[];
  settles: string[];
  /** Set when the proposal is a new canon file standing in for an edit to this locked file. */
  supersedes?: string;
  /** Writer-only front-matter fields the drafted new page set, left out of it (keys as written), and why. */
  dropped?: { fields: string[]; reason: string };
}

export interface RefusedProposal {
  file: string;
  origin: ProposalOrigin;
  reason: string;
  /** Why it was refused, in plain words. */
  refusal: string;
}

// Bounds on anything a proposal carries: a model's reply is untrusted data.
export const PROPOSAL_LIMITS = {
  pathChars: 240,
  oldTextChars: 8_000,
  newTextChars: 16_000,
  reasonChars: 1_000,
  proposals: 60,
} as const;

const oneLine = (text: string, max = 80) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

export function turnRef(turn: Turn): ProposalTurn {
  return { id: turn.id, number: turn.depth + 1, action: oneLine(turn.action.text) };
}

export function proposalKey(draft: Pick<ProposalDraft, 'file' | 'oldText' | 'turns'>): string {
  const turns = [...new Set(draft.turns.map((t) => t.id))].sort().join(',');
  return `proposal:${createHash('sha256').update(`${draft.file}\u0000${draft.oldText}\u0000${turns}`).digest('hex').slice(0, 24)}`;
}

// ── what the adventure's current branch says ──────────────────────────────────────────────────────

/** The campaign and the adventure whose current branch is read. */
export interface ProposalContext {
  campaign: Pick<Campaign, 'root' | 'id' | 'title' | 'ignore'>;
  store: KnowledgeStore;
  play: PlayStore;
  adventure: Adventure;
  /** The branch ending at this turn; the adventure's current branch (its head) when absent. */
  turnId?: string;
}

/** The adventure's current branch, as proposals read it. */
export interface BranchView {
  turns: Turn[];
  memories: Memory[];
  state: WorldState;
  /** The turn whose reply set each state path to its current value; absent when play never changed it. */
  changedAt: Map<string, Turn>;
}

export function readBranch(ctx: Pick<ProposalContext, 'play' | 'adventure' | 'turnId'>): BranchView {
  const { play, adventure } = ctx;
  const schema = adventure.statSchema;
  const turns = play.lineage(ctx.turnId ?? adventure.headTurnId);
  const states = turns.map((t) => normalizeState(schema, t.stateAfter));
  const state = states.at(-1) ?? initialState(schema);
  const initial = initialState(schema);
  const changedAt = new Map<string, Turn>();
  for (const [statePath, value] of Object.entries(state)) {
    if (value === initial[statePath]) continue;
    // The latest turn that moved the value to what it is now.
    for (let i = turns.length - 1; i >= 0; i--) {
      const before = i > 0 ? states[i - 1]![statePath] : initial[statePath];
      if (states[i]![statePath] === value && before !== value) {
        changedAt.set(statePath, turns[i]!);
        break;
      }
    }
  }
  return { turns, memories: play.memoriesForLineage(adventure.id, turns), state, changedAt };
}

/** The campaign's facts and entities as the conflict analysis and the entity model see them. */
export interface CanonView {
  analysis: ConflictAnalysis;
  entities: EntityModel;
}

export function readCanon(store: KnowledgeStore, playDb: Db, campaignId: string): CanonView {
  return { analysis: analyzeStoreConflicts(store, loadConflictDecisions(playDb, campaignId)), entities: new EntityModel(entitySourcesFromStore(store)) };
}

// ── deterministic drafts ──────────────────────────────────────────────────────────────────────────

/** A file's text as it is on disk now (the truth), or undefined when it cannot be read. */
export type ReadFile = (relPath: string) => string | undefined;

export function diskReader(root: string): ReadFile {
  return (relPath) => {
    try {
      return fs.readFileSync(path.join(root, ...relPath.split('/')), 'utf8').replace(/^\uFEFF/, '');
    } catch {
      return undefined;
    }
  };
}

const eolOf = (text: string) => (text.includes('\r\n') ? '\r\n' : '\n');

/**
 * The line `index` (0-based) of `text`, widened upwards by whole lines until it occurs exactly once, with the
 * line rewritten by `rewrite`: an edit anchored on text the file holds once.
 */
function lineEdit(text: string, index: number, rewrite: (line: string) => string): { oldText: string; newText: string } | undefined {
  const eol = eolOf(text);
  const lines = text.split(/\r?\n/);
  if (index < 0 || index >= lines.length) return undefined;
  for (let from = index; from >= 0; from--) {
    const oldText = lines.slice(from, index + 1).join(eol);
    if (occurrences(text, oldText) === 1) return { oldText, newText: [...lines.slice(from, index), rewrite(lines[index]!)].join(eol) };
  }
  return undefined;
}

function occurrences(text: string, needle: string): number {
  if (needle === '') return 0;
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1 && count < 2; at = text.indexOf(needle, at + 1)) count++;
  return count;
}

/** `npc.mara.trust` → "Trust"; a bare condition (`world.bridge = destroyed`) is the entity's "Status". */
function attributeLabel(fact: WorldFact): string {
  const raw = (fact.attribute ?? 'status').replace(/[_.]+/g, ' ').trim();
  return raw.charAt(0).toUpperCase() + raw.slice(1);
}

function stateEvidence(fact: WorldFact, turn: Turn): string[] {
  return [`turn ${turn.depth + 1}: ${oneLine(turn.action.text)}`, `state after it: ${fact.statePath} = ${fact.value}`];
}

/** The statement's line with its value replaced by `value`, or why it cannot be. */
function valueEdit(statement: FactStatement, value: string, read: ReadFile): { oldText: string; newText: string } | string {
  const text = read(statement.path);
  if (text === undefined) return `${statement.path} cannot be read`;
  const line = text.split(/\r?\n/)[statement.line - 1];
  const at = line === undefined ? -1 : line.lastIndexOf(statement.value);
  if (line === undefined || line.trim() !== statement.quote || at === -1) return `${statement.path}:${statement.line} changed since it was indexed`;
  const written = plainLine(value);
  return lineEdit(text, statement.line - 1, (l) => l.slice(0, at) + written + l.slice(at + statement.value.length)) ?? `${statement.path}:${statement.line} is not written once in its file`;
}

/** A canon line the state contradicts, rewritten to the value play gave it. */
function contradictedLine(statement: FactStatement, current: WorldFact, turn: Turn, read: ReadFile, display: string): ProposalDraft | string {
  const edit = valueEdit(statement, current.value, read);
  if (typeof edit === 'string') return edit;
  return {
    file: statement.path,
    ...edit,
    reason: `${display} — ${statement.attribute}: canon says "${statement.value}"; play made it "${current.value}"`,
    turns: [turnRef(turn)],
    origin: 'world-state',
    evidence: [...stateEvidence(current, turn), `canon ${statement.path}:${statement.line}: ${statement.quote}`],
  };
}

/** A fact canon does not state yet, added under the entity's defining heading. */
function addedLine(entities: EntityModel, entityKey: string, fact: WorldFact, turn: Turn, read: ReadFile): ProposalDraft | undefined {
  const entity = entities.entity(entityKey);
  const definition = entity?.definitions.find((d) => d.class === 'canon');
  if (!entity || !definition) return undefined;
  const text = read(definition.path);
  if (text === undefined) return undefined;
  const lines = text.split(/\r?\n/);
  if (!atxHeading(lines[definition.line] ?? '')) return undefined;
  // After the heading's attribute list when it has one (a blank line may stand between), else under the heading.
  let anchor = definition.line;
  let next = anchor + 1;
  if (lines[next]?.trim() === '' && /^\s*[-*+]\s/.test(lines[next + 1] ?? '')) next++;
  while (/^\s*[-*+]\s/.test(lines[next] ?? '')) anchor = next++;
  const label = attributeLabel(fact);
  const edit = lineEdit(text, anchor, (l) => `${l}${eolOf(text)}- **${label}:** ${fact.value}`);
  if (!edit) return undefined;
  return {
    file: definition.path,
    ...edit,
    reason: `${entity.display} — ${label}: play made it "${fact.value}"; canon does not say`,
    turns: [turnRef(turn)],
    origin: 'world-state',
    evidence: [...stateEvidence(fact, turn), `defined at ${definition.path}:${definition.line + 1}`],
  };
}

const slug = (name: string) =>
  name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '-')
    .replace(/^-+|-+$/g, '') || 'entry';

/** Where new character files go: the folder most canon characters are defined in, else `characters/`. */
function characterFolder(entities: EntityModel): string {
  const counts = new Map<string, number>();
  for (const e of entities.entities) {
    const def = e.definitions.find((d) => d.class === 'canon');
    if (e.kind !== 'character' || !def || !def.path.includes('/')) continue;
    const folder = def.path.slice(0, def.path.lastIndexOf('/'));
    counts.set(folder, (counts.get(folder) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]?.[0] ?? 'characters';
}

/** A character play gave values to whom canon has no page: a new canon file with what play established. */
function newCharacter(
  name: string,
  desc: string | undefined,
  facts: readonly { fact: WorldFact; turn: Turn }[],
  folder: string,
): ProposalDraft {
  let text = withFrontMatterListItem(withFrontMatterField('', 'title', name), 'entities', name);
  const body = [`# ${name}`, '', ...(desc ? [desc, ''] : []), ...facts.map(({ fact }) => `- **${attributeLabel(fact)}:** ${fact.value}`)];
  text += `${body.join('\n')}\n`;
  const turns = [...new Map(facts.map(({ turn }) => [turn.id, turn])).values()].sort((a, b) => a.depth - b.depth);
  return {
    file: `${folder}/${slug(name)}.md`,
    oldText: '',
    newText: text,
    reason: `${name} is a character of this adventure whom canon has no page for; play established ${facts.map(({ fact }) => attributeLabel(fact).toLowerCase()).join(', ')}`,
    turns: turns.map(turnRef),
    origin: 'new-character',
    evidence: facts.flatMap(({ fact, turn }) => stateEvidence(fact, turn)),
  };
}

/**
 * The proposals that need no model: canon lines the branch's world state contradicts (rewritten where they
 * are), facts play established about a canon entity that canon does not state (added under its defining
 * heading), characters play gave values to with no canon page (a new file), and conflicts the writer
 * settled by keeping one statement (the other line rewritten to agree). Rules that cannot apply (an
 * unreadable file, a line changed since indexing) are reported, not guessed.
 */
export function deterministicDrafts(ctx: ProposalContext, branch: BranchView, canon: CanonView, read: ReadFile): { drafts: ProposalDraft[]; skipped: RefusedProposal[] } {
  const { adventure } = ctx;
  const { analysis, entities } = canon;
  const drafts: ProposalDraft[] = [];
  const skipped: RefusedProposal[] = [];
  // Names, stats and values come from play (a reply, a bundle): each is written as one line of plain text.
  const facts = stateWorldFacts(adventure.statSchema, branch.state)
    .filter((f) => f.statePath !== undefined && branch.changedAt.has(f.statePath))
    .map((f) => ({ ...f, entity: plainLine(f.entity), value: plainLine(f.value), ...(f.attribute !== undefined ? { attribute: plainLine(f.attribute) } : {}) }))
    .filter((f) => f.entity !== '' && f.value !== '');
  const turnOf = (f: WorldFact) => branch.changedAt.get(f.statePath!)!;

  // A canon line another canon source (or the writer) already supersedes has its correction in canon.
  const superseded = new Set(
    analysis.conflicts.filter((c) => c.supersededBy !== null).map((c) => (c.supersededBy === 'a' ? c.b : c.a)).map((s) => `${s.path}:${s.line}`),
  );
  const contradicted = supersededByState(analysis.facts, facts, analysis.names).filter((c) => !superseded.has(`${c.statement.path}:${c.statement.line}`));
  for (const { statement, current } of contradicted) {
    const display = analysis.names.displayName(statement.entityKey) ?? statement.entity;
    const draft = contradictedLine(statement, current, turnOf(current), read, display);
    if (typeof draft === 'string') skipped.push({ file: statement.path, origin: 'world-state', reason: `${display} — ${statement.attribute}: play made it "${current.value}"`, refusal: draft });
    else drafts.push(draft);
  }

  const npcIds = new Map(Object.entries(adventure.statSchema.npcs).map(([id, npc]) => [plainLine(npc.name), id]));
  const unknownCharacters = new Map<string, { fact: WorldFact; turn: Turn }[]>();
  for (const fact of facts) {
    if (contradicted.some((c) => c.current === fact)) continue;
    const entity = entities.resolveName(fact.entity);
    if (entity?.canon) {
      if (analysis.statementsAbout(entity.key, attributeKey(fact.attribute ?? 'status')).length > 0) continue;
      const draft = addedLine(entities, entity.key, fact, turnOf(fact), read);
      if (draft) drafts.push(draft);
    } else if (npcIds.has(fact.entity)) {
      unknownCharacters.set(fact.entity, [...(unknownCharacters.get(fact.entity) ?? []), { fact, turn: turnOf(fact) }]);
    }
  }
  const folder = characterFolder(entities);
  for (const [name, list] of unknownCharacters) {
    const desc = plainLine(adventure.statSchema.npcs[npcIds.get(name)!]?.desc ?? '');
    // On a line of its own, a description that starts like a heading, a fence or a quote stays a paragraph.
    drafts.push(newCharacter(name, desc.replace(/^(?=[#`~<>|=*_+-])/, '\\'), list, folder));
  }

  for (const conflict of analysis.conflicts) {
    if (conflict.settledBy !== 'writer') continue;
    const [loser, winner] = conflict.supersededBy === 'a' ? [conflict.b, conflict.a] : [conflict.a, conflict.b];
    const edit = valueEdit(loser, winner.value, read);
    const reason = `${conflict.entity} — ${conflict.attribute}: you kept "${winner.value}" (${winner.path}:${winner.line}); this line still says "${loser.value}"`;
    if (typeof edit === 'string') {
      skipped.push({ file: loser.path, origin: 'settled-conflict', reason, refusal: edit });
      continue;
    }
    drafts.push({
      file: loser.path,
      ...edit,
      reason,
      turns: [],
      origin: 'settled-conflict',
      evidence: [`kept ${winner.path}:${winner.line}: ${winner.quote}`, `superseded ${loser.path}:${loser.line}: ${loser.quote}`],
      settles: [conflict.key],
    });
  }
  return { drafts, skipped };
}

// ── validation ────────────────────────────────────────────────────────────────────────────────────

/** What validation knows of the campaign: its files on disk and its indexed sources. */
export interface ProposalTarget {
  campaign: Pick<Campaign, 'root' | 'ignore'>;
  store: KnowledgeStore;
  read: ReadFile;
  /** The campaign's narrator-only text, which no proposal puts where the player reads. */
  secrets: NarratorOnlyText;
  /** Written as `from_turn:` into a new file ("The Night Watch, turn 7"). */
  fromTurn: (turns: readonly ProposalTurn[]) => string;
}

export type Checked =
  | { kind: 'edit'; file: string; at: number; end: number }
  /** A new page: its text without the writer-only fields the drafter set, and those fields' keys as written. */
  | { kind: 'new'; file: string; text: string; dropped: string[] }
  | { kind: 'locked'; file: string; at: number };

/** Control characters a text file never holds (tab and line breaks aside): a NUL makes the file binary to the index. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL_CHARACTER = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;

/** Why writer-only fields are never a proposal's, naming what each decides. */
function writerOnlyReason(fields: readonly WriterOnlyField[]): string {
  return `${fields.map((f) => `'${f}' decides ${WRITER_ONLY_FIELDS[f]}`).join('; ')}: the writer's to set, never a proposal's`;
}

/** Why the writer-only fields a drafted new page set (keys as written) were left out of it. */
function droppedReason(keys: readonly string[]): string {
  return `${writerOnlyReason([...new Set(keys.map((k) => writerOnlyField(k)!))])}; the page has the campaign's defaults`;
}

/**
 * Why `draft` may not be proposed, or where it applies. Shared by the final validation (every rule's drafts and
 * the model's) and the model's tool results, so a model hears the same refusal the writer would see.
 */
export function checkDraft(draft: ProposalDraft, target: ProposalTarget): Checked | string {
  const checked = placeDraft(draft, target);
  if (typeof checked === 'string') return checked;
  // Not quoted back: the refusal is also the answer to a model that was never shown the file.
  const secret = repeatedSecret(draft, checked, target);
  return secret ? `repeats narrator-only text from ${secret}: the writer must reveal a secret, a proposal cannot` : checked;
}

/**
 * The narrator-only file whose words the draft would put where the player stage reads them, if any. Narration
 * is written from hidden canon, so a model that read the story, or a world-state value a reply set, may carry
 * a secret as well as a model shown the hidden file; text kept in a narrator-only file (or the stand-in for a
 * locked one, which keeps its visibility) stays narrator-only.
 */
function repeatedSecret(draft: ProposalDraft, checked: Checked, target: ProposalTarget): string | undefined {
  if (checked.kind === 'new') return target.secrets.repeatedIn(checked.text, '');
  if (target.store.getSourceByPath(checked.file)?.visibility === 'hidden') return undefined;
  const existing = target.read(checked.file)!;
  // The whole edited file, so a secret run across the edit's edges counts; what the file held already does not.
  const after = checked.kind === 'edit' ? existing.slice(0, checked.at) + draft.newText + existing.slice(checked.end) : draft.newText;
  return target.secrets.repeatedIn(after, existing);
}

function placeDraft(draft: ProposalDraft, target: ProposalTarget): Checked | string {
  if (draft.file.length > PROPOSAL_LIMITS.pathChars) return `the file name is longer than ${PROPOSAL_LIMITS.pathChars} characters`;
  if (draft.oldText.length > PROPOSAL_LIMITS.oldTextChars) return `the text to replace is ${draft.oldText.length} characters; at most ${PROPOSAL_LIMITS.oldTextChars} are allowed`;
  if (draft.newText.length > PROPOSAL_LIMITS.newTextChars) return `the new text is ${draft.newText.length} characters; at most ${PROPOSAL_LIMITS.newTextChars} are allowed`;
  if (draft.reason.length > PROPOSAL_LIMITS.reasonChars) return `the reason is ${draft.reason.length} characters; at most ${PROPOSAL_LIMITS.reasonChars} are allowed`;
  for (const [part, text] of [['file name', draft.file], ['text to replace', draft.oldText], ['new text', draft.newText], ['reason', draft.reason]] as const) {
    const control = CONTROL_CHARACTER.exec(text);
    if (control) {
      const code = `U+${control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
      return `the ${part} holds a control character (${code}) at character ${control.index + 1}: campaign files are plain text`;
    }
  }
  const unsafe = unsafeRelativePath(draft.file);
  if (unsafe) return `the path ${unsafe}: only files inside the campaign may be edited`;
  if (draft.file === DATA_DIR || draft.file.startsWith(`${DATA_DIR}/`)) return `${DATA_DIR}/ holds the index and play data, never canon`;
  const misnamed = unsafeName(draft.file);
  if (misnamed) return `the path ${misnamed}`;
  const leaving = linkLeavingCampaign(target.campaign.root, draft.file);
  if (leaving) return `the path ${leaving}`;
  const existing = target.read(draft.file);
  if (draft.oldText === '') {
    if (existing !== undefined || fs.existsSync(path.join(target.campaign.root, ...draft.file.split('/')))) return 'the file exists: an edit must name the exact text it replaces';
    if (!draft.file.endsWith('.md') || !isCandidateSource(target.campaign, draft.file)) return 'a new canon file must be a markdown (.md) file the campaign indexes (not hidden, not ignored)';
    const split = splitFrontMatter(draft.newText);
    if (split.issues.some((i) => i.severity === 'error')) return `the new file's front matter is not valid: ${split.issues[0]!.message}`;
    try {
      // What the page may not say is left out, not refused: the rest of the page is the story.
      const page = withoutFrontMatterFields(draft.newText, (key) => writerOnlyField(key) !== undefined);
      asCanonFile(page.text, '');
      return { kind: 'new', file: draft.file, ...page };
    } catch (error) {
      return `the new file's front matter cannot take class and from_turn: ${(error as Error).message}`;
    }
  }
  const source = target.store.getSourceByPath(draft.file);
  if (existing === undefined || !source) return 'no such campaign file is indexed';
  if (source.class !== 'canon') return `it is ${source.class}, not canon: reference and inspiration files are never edited`;
  const count = occurrences(existing, draft.oldText);
  if (count === 0) return 'the text to replace is not in the file';
  if (count > 1) return 'the text to replace occurs more than once in the file; quote more of it';
  const at = existing.indexOf(draft.oldText);
  const end = at + draft.oldText.length;
  const before = writerOnlyFieldsOf(existing);
  if (before === undefined) {
    // Unreadable front matter hides what it says: only the body, after its closing fence, may be edited.
    const block = frontMatterBlock(existing);
    if (!block || at < block.bodyStart) return "the file's front matter cannot be read: fix it before anything in it is proposed";
  } else {
    const after = writerOnlyFieldsOf(existing.slice(0, at) + draft.newText + existing.slice(end));
    if (after === undefined) return 'the edit would break the front matter';
    const changed = changedWriterOnlyFields(before, after);
    if (changed.length > 0) return `front matter ${writerOnlyReason(changed)}`;
    // A mistyped `Locked: true` still says what the writer meant.
    if (before.get('locked')?.some((f) => f.value === true)) return { kind: 'locked', file: draft.file, at };
  }
  return { kind: 'edit', file: draft.file, at, end };
}

/** The new file's text with what the code, not the drafter, says about it: canon, and where it came from. */
function asCanonFile(text: string, fromTurn: string): string {
  return withFrontMatterField(withFrontMatterField(text, 'class', 'canon'), 'from_turn', fromTurn);
}

/** A file name beside `file` for the new canon file that supersedes it: `mara-update.md`, `mara-update-2.md`… */
function supersedingName(file: string, taken: (p: string) => boolean): string {
  const base = file.replace(/\.[^./]+$/, '');
  for (let n = 1; ; n++) {
    const candidate = `${base}-update${n === 1 ? '' : `-${n}`}.md`;
    if (!taken(candidate)) return candidate;
  }
}

/** The heading above `offset` in `text` (the section a replaced text belongs to), if any. */
function headingAbove(text: string, offset: number): string | undefined {
  const lines = text.slice(0, offset).split(/\r?\n/);
  for (let i = lines.length - 1; i >= 0; i--) if (atxHeading(lines[i]!)) return lines[i]!.trim();
  return undefined;
}

export interface ValidatedProposals {
  proposals: CanonProposal[];
  refused: RefusedProposal[];
}

/**
 * Validates drafts (in order: earlier ones win a clash) into proposals: duplicates collapsed into one with
 * every turn and piece of evidence, an edit overlapping an earlier one's text refused, and edits to a locked
 * file gathered into one new canon file that supersedes it.
 */
export function validateProposals(drafts: readonly ProposalDraft[], target: ProposalTarget): ValidatedProposals {
  const proposals: CanonProposal[] = [];
  const refused: RefusedProposal[] = [];
  const ranges = new Map<string, { at: number; end: number }[]>();
  const byIdentity = new Map<string, CanonProposal>();
  const lockedStandIns = new Map<string, { proposal: CanonProposal; sections: string[]; drafts: ProposalDraft[] }>();
  const newFiles = new Set<string>();
  const refuse = (draft: ProposalDraft, refusal: string) => refused.push({ file: draft.file, origin: draft.origin, reason: draft.reason, refusal });

  for (const draft of drafts) {
    const identity = `${draft.file}\u0000${draft.oldText}\u0000${draft.newText}`;
    const same = byIdentity.get(identity);
    if (same) {
      // One change, more evidence: the same edit from two rules, two turns or a model repeating itself.
      for (const t of draft.turns) if (!same.turns.some((x) => x.id === t.id)) same.turns.push(t);
      for (const e of draft.evidence ?? []) if (!same.evidence.includes(e)) same.evidence.push(e);
      for (const k of draft.settles ?? []) if (!same.settles.includes(k)) same.settles.push(k);
      same.key = proposalKey(same);
      continue;
    }
    const checked = checkDraft(draft, target);
    if (typeof checked === 'string') {
      refuse(draft, checked);
      continue;
    }
    if (proposals.length >= PROPOSAL_LIMITS.proposals) {
      refuse(draft, `more than ${PROPOSAL_LIMITS.proposals} proposals in one run`);
      continue;
    }
    if (checked.kind === 'edit') {
      const taken = ranges.get(checked.file) ?? [];
      if (taken.some((r) => checked.at < r.end && r.at < checked.end)) {
        refuse(draft, 'another proposal already changes this text');
        continue;
      }
      ranges.set(checked.file, [...taken, { at: checked.at, end: checked.end }]);
      const proposal = toProposal(draft);
      byIdentity.set(identity, proposal);
      proposals.push(proposal);
    } else if (checked.kind === 'new') {
      if (newFiles.has(checked.file)) {
        refuse(draft, 'another proposal already creates this file');
        continue;
      }
      newFiles.add(checked.file);
      const proposal: CanonProposal = {
        ...toProposal(draft),
        newText: asCanonFile(checked.text, target.fromTurn(draft.turns)),
        ...(checked.dropped.length > 0 ? { dropped: { fields: checked.dropped, reason: droppedReason(checked.dropped) } } : {}),
      };
      byIdentity.set(identity, proposal);
      proposals.push(proposal);
    } else {
      // Protected canon is never edited: its changes go into one new file that supersedes it, for the writer to accept.
      const lockedText = target.read(checked.file)!;
      const section = [headingAbove(lockedText, checked.at), draft.newText.trim()].filter(Boolean).join('\n\n');
      const standIn = lockedStandIns.get(checked.file);
      if (standIn) {
        standIn.sections.push(section);
        standIn.drafts.push(draft);
        Object.assign(standIn.proposal, lockedProposal(checked.file, standIn.drafts, standIn.sections, standIn.proposal.file, target));
        continue;
      }
      const file = supersedingName(checked.file, (p) => newFiles.has(p) || target.read(p) !== undefined || fs.existsSync(path.join(target.campaign.root, ...p.split('/'))));
      newFiles.add(file);
      const proposal = lockedProposal(checked.file, [draft], [section], file, target);
      lockedStandIns.set(checked.file, { proposal, sections: [section], drafts: [draft] });
      proposals.push(proposal);
    }
  }
  return { proposals, refused };
}

function toProposal(draft: ProposalDraft): CanonProposal {
  return {
    key: proposalKey(draft),
    file: draft.file,
    oldText: draft.oldText,
    newText: draft.newText,
    reason: draft.reason,
    turns: [...draft.turns],
    origin: draft.origin,
    evidence: [...(draft.evidence ?? [])],
    settles: [...(draft.settles ?? [])],
  };
}

function lockedProposal(lockedFile: string, drafts: readonly ProposalDraft[], sections: readonly string[], file: string, target: ProposalTarget): CanonProposal {
  const lockedText = target.read(lockedFile)!;
  const meta = splitFrontMatter(lockedText).meta;
  let text = '';
  if (meta.title) text = withFrontMatterField(text, 'title', meta.title);
  for (const name of meta.entities ?? []) text = withFrontMatterListItem(text, 'entities', name);
  text = withFrontMatterListItem(text, 'supersedes', lockedFile);
  // What stands in for a narrator-only file is narrator-only too: the writer's choice, kept by the code.
  if (target.store.getSourceByPath(lockedFile)?.visibility === 'hidden') text = withFrontMatterField(text, 'visibility', 'hidden');
  const turns = [...new Map(drafts.flatMap((d) => d.turns).map((t) => [t.id, t])).values()];
  const base = {
    file,
    oldText: '',
    newText: asCanonFile(`${text}${sections.join('\n\n')}\n`, target.fromTurn(turns)),
    reason: `${lockedFile} is locked: ${drafts.map((d) => d.reason).join('; ')} — proposed as a new canon file that supersedes it`,
    turns,
    origin: drafts[0]!.origin,
  };
  return {
    ...base,
    // Keyed by what was asked of the locked file, so discarding it holds however the stand-in is named.
    key: proposalKey({ file: lockedFile, oldText: drafts.map((d) => d.oldText).join('\u0001'), turns }),
    evidence: drafts.flatMap((d) => d.evidence ?? []),
    settles: drafts.flatMap((d) => d.settles ?? []),
    supersedes: lockedFile,
  };
}

// ── the writer's answer ───────────────────────────────────────────────────────────────────────────

/** Remembers proposals the writer discarded: not proposed again for the same turns. */
export function recordDiscarded(playDb: Db, campaignId: string, adventureId: string, proposals: readonly CanonProposal[], now: () => Date = () => new Date()): void {
  const insert = playDb.prepare(
    `INSERT INTO proposal_discards (campaign_id, adventure_id, proposal_key, file, reason, created_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT DO NOTHING`,
  );
  playDb.transaction(() => proposals.forEach((p) => insert.run(campaignId, adventureId, p.key, p.file, p.reason, now().toISOString())))();
}

export function discardedKeys(playDb: Db, campaignId: string, adventureId: string): Set<string> {
  const rows = playDb.prepare('SELECT proposal_key FROM proposal_discards WHERE campaign_id = ? AND adventure_id = ?').all(campaignId, adventureId) as { proposal_key: string }[];
  return new Set(rows.map((r) => r.proposal_key));
}

/** A proposal the writer discarded, as the list of discards shows it. */
export interface DiscardedProposal {
  adventureId: string;
  key: string;
  file: string;
  reason: string;
  /** ISO time of the discard. */
  at: string;
}

/** What the writer discarded in the campaign (one adventure's, when given), newest first. */
export function listDiscarded(playDb: Db, campaignId: string, adventureId?: string): DiscardedProposal[] {
  const rows = playDb
    .prepare(
      `SELECT adventure_id, proposal_key, file, reason, created_at FROM proposal_discards
       WHERE campaign_id = ? AND (? IS NULL OR adventure_id = ?) ORDER BY created_at DESC, file`,
    )
    .all(campaignId, adventureId ?? null, adventureId ?? null) as { adventure_id: string; proposal_key: string; file: string; reason: string; created_at: string }[];
  return rows.map((r) => ({ adventureId: r.adventure_id, key: r.proposal_key, file: r.file, reason: r.reason, at: r.created_at }));
}

/** Undoes discards: those proposals are proposed again. Returns how many were restored. */
export function restoreDiscarded(playDb: Db, campaignId: string, discards: readonly Pick<DiscardedProposal, 'adventureId' | 'key'>[]): number {
  const remove = playDb.prepare('DELETE FROM proposal_discards WHERE campaign_id = ? AND adventure_id = ? AND proposal_key = ?');
  let restored = 0;
  playDb.transaction(() => discards.forEach((d) => (restored += remove.run(campaignId, d.adventureId, d.key).changes)))();
  return restored;
}

/** Whether the proposal's change is in the files now (the writer applied it, in whole). */
export function isApplied(proposal: CanonProposal, read: ReadFile): boolean {
  const text = read(proposal.file);
  if (text === undefined) return false;
  return proposal.oldText === '' ? true : occurrences(text, proposal.newText) > 0 && (proposal.newText.includes(proposal.oldText) || occurrences(text, proposal.oldText) === 0);
}

/**
 * After the writer applied some of the proposals: the settled conflicts an applied edit made true in the files
 * are cleared (the files agree now, the decision has nothing left to settle), and the proposals the writer
 * unticked are remembered as discarded. Returns what was applied and what was discarded.
 */
export function settleAnswer(playDb: Db, campaignId: string, adventureId: string, proposals: readonly CanonProposal[], read: ReadFile): { applied: CanonProposal[]; discarded: CanonProposal[] } {
  const applied = proposals.filter((p) => isApplied(p, read));
  const discarded = proposals.filter((p) => !applied.includes(p));
  clearSettledConflicts(playDb, campaignId, applied);
  recordDiscarded(playDb, campaignId, adventureId, discarded);
  return { applied, discarded };
}

/** The writer's kept statements that applied proposals wrote into the files: nothing is left for them to settle. */
export function clearSettledConflicts(playDb: Db, campaignId: string, applied: readonly CanonProposal[]): void {
  for (const key of applied.flatMap((p) => p.settles)) clearConflictDecision(playDb, campaignId, key);
}

export class ProposalWriteError extends Error {}

/**
 * Writes proposals into the campaign (the CLI's `--write`) as one set, all or nothing: each file's edits
 * together, each replaced text checked again against the file as it is now, a new file never written over
 * one that appeared since. The caller holds the campaign's write lock (withWriteLock) from proposing to
 * writing, so two runs never draft from files the other is changing. Returns the files written. Throws
 * ProposalWriteError naming every file that could not be written; then nothing was.
 */
export function writeProposals(root: string, proposals: readonly CanonProposal[]): string[] {
  const byFile = new Map<string, CanonProposal[]>();
  for (const p of proposals) byFile.set(p.file, [...(byFile.get(p.file) ?? []), p]);
  const set: SetFile[] = [];
  const failures: string[] = [];
  for (const [file, edits] of byFile) {
    const refusal = editedFile(path.join(root, ...file.split('/')), edits);
    if (typeof refusal === 'string') failures.push(`${file}: ${refusal}`);
    else set.push({ path: file, ...refusal });
  }
  if (failures.length > 0) throw new ProposalWriteError(`not written: ${failures.join('; ')}; so none of the set was written`);
  try {
    writeFileSet(root, path.join(root, DATA_DIR), set);
  } catch (error) {
    if (error instanceof WriteConflictError) throw new ProposalWriteError(`nothing was written: ${error.message}; propose again`);
    throw new ProposalWriteError(`nothing was written: ${writeFailure(error)}`);
  }
  return set.map((f) => f.path);
}

/** A file's new content with all its edits, checked against the file as it is now, or why it cannot be written. */
function editedFile(abs: string, edits: readonly CanonProposal[]): Omit<SetFile, 'path'> | string {
  if (edits.length === 1 && edits[0]!.oldText === '') {
    const there = fs.lstatSync(abs, { throwIfNoEntry: false });
    if (there?.isSymbolicLink()) return `a symbolic link is in the way (to ${fs.readlinkSync(abs)}${fs.existsSync(abs) ? '' : ', which does not exist'}); a proposal never writes through a link`;
    if (there) return 'exists already: it was created since the proposal was made; propose again';
    return { data: edits[0]!.newText, create: true };
  }
  let text: string;
  try {
    text = fs.readFileSync(abs, 'utf8');
  } catch (error) {
    return `cannot be read (${writeFailure(error)})`;
  }
  const before = text;
  for (const edit of edits) {
    if (occurrences(text, edit.oldText) !== 1) return 'the text to replace is no longer in it exactly once (changed since it was proposed, perhaps by another run)';
    const at = text.indexOf(edit.oldText);
    text = text.slice(0, at) + edit.newText + text.slice(at + edit.oldText.length);
  }
  return { data: text, expect: before };
}

const DIFF_CONTEXT = 3;

/**
 * The proposal as a unified diff against `fileText` (the file as it is now; undefined for a new file), with
 * three lines of context: what `storyteller propose` prints for review.
 */
export function proposalDiff(proposal: Pick<CanonProposal, 'file' | 'oldText' | 'newText'>, fileText: string | undefined): string {
  const lines = (text: string) => (text === '' ? [] : text.replace(/\r?\n$/, '').split(/\r?\n/));
  if (proposal.oldText === '' || fileText === undefined) {
    const added = lines(proposal.newText);
    return [`--- /dev/null`, `+++ b/${proposal.file}`, `@@ -0,0 +1,${added.length} @@`, ...added.map((l) => `+${l}`)].join('\n');
  }
  const at = fileText.indexOf(proposal.oldText);
  // Whole lines around the replaced text: it may start or end inside a line.
  const lineStart = fileText.lastIndexOf('\n', at - 1) + 1;
  const endBreak = fileText.indexOf('\n', at + proposal.oldText.length);
  const lineEnd = endBreak === -1 ? fileText.length : endBreak;
  const all = lines(fileText);
  const first = fileText.slice(0, lineStart).split('\n').length - 1;
  const removed = lines(fileText.slice(lineStart, lineEnd));
  const added = lines(fileText.slice(lineStart, at) + proposal.newText + fileText.slice(at + proposal.oldText.length, lineEnd));
  const before = all.slice(Math.max(0, first - DIFF_CONTEXT), first);
  const after = all.slice(first + removed.length, first + removed.length + DIFF_CONTEXT);
  const start = first - before.length + 1;
  return [
    `--- a/${proposal.file}`,
    `+++ b/${proposal.file}`,
    `@@ -${start},${before.length + removed.length + after.length} +${start},${before.length + added.length + after.length} @@`,
    ...before.map((l) => ` ${l}`),
    ...removed.map((l) => `-${l}`),
    ...added.map((l) => `+${l}`),
    ...after.map((l) => ` ${l}`),
  ].join('\n');
}
