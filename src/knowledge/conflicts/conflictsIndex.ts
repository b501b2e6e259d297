import { analyzeConflicts, FactCache, normalizePath, type ConflictAnalysis, type ConflictDecision, type ConflictSourceInput } from './conflicts';
import type { FactStatement } from './facts';
import { buildEntityNames, type EntityNames } from '../names';
import { factSourceFromSplit } from './factsInput';
import { sourceExclusion, splitFrontMatter } from '../campaign';
import type { CanonSupersession } from './conflictsState';
import type { ConsistencyPassage } from './conflictsModel';
import type { KnowledgeStore } from '../indexing';
import type { SourceRecord } from '../campaign';
import { indexVersion } from '../retrieval';

/**
 * Conflict detection over an indexed campaign: the store keeps each source's text as read and its resolved
 * metadata (class from front matter, folder rule or default; title; entities), so nothing is re-read from
 * disk and every surface sees the same sources the index does.
 */

function analyzedSources(store: KnowledgeStore): SourceRecord[] {
  return store.listSources().filter((s) => s.lexicalState === 'ready');
}

function conflictInputOf(store: KnowledgeStore, source: SourceRecord): ConflictSourceInput | undefined {
  const content = store.getSourceContent(source.id);
  return content === undefined ? undefined : factSourceFromSplit(source.path, content, splitFrontMatter(content), source);
}

export function conflictInputsFromStore(store: KnowledgeStore): ConflictSourceInput[] {
  return analyzedSources(store).flatMap((source) => conflictInputOf(store, source) ?? []);
}

/** The canon passages the consistency check pairs: of enabled canon the narrator is sent. */
export function canonConsistencyPassages(store: KnowledgeStore): ConsistencyPassage[] {
  return store
    .listSources()
    .filter((s) => s.class === 'canon' && !sourceExclusion(s, 'narrator'))
    .flatMap((s) => store.listPassages(s.id).map((p) => ({ passageId: p.id, sourcePath: s.path, sourceTitle: s.title, headingPath: p.headingPath, text: p.text, startLine: p.startLine })));
}

export function analyzeStoreConflicts(store: KnowledgeStore, decisions?: ReadonlyMap<string, ConflictDecision>, cache?: FactCache): ConflictAnalysis {
  return analyzeConflicts(conflictInputsFromStore(store), decisions, cache);
}

/**
 * The canon facts of a few sources at a time (the ones a turn retrieved), extracted exactly as the
 * conflict analysis extracts them, without reading the whole campaign's text on every turn: names come
 * from the index's source records, and facts are re-extracted only when a source or a name changed.
 */
export class StoreCanonFacts {
  private readonly cache = new FactCache();
  private known: { signature: string; names: EntityNames; at: string } | undefined;
  /** The source as last read, by id: re-read (and its front matter re-parsed) only when its record changed. */
  private readonly inputs = new Map<string, { signature: string; input: ConflictSourceInput | undefined }>();
  private settled: { signature: string; supersessions: CanonSupersession[]; at: string } | undefined;

  /** `decisions`: the writer's, from play.db, read at each use (a conflict settled by keeping a statement counts). */
  constructor(
    private readonly store: KnowledgeStore,
    private readonly decisions: () => ReadonlyMap<string, ConflictDecision> = () => new Map(),
  ) {}

  /** Every name declared in the campaign, resolved as the conflict analysis resolves them. */
  names(): EntityNames {
    // An index that has not changed since the last look has the same names: no need to list every source again.
    const at = indexVersion(this.store);
    if (this.known?.at === at) return this.known.names;
    const sources = analyzedSources(this.store);
    const signature = JSON.stringify(sources.map((s) => [s.title, s.entities]));
    // The same object while no name changed, so the fact cache keeps what it extracted.
    if (this.known?.signature !== signature) this.known = { signature, names: buildEntityNames(sources), at };
    else this.known.at = at;
    return this.known.names;
  }

  /** The source's facts; none for a source that is not enabled, indexed Canon. */
  factsOf(sourceId: string, names: EntityNames): FactStatement[] {
    const source = this.store.getSource(sourceId);
    if (!source || source.class !== 'canon' || !source.enabled || source.lexicalState !== 'ready') return [];
    const signature = JSON.stringify([source.sha256, source.path, source.title, source.entities]);
    let known = this.inputs.get(sourceId);
    if (known?.signature !== signature) {
      known = { signature, input: conflictInputOf(this.store, source) };
      this.inputs.set(sourceId, known);
    }
    return known.input ? this.cache.factsOf(known.input, names) : [];
  }

  /**
   * The losing statement of every conflict a `supersedes:` declaration settled, with the one that won,
   * analysed over the whole campaign as the conflicts view does, and again only when a source changed.
   */
  supersededCanon(): readonly CanonSupersession[] {
    const decisions = this.decisions();
    // Every turn asks (twice with research); an unchanged index and unchanged decisions settle nothing new.
    const at = JSON.stringify([indexVersion(this.store), [...decisions]]);
    if (this.settled?.at === at) return this.settled.supersessions;
    // What supersedes what is read from the index (written when each file was indexed): only the files a
    // declaration names are read and analysed, unless the writer kept a statement, which any pair may settle.
    const declared = this.store.supersessions();
    const writerKept = [...decisions.values()].some((d) => d === 'kept-a' || d === 'kept-b');
    if (declared.length === 0 && !writerKept) {
      this.settled = { signature: '', supersessions: [], at };
      return this.settled.supersessions;
    }
    const named = new Set(declared.flatMap((d) => [d.path, d.target].map(normalizePath)));
    const sources = analyzedSources(this.store).filter((s) => writerKept || named.has(normalizePath(s.path)));
    const signature = JSON.stringify([sources.map((s) => [s.id, s.sha256, s.class, s.enabled, s.title, s.entities]), [...decisions]]);
    if (this.settled?.signature !== signature) {
      const inputs = sources.flatMap((source) => conflictInputOf(this.store, source) ?? []);
      const settled = analyzeConflicts(inputs, decisions, this.cache, this.names()).conflicts.filter((c) => c.supersededBy !== null);
      const supersessions = settled.map((c) => {
        const [statement, by] = c.supersededBy === 'a' ? [c.b, c.a] : [c.a, c.b];
        return { statement, by, settledBy: c.settledBy! };
      });
      this.settled = { signature, supersessions, at };
    }
    this.settled.at = at;
    return this.settled.supersessions;
  }
}
