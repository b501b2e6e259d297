import { createHash } from 'node:crypto';
import { extractFacts, type FactSourceInput, type FactStatement } from './facts';
import { buildEntityNames, type EntityNames } from '../names';
import { valuesConflict } from './factsNormalize';

/**
 * Canon contradicting itself: two Canon statements about the same entity and attribute whose values
 * disagree. Reference and Inspiration never conflict with anything — they are not truth.
 */

export const CONFLICT_DECISIONS = ['ignored', 'kept-a', 'kept-b', 'accepted', 'dismissed'] as const;
/**
 * Stored in play.db `conflict_decisions`. A detected pair: ignored (no contradiction: both stay true, both
 * are sent) or kept-a / kept-b (the writer chose that side's statement: the other is sent as superseded,
 * with no file edited). A model suggestion: accepted / dismissed.
 */
export type ConflictDecision = (typeof CONFLICT_DECISIONS)[number];

export interface ConflictSourceInput extends FactSourceInput {
  /** Front matter `supersedes:` — campaign-relative paths this source wins over wherever they disagree. */
  supersedes: readonly string[];
  enabled: boolean;
}

export interface CanonConflict {
  /** Stable across line moves and reindexing; changes when either value or file changes. */
  key: string;
  entity: string;
  entityKey: string;
  attribute: string;
  attributeKey: string;
  /** Ordered by path then value, so the pair reads the same every time. */
  a: FactStatement;
  b: FactStatement;
  /**
   * The side that is true now, the other superseded: resolved, shown as history, never as an error. Its
   * source declares it supersedes the other's, or the writer kept it (`settledBy`).
   */
  supersededBy: 'a' | 'b' | null;
  /** How the conflict was settled: a `supersedes:` declaration, or the writer keeping one statement (which wins). */
  settledBy: 'supersedes' | 'writer' | null;
  decision: ConflictDecision | null;
}

/** Still needs the writer: not superseded and not ignored. */
export function isOpenConflict(conflict: CanonConflict): boolean {
  return conflict.supersededBy === null && conflict.decision !== 'ignored';
}

export function conflictKey(entityKey: string, attributeKey: string, a: FactStatement, b: FactStatement): string {
  const sides = [a, b].map((s) => `${s.path}\u0000${s.valueKey}`).sort();
  const digest = createHash('sha256').update(`${entityKey}\u0000${attributeKey}\u0000${sides.join('\u0001')}`).digest('hex');
  return `fact:${digest.slice(0, 24)}`;
}

/** A campaign-relative path as `supersedes:` may spell it (`./a.md`, `a\\b.md`) and the index holds it. */
export function normalizePath(p: string): string {
  return p.replace(/\\/g, '/').replace(/^\.\//, '').replace(/^\/+/, '');
}

/** path → every path it supersedes, directly or through a chain (A supersedes B supersedes C). */
function supersessionClosure(sources: readonly ConflictSourceInput[]): Map<string, Set<string>> {
  const direct = new Map(sources.map((s) => [normalizePath(s.path), new Set(s.supersedes.map(normalizePath))]));
  const closure = new Map<string, Set<string>>();
  for (const start of direct.keys()) {
    const seen = new Set<string>();
    const stack = [...(direct.get(start) ?? [])];
    while (stack.length > 0) {
      const next = stack.pop()!;
      if (seen.has(next) || next === start) continue;
      seen.add(next);
      stack.push(...(direct.get(next) ?? []));
    }
    closure.set(start, seen);
  }
  return closure;
}

/**
 * Facts per source, kept across analyses: the extension re-analyzes on every index change, and only the
 * sources whose text changed — or all of them, when a declared name changed — are extracted again.
 */
export class FactCache {
  private readonly entries = new Map<string, { input: ConflictSourceInput; namesSignature: string; facts: FactStatement[] }>();
  private namesSignature = '';
  private namesSeen: EntityNames | undefined;

  factsOf(source: ConflictSourceInput, names: EntityNames): FactStatement[] {
    if (this.namesSeen !== names) {
      this.namesSeen = names;
      this.namesSignature = JSON.stringify(names.entities());
    }
    const cached = this.entries.get(source.sourceId);
    if (cached && cached.namesSignature === this.namesSignature && sameInput(cached.input, source)) return cached.facts;
    const facts = extractFacts({ ...source, path: normalizePath(source.path) }, names);
    this.entries.set(source.sourceId, { input: source, namesSignature: this.namesSignature, facts });
    return facts;
  }
}

function sameInput(a: ConflictSourceInput, b: ConflictSourceInput): boolean {
  return (
    a.body === b.body &&
    a.bodyStartLine === b.bodyStartLine &&
    a.path === b.path &&
    a.title === b.title &&
    a.class === b.class &&
    JSON.stringify(a.frontMatterFacts) === JSON.stringify(b.frontMatterFacts)
  );
}

/** Everything the conflict surfaces need, computed once per index change. */
export class ConflictAnalysis {
  private readonly byLocation = new Map<string, FactStatement[]>();

  constructor(
    readonly facts: readonly FactStatement[],
    readonly conflicts: readonly CanonConflict[],
    readonly names: EntityNames,
    /** A superseded source's path → the enabled canon sources that supersede it, directly or through a chain. */
    readonly supersededBy: ReadonlyMap<string, readonly string[]> = new Map(),
  ) {
    for (const fact of facts) {
      const key = `${fact.path}\u0000${fact.line}`;
      const list = this.byLocation.get(key);
      if (list) list.push(fact);
      else this.byLocation.set(key, [fact]);
    }
  }

  get openConflicts(): CanonConflict[] {
    return this.conflicts.filter(isOpenConflict);
  }

  statementsAt(path: string, line: number): FactStatement[] {
    return this.byLocation.get(`${normalizePath(path)}\u0000${line}`) ?? [];
  }

  /** Conflicts one of whose statements is in `path` (optionally on `line`). */
  conflictsAt(path: string, line?: number): CanonConflict[] {
    const p = normalizePath(path);
    const at = (s: FactStatement) => s.path === p && (line === undefined || s.line === line);
    return this.conflicts.filter((c) => at(c.a) || at(c.b));
  }

  conflictsOfEntity(entityKey: string): CanonConflict[] {
    return this.conflicts.filter((c) => c.entityKey === entityKey);
  }

  /** Every canon statement of one entity's attribute, the agreeing ones too (a hover shows them all). */
  statementsAbout(entityKey: string, attributeKey: string): FactStatement[] {
    return this.facts.filter((f) => f.entityKey === entityKey && f.attributeKey === attributeKey);
  }
}

/**
 * Extracts the facts of every enabled Canon source and pairs the disagreeing ones. `decisions` are the
 * writer's stored choices by conflict key; `sources` should be the whole campaign so names declared
 * anywhere (a title, an alias) resolve everywhere, or `names` the whole campaign's.
 */
export function analyzeConflicts(
  sources: readonly ConflictSourceInput[],
  decisions: ReadonlyMap<string, ConflictDecision> = new Map(),
  cache?: FactCache,
  /** The campaign's names, when `sources` are only some of its files. */
  names: EntityNames = buildEntityNames(sources),
): ConflictAnalysis {
  const canon = sources.filter((s) => s.class === 'canon' && s.enabled);
  const facts = canon.flatMap((s) => (cache ? cache.factsOf(s, names) : extractFacts({ ...s, path: normalizePath(s.path) }, names)));
  const supersedes = supersessionClosure(canon);
  const groups = new Map<string, FactStatement[]>();
  for (const fact of facts) {
    const key = `${fact.entityKey}\u0000${fact.attributeKey}`;
    const group = groups.get(key);
    if (group) group.push(fact);
    else groups.set(key, [fact]);
  }
  const conflicts: CanonConflict[] = [];
  for (const group of groups.values()) {
    for (let i = 0; i < group.length; i++) {
      for (let j = i + 1; j < group.length; j++) {
        const [a, b] = [group[i]!, group[j]!].sort((x, y) => x.path.localeCompare(y.path) || x.valueKey.localeCompare(y.valueKey)) as [
          FactStatement,
          FactStatement,
        ];
        if (!valuesConflict(a.valueKey, b.valueKey)) continue;
        const key = conflictKey(a.entityKey, a.attributeKey, a, b);
        const decision = decisions.get(key) ?? null;
        const kept = decision === 'kept-a' ? 'a' : decision === 'kept-b' ? 'b' : null;
        const declared = supersedes.get(a.path)?.has(b.path) ? 'a' : supersedes.get(b.path)?.has(a.path) ? 'b' : null;
        conflicts.push({
          key,
          entity: names.displayName(a.entityKey) ?? a.entity,
          entityKey: a.entityKey,
          // A list heading ("Ages") names the attribute less directly than a sheet line ("Age").
          attribute: a.shape === 'entity-list' ? b.attribute : a.attribute,
          attributeKey: a.attributeKey,
          a,
          b,
          supersededBy: kept ?? declared,
          settledBy: kept ? 'writer' : declared ? 'supersedes' : null,
          decision,
        });
      }
    }
  }
  conflicts.sort((x, y) => x.a.path.localeCompare(y.a.path) || x.a.line - y.a.line || x.b.path.localeCompare(y.b.path) || x.b.line - y.b.line);
  const supersededBy = new Map<string, string[]>();
  for (const [winner, losers] of supersedes) for (const loser of losers) supersededBy.set(loser, [...(supersededBy.get(loser) ?? []), winner]);
  return new ConflictAnalysis(facts, conflicts, names, supersededBy);
}

/** The decision that keeps `statement`, one side of the conflict, as the true one. */
export function keepDecision(conflict: CanonConflict, statement: FactStatement): ConflictDecision {
  const isSide = (side: FactStatement) => side.path === statement.path && side.line === statement.line && side.valueKey === statement.valueKey;
  if (isSide(conflict.a)) return 'kept-a';
  if (isSide(conflict.b)) return 'kept-b';
  throw new Error(`${statement.path}:${statement.line} is not a side of the conflict ${conflict.key}`);
}

/** One line a writer can read: `Sister Mara — Age: "34" (characters/mara.md:9) vs "41" (canon.md:30)`. */
export function describeConflict(conflict: CanonConflict): string {
  const side = (s: FactStatement) => `"${s.value}" (${s.path}:${s.line})`;
  return `${conflict.entity} — ${conflict.attribute}: ${side(conflict.a)} vs ${side(conflict.b)}`;
}
