import type {
  BudgetConflict,
  CandidateDecision,
  KnowledgeBudgets,
  KnowledgeSection,
  RetrievalQuery,
  RetrievalRecord,
  RetrievalResult,
  RetrievalStage,
  SelectedPassage,
  SemanticStatus,
  TokenMeasure,
  WorldInfoQuery,
  WorldInfoRecord,
} from './retrievalTypes';
import { activateSources, defaultWorldInfoQuery, entryContent, worldInfoSources } from './worldInfoEntries';
import { insertionOrder, type EntryVerdict } from './worldInfo';
import { buildMatchExpression, buildSearchTerms, forgetWordsWhenFull, matchTerms, respelled, RECENT_LINES_IN_QUERY, smallWords, stemmedPassage, stemText, tellsWhy, termText, tokenize, type SearchTerm, type StemmedText } from './retrievalTerms';
import { triggeredSources, triggerReason, type Trigger } from './retrievalTriggers';
import { answers, answerStrength, campaignSpelling, campaignStatistics, inverseFrequency, judge, passageHolds, queryWeights, wordsApart, type CampaignStatistics, type FileUse, type LexicalJudgement, type QueryWeights } from './retrievalScore';
import { semanticCandidates, type SemanticJudge, type SemanticSearchOptions } from './embeddings';
import { CANDIDATE_COLUMNS, ELIGIBLE, KeptRows, rowIdentity, rowSelected, rowSource, textLength, type CandidateRow } from './retrievalRows';
import { jaccardAtLeast, overlap, shingles, type ShingleSet } from './shingles';
import type { KnowledgeStore } from '../indexing';
import { ALWAYS_INCLUDED_SQL, estimateTokens, isAlwaysIncluded, sourceExclusion, type KnowledgeClass, type Priority } from '../campaign';

/** The one default for every surface (CLI, extension, story engine) that does not size budgets itself. */
export const DEFAULT_KNOWLEDGE_BUDGETS: Readonly<KnowledgeBudgets> = Object.freeze({
  alwaysInclude: 600,
  canon: 1500,
  reference: 900,
  inspiration: 300,
});

/** Class orders what relevance admitted; multiplying means it can never rescue what was not admitted. */
export const CLASS_WEIGHT: Readonly<Record<KnowledgeClass, number>> = { canon: 1, reference: 0.85, inspiration: 0.7 };
/**
 * A search shows a passage only when its relevance is at least this share of the best result's (tuned on
 * FairytaleQA train: fewer tokens, the same recall; 0.35 over 0.3, all 232 stories: 6% fewer tokens per
 * story and 2% fewer pooled, below raw bm25's five there, for R@5 −0.002 per story and none pooled).
 * A prompt keeps them all: its budgets decide there.
 */
const SEARCH_RELATIVE_RELEVANCE = 0.35;
/**
 * An admitted passage gains this share of the lexical score of the stronger of its admitted neighbours in
 * the same file: a story or a page carries its subject across passages, so the passage beside the one that
 * names the event is likelier about it than one elsewhere sharing a word. It orders what relevance
 * admitted; it admits nothing. Tuned on FairytaleQA train (R@5 per story 0.916 -> 0.923, pooled 0.876 -> 0.883).
 */
const NEIGHBOUR_WEIGHT = 0.25;
/** How much the weaker path adds to the stronger one in hybrid relevance. */
export const HYBRID_SECOND_PATH_WEIGHT = 0.15;
/** FTS5's bm25 (stems, heading weighted) picks this many passages; only they are joined and judged. */
const CANDIDATE_POOL = 80;
/** FTS5 column weights of the first cut: the heading trail counts this many times the body. */
const HEADING_WEIGHT = 2;
/** Passages whose word-shingle sets overlap this much say the same thing. */
const DUPLICATE_JACCARD = 0.8;
/** A passage this much covered by current-state facts only repeats them. */
const IN_STATE_CONTAINMENT = 0.7;
const PRIORITY_BOOST: Record<Priority, number> = { low: 0.8, normal: 1, high: 1.25 };
const ENTITY_BOOST = 1.2;
const TAG_BOOST = 1.1;

export interface RetrievalOptions {
  /** Semantic retrieval; omitted or null means lexical only (and the record says so). */
  semantic?: SemanticSearchOptions | null;
  now?: () => Date;
}

/** One passage on its way through the pipeline: the decision being written, and what decides it. */
interface Working {
  row: CandidateRow;
  decision: CandidateDecision;
  headingPath: string[];
  hidden: boolean;
  /** Lexical relevance (see retrievalScore.ts); null when only the semantic path found it. */
  lexical: LexicalJudgement | null;
  /** The key or name of its source this turn mentioned: eligible by that alone. */
  trigger: Trigger | null;
  /** A prompt's SillyTavern verdict on its source, when the source carries SillyTavern behaviour. */
  worldInfo?: EntryVerdict;
  /** Relevance among the admitted (1 for the best), before class and boosts order it. */
  relevance: number;
}

function eligibilityOutcome(row: CandidateRow, stage: RetrievalStage): CandidateDecision['outcome'] | null {
  return sourceExclusion(rowSource(row), stage);
}

/** Why an excluded passage is out; `found` says what made it a candidate ("matched 'x'"), if anything. */
function eligibilityReason(row: CandidateRow, outcome: CandidateDecision['outcome'], found: string): string {
  const what = found ? `${found}, but ` : '';
  switch (outcome) {
    case 'disabled':
      return `${what}its source ${row.path} is disabled`;
    case 'hidden-for-stage':
      return `${what}its source ${row.path} is hidden (narrator-only) and this text is for the player`;
    case 'not-ready':
      return row.lexical_state === 'duplicate'
        ? `${what}its source ${row.path} duplicates ${row.duplicate_of ?? 'another source'} and is not indexed`
        : `${what}its source ${row.path} is ${row.lexical_state === 'error' ? 'not indexed: it has an error (see Problems)' : 'not indexed yet'}`;
    default:
      return what;
  }
}

/** At most a dozen words, so a pasted chapter's reasons stay readable (and small in every turn's record). */
const LISTED_WORDS = 12;
function quoteList(items: readonly string[]): string {
  const listed = items.slice(0, LISTED_WORDS).map((t) => `'${t}'`).join(', ');
  return items.length > LISTED_WORDS ? `${listed} and ${items.length - LISTED_WORDS} more` : listed;
}

/** A passage's shingles, built when redundancy is judged and kept while its stemmed text is (by content, across turns). */
const passageShingles = new WeakMap<StemmedText, ShingleSet>();
function shinglesOf(w: Working): ShingleSet {
  const stemmed = stemmedPassage(w.row.content_hash, () => w.row.text);
  let built = passageShingles.get(stemmed);
  if (!built) passageShingles.set(stemmed, (built = shingles(stemmed.words, true)));
  return built;
}

function toWorking(row: CandidateRow, lexical: LexicalJudgement | null, trigger: Trigger | null = null): Working {
  const headingPath = JSON.parse(row.heading_path) as string[];
  return {
    row,
    headingPath,
    hidden: row.visibility === 'hidden',
    lexical,
    trigger,
    relevance: 0,
    decision: {
      ...rowIdentity(row, headingPath, row.token_count),
      startLine: row.start_line,
      endLine: row.end_line,
      admitted: false,
      matchedTerms: [],
      lexicalScore: lexical === null ? null : round(lexical.score),
      similarity: null,
      semanticFloor: null,
      score: null,
      boosts: [],
      outcome: 'not-relevant',
      reason: '',
      section: null,
      duplicateOf: null,
    },
  };
}

/**
 * The terms FTS5 finds the candidate pool by. A pasted chapter has thousands: OR-ing them all costs seconds
 * and common words add nothing to which 80 passages rank first, so a long query's pool is found by its
 * rarest words the campaign holds. Every term still counts in judging the pool and in the evidence.
 */
const MAX_POOL_TERMS = 64;
/** A pasted chapter rather than a turn: more terms than a pool is found by. */
function isPastedChapter(terms: readonly SearchTerm[]): boolean {
  return terms.length > MAX_POOL_TERMS;
}
function poolFinders(stats: CampaignStatistics, terms: SearchTerm[]): SearchTerm[] {
  if (!isPastedChapter(terms)) return terms;
  return terms
    .map((term) => ({ term, df: inverseFrequency(stats, term).df }))
    .filter((t) => t.df > 0)
    .sort((a, b) => a.df - b.df)
    .slice(0, MAX_POOL_TERMS)
    .map((t) => t.term);
}

/**
 * A turn is read closely: its capitalised names whole, its misspellings as the campaign spells them. A
 * pasted chapter (more terms than its pool is found by) is not: hundreds of names and unknown words, each
 * asked of the index, cost more than its search, and a few among thousands change nothing.
 */
function readClosely(stats: CampaignStatistics, terms: SearchTerm[], input: string): SearchTerm[] {
  if (isPastedChapter(terms)) return terms.filter((t) => !t.capitalized);
  return respelled(terms, input, (word, before, after) => campaignSpelling(stats, word, before, after));
}

/** Multi-word names the library declares (front matter `entities`), searched as phrases: read again only when the index changed. */
const namesCache = new WeakMap<KnowledgeStore, { key: string; names: string[] }>();
function libraryNames(store: KnowledgeStore, version: string): string[] {
  const cached = namesCache.get(store);
  if (cached && cached.key === version) return cached.names;
  const rows = store
    .statement("SELECT DISTINCT entities FROM sources WHERE campaign_id = ? AND entities <> '[]' AND enabled = 1")
    .all(store.campaignId) as { entities: string }[];
  const names = [...new Set(rows.flatMap((r) => JSON.parse(r.entities) as string[]))];
  namesCache.set(store, { key: version, names });
  return names;
}

/**
 * The eligible passages of pinned canon (always_include), in placement order, read again only when the index
 * changed: every prompt asks, and the query walks every source of the campaign (a tenth of a warm turn on the SRD).
 */
const pinnedCache = new WeakMap<KnowledgeStore, { key: string; byStage: Map<RetrievalStage, CandidateRow[]> }>();
function pinnedRows(store: KnowledgeStore, version: string, stage: RetrievalStage): CandidateRow[] {
  let cached = pinnedCache.get(store);
  if (cached?.key !== version) pinnedCache.set(store, (cached = { key: version, byStage: new Map() }));
  let rows = cached.byStage.get(stage);
  if (!rows) {
    rows = store
      .statement(
        // From the few pinned sources to their passages (CROSS JOIN keeps that order), never a scan of every passage.
        `SELECT ${CANDIDATE_COLUMNS} FROM sources s CROSS JOIN passages p ON p.source_id = s.id
         WHERE s.campaign_id = @campaign AND ${ALWAYS_INCLUDED_SQL} AND (${ELIGIBLE})
         ORDER BY CASE s.priority WHEN 'high' THEN 0 WHEN 'normal' THEN 1 ELSE 2 END, s.path, p.idx`,
      )
      .all({ campaign: store.campaignId, stage }) as CandidateRow[];
    cached.byStage.set(stage, rows);
  }
  return rows;
}

export interface RankedCandidates {
  queryText: string;
  terms: SearchTerm[];
  semantic: SemanticStatus;
  /** Eligible passages pinned by always_include (canon only), in placement order. */
  alwaysInclude: Working[];
  /** Admitted, ranked best first; duplicates and in-state repeats already marked. */
  admitted: Working[];
  /** Everything else that became a candidate: refused by relevance, or excluded by eligibility. */
  rest: Working[];
  /** Why nothing was admitted, when nothing was. */
  abstention: string | null;
  /** SillyTavern's activation, for a prompt over a campaign with such entries. */
  worldInfo: WorldInfoRecord | null;
}

interface RankInput {
  /** Prompts place always_include canon first; a search lets it compete on relevance like the rest. */
  placePins: boolean;
  input: string;
  recent?: string[];
  scene?: string;
  entities?: string[];
  stateFacts?: string[];
  stage: RetrievalStage;
  /** A prompt's chat for SillyTavern's activation (placePins only). */
  worldInfo?: WorldInfoQuery;
  budgets?: KnowledgeBudgets;
  measure?: TokenMeasure;
}

/**
 * Candidate rows read so far, by rowid, while the index stays as it is (see CampaignStatistics.key): a
 * passage many turns find is joined to its source and read out of the index once, not once a turn.
 */
const candidateRows = new WeakMap<KnowledgeStore, { key: string; rows: KeptRows }>();
/** Bytes of passage text held as candidate rows before they are dropped and read afresh. */
const CANDIDATE_TEXT_HELD = 8_000_000;

/**
 * The pool: FTS5's bm25 (stems, heading weighted) best CANDIDATE_POOL passages of this campaign, best
 * first, eligible or not, so what eligibility excludes is still recorded with its reason. In an index file
 * other campaigns share, their passages must not take the pool's places. Ordered by bm25() itself: the same
 * order as `rank MATCH 'bm25(…)' ORDER BY rank`, which took half as long again on the SRD ×10.
 */
function poolRows(store: KnowledgeStore, stats: CampaignStatistics, match: string): CandidateRow[] {
  const rowids = store
    .statement(
      `SELECT rowid FROM passages_fts WHERE passages_fts MATCH @match
       ${stats.sharedIndex ? 'AND rowid IN (SELECT rowid FROM passages WHERE campaign_id = @campaign)' : ''}
       ORDER BY bm25(passages_fts, ${HEADING_WEIGHT}, 1) LIMIT ${CANDIDATE_POOL}`,
    )
    .pluck()
    .all({ match, campaign: store.campaignId }) as number[];
  let held = candidateRows.get(store);
  if (!held || held.key !== stats.key || held.rows.textBytes > CANDIDATE_TEXT_HELD) candidateRows.set(store, (held = { key: stats.key, rows: new KeptRows() }));
  const kept = held.rows;
  const unread = rowids.filter((rowid) => !kept.has(rowid));
  const read = new Map<number, CandidateRow>();
  if (unread.length > 0) {
    // From the pool's rowids to their rows (CROSS JOIN keeps that order): never a walk over every passage.
    const rows = store
      .statement(
        `SELECT ${CANDIDATE_COLUMNS} FROM (SELECT value AS rowid FROM json_each(@rowids)) f
         CROSS JOIN passages p ON p.rowid = f.rowid CROSS JOIN sources s ON s.id = p.source_id
         WHERE p.campaign_id = @campaign`,
      )
      .all({ rowids: JSON.stringify(unread), campaign: store.campaignId }) as CandidateRow[];
    for (const row of rows) {
      kept.keep(row);
      read.set(row.rowid, row);
    }
  }
  return rowids.flatMap((rowid) => read.get(rowid) ?? kept.row(rowid) ?? []);
}

/**
 * Everything up to budget selection: eligibility, candidates from both paths, admission by relevance
 * alone, then hybrid score × class weight × boosts among the survivors, then redundancy suppression.
 */
async function rankCandidates(store: KnowledgeStore, query: RankInput, options: RetrievalOptions): Promise<RankedCandidates> {
  forgetWordsWhenFull();
  const stats = campaignStatistics(store);
  const searched = buildSearchTerms({ ...query, knownNames: libraryNames(store, stats.key) });
  const terms = readClosely(stats, searched.terms, query.input);
  const queryText = searched.queryText;
  const match = buildMatchExpression(poolFinders(stats, terms));
  const byId = new Map<string, Working>();

  // A pasted chapter's hundred small words would only add noise to the ranking its thousands of words decide.
  const weights = queryWeights(stats, terms, isPastedChapter(terms) ? [] : smallWords(query.input));
  // A prompt lets SillyTavern's activation decide the entries that carry its behaviour; a search finds them by mention.
  const eligibleEntries = query.placePins ? worldInfoSources(store, stats.key).filter((source) => eligibilityOutcome(source.rows[0]!, query.stage) === null) : [];
  const wiQuery = eligibleEntries.length > 0 ? (query.worldInfo ?? defaultWorldInfoQuery({ input: query.input, recent: query.recent ?? [], budgets: query.budgets ?? DEFAULT_KNOWLEDGE_BUDGETS })) : null;
  const measure = query.measure;
  const activation = wiQuery ? activateSources(eligibleEntries, wiQuery, (text) => measure?.text?.(text) ?? estimateTokens(text), (source) => entryContent(store, source)) : null;
  // Mentions are read where SillyTavern scans: this turn and the newest story lines, never the standing state.
  const fired = triggeredSources(store, stats.key, [query.input, ...(query.recent ?? []).slice(-RECENT_LINES_IN_QUERY)].join('\n'), activation !== null);
  const judgeRow = (row: CandidateRow, files: FileUse | null): Working => {
    const trigger = fired.get(row.source_id) ?? null;
    // A mentioned key is what the writer said the entry is about: it counts as part of its heading.
    // A heading trail is shared by many passages and asked of every turn: stemmed once, unless a mention joins it.
    const trail = () => (JSON.parse(row.heading_path) as string[]).join(' ');
    const heading = trigger ? stemText(`${trail()} ${trigger.mention}`) : stemmedPassage(row.heading_path, trail);
    const body = stemmedPassage(row.content_hash, () => row.text);
    return toWorking(row, judge(stats, weights, terms, { heading, body, length: textLength(row), sourceId: row.source_id }, files), trigger);
  };
  const pool = match ? poolRows(store, stats, match) : [];
  // An entry SillyTavern inserts is its whole text, every passage of it.
  if (activation) {
    const pooled = new Set(pool.map((row) => row.id));
    for (const source of eligibleEntries) if (activation.verdicts.get(source.sourceId)?.fired) pool.push(...source.rows.filter((row) => !pooled.has(row.id)));
  }
  // A triggered source the pool did not reach is represented by its opening passage.
  const reached = new Set(pool.map((row) => row.source_id));
  const unreached = [...fired.keys()].filter((id) => !reached.has(id));
  if (unreached.length > 0) {
    pool.push(
      ...(store
        .statement(
          `SELECT ${CANDIDATE_COLUMNS} FROM passages p JOIN sources s ON s.id = p.source_id
           WHERE p.source_id IN (SELECT value FROM json_each(@sources))
             AND p.idx = (SELECT min(idx) FROM passages WHERE source_id = p.source_id)`,
        )
        .all({ sources: JSON.stringify(unreached) }) as CandidateRow[]),
    );
  }
  // Each candidate is weighed by how its own file uses the turn's words; a pasted chapter, by the campaign's
  // use of them: its hundreds of words counted file by file would cost more than its search.
  const files = isPastedChapter(terms) ? null : stats.fileUse([...new Set(pool.map((row) => row.source_id))]);
  for (const row of pool) byId.set(row.id, judgeRow(row, files));
  if (activation) for (const w of byId.values()) w.worldInfo = activation.verdicts.get(w.row.source_id);

  let semantic: SemanticStatus = { used: false, model: null, reason: 'semantic retrieval is off: no embedding model configured' };
  let floor: number | null = null;
  let meaning: SemanticJudge | null = null;
  const similarities = new Map<string, number>();
  if (options.semantic) {
    const found = await semanticCandidates(store, options.semantic, queryText, query.stage);
    semantic = found.status;
    floor = found.floor;
    meaning = found.judge;
    for (const hit of found.hits) {
      similarities.set(hit.row.id, hit.similarity);
      if (!byId.has(hit.row.id)) byId.set(hit.row.id, { ...toWorking(hit.row, null), ...(activation?.verdicts.has(hit.row.source_id) ? { worldInfo: activation.verdicts.get(hit.row.source_id)! } : {}) });
    }
  }

  const alwaysInclude = !query.placePins
    ? []
    : pinnedRows(store, stats.key, query.stage).map((row) => byId.get(row.id) ?? { ...toWorking(row, null), ...(activation?.verdicts.has(row.source_id) ? { worldInfo: activation.verdicts.get(row.source_id)! } : {}) });
  const pinned = new Set(alwaysInclude.map((w) => w.row.id));

  const admitted: Working[] = [];
  const rest: Working[] = [];
  const placedPins: Working[] = [];
  /** Admitted by their words alone: what the semantic veto judges. */
  const byWordsAlone: Working[] = [];
  const eligible = [...byId.values()].filter((w) => w.lexical && eligibilityOutcome(w.row, query.stage) === null);
  const best = eligible.reduce<LexicalJudgement | undefined>((b, w) => (!b || answerStrength(weights, w.lexical!) > answerStrength(weights, b) ? w.lexical! : b), undefined);
  const apart = wordsApart(weights, eligible.map((w) => w.lexical!.matched));
  const answered = answers(weights, best, apart);

  for (const w of new Set([...byId.values(), ...alwaysInclude])) {
    const d = w.decision;
    const matched = w.lexical?.matched ?? [];
    d.matchedTerms = matched.map((t) => t.text);
    const similarity = similarities.get(w.row.id);
    if (similarity !== undefined) {
      d.similarity = round(similarity);
      d.semanticFloor = floor;
    }
    const excluded = eligibilityOutcome(w.row, query.stage);
    if (excluded) {
      d.outcome = excluded;
      d.reason = eligibilityReason(w.row, excluded, w.trigger ? triggerReason(w.trigger) : d.matchedTerms.length > 0 ? `matched ${quoteList(d.matchedTerms)}` : '');
      rest.push(w);
      continue;
    }
    if (w.worldInfo) {
      // SillyTavern's verdict decides: what it inserts is admitted (pinned where the file says so); what it
      // holds back stays out, unless the campaign lets relevance admit such entries too.
      const verdict = w.worldInfo;
      if (verdict.fired) {
        d.admitted = true;
        d.reason = `World Info: ${verdict.reason}`;
        (pinned.has(w.row.id) ? placedPins : admitted).push(w);
        continue;
      }
      if (!wiQuery!.searchAdmits) {
        d.reason = `World Info holds it back: ${verdict.reason}`;
        rest.push(w);
        continue;
      }
      if (pinned.has(w.row.id)) {
        // A constant entry SillyTavern held back is no pin: relevance alone may admit it.
        pinned.delete(w.row.id);
      }
    }
    if (pinned.has(w.row.id)) {
      d.admitted = true;
      d.reason = 'always included: pinned canon (always_include), placed before anything retrieved';
      placedPins.push(w);
      continue;
    }
    if (w.trigger) {
      d.admitted = true;
      const mentioned = new Set(tokenize(w.trigger.mention));
      const alsoMatched = matched.filter((t) => !t.words.every((word) => mentioned.has(word))).map((t) => t.text);
      d.reason = [triggerReason(w.trigger), alsoMatched.length > 0 ? `matched ${quoteList(alsoMatched)}` : ''].filter(Boolean).join('; ');
      admitted.push(w);
      continue;
    }
    const lexicalVerdict = admitLexically(w.lexical, weights, answered, apart, best);
    const semanticVerdict =
      similarity === undefined || floor === null
        ? null
        : similarity >= floor
          ? { admitted: true, reason: `similarity ${similarity.toFixed(3)} ≥ floor ${floor.toFixed(3)}` }
          : { admitted: false, reason: `similarity ${similarity.toFixed(3)} below the floor ${floor.toFixed(3)}` };
    d.admitted = lexicalVerdict.admitted || semanticVerdict?.admitted === true;
    const telling = lexicalVerdict.admitted ? w.lexical!.smallMatched.filter(tellsWhy) : [];
    const rankedUp = telling.length > 0 ? `ranked up by its small words ${quoteList(telling)}` : '';
    d.reason = [lexicalVerdict.reason, semanticVerdict?.reason, rankedUp].filter(Boolean).join('; ');
    (d.admitted ? admitted : rest).push(w);
    if (lexicalVerdict.admitted && semanticVerdict?.admitted !== true) byWordsAlone.push(w);
    // The outcome ('not-relevant') says it was refused; the reason says why, once.
    if (!d.admitted && !d.reason) d.reason = 'it shares no word of this turn that says what it is about';
  }

  const vetoed = meaning && floor !== null ? semanticVeto(byWordsAlone, meaning, floor, semantic.model!) : null;
  if (vetoed) {
    const out = new Set(byWordsAlone);
    admitted.splice(0, admitted.length, ...admitted.filter((w) => !out.has(w)));
    rest.push(...byWordsAlone);
  }
  scoreSurvivors(admitted, similarities, floor, terms, query.entities ?? [], sourceEvidence([...byId.values()], weights));
  // What SillyTavern inserts goes first, its highest order first, as its budget admits them; then by score.
  const stOrder = (w: Working) => (w.worldInfo?.fired ? w.worldInfo.order : -Infinity);
  const activatedAt = (w: Working) => w.worldInfo?.activatedAt ?? 0;
  admitted.sort((a, b) => stOrder(b) - stOrder(a) || activatedAt(a) - activatedAt(b) || b.decision.score! - a.decision.score! || a.row.rowid - b.row.rowid);
  suppressRedundancy(admitted, placedPins, query.stateFacts ?? []);
  const abstention = admitted.length > 0 ? null : vetoed ?? whyNothing(terms, weights, apart, best && [...byId.values()].find((w) => w.lexical === best));
  return { queryText, terms, semantic, alwaysInclude: placedPins, admitted, rest, abstention, worldInfo: activation?.record ?? null };
}

/**
 * The semantic veto: words can match where meaning does not (a rules question meeting a tale on "protection").
 * When every passage admitted by its words alone sits far below the embedding model's calibrated floor — no
 * nearer the query than two unrelated passages of this library usually are — that answer is not admitted.
 * One passage nearer than that, or one with no vector to judge by, and the words stand. Returns the reason,
 * or null when there is no veto.
 */
function semanticVeto(byWords: readonly Working[], judge: SemanticJudge, floor: number, model: string): string | null {
  if (byWords.length === 0) return null;
  const measured: [Working, number][] = [];
  for (const w of byWords) {
    const similarity = judge.similarity(w.row);
    if (similarity === undefined || similarity > judge.farBelow) return null;
    measured.push([w, similarity]);
  }
  const nearest = Math.max(...measured.map(([, s]) => s));
  const why =
    `'${model}' puts ${byWords.length === 1 ? 'the one passage' : `all ${byWords.length} passages`} the words admitted far below its calibrated floor ${floor.toFixed(3)} ` +
    `(nearest ${nearest.toFixed(3)}; half of this library's unrelated passage pairs are ${judge.farBelow.toFixed(3)} or nearer): the words match, the meaning does not`;
  for (const [w, similarity] of measured) {
    const d = w.decision;
    const said = d.similarity !== null;
    d.admitted = false;
    d.similarity = round(similarity);
    d.semanticFloor = floor;
    d.reason = `${d.reason}; vetoed by meaning: ${said ? 'far below the floor' : `similarity ${similarity.toFixed(3)}, far below the floor ${floor.toFixed(3)}`}`;
  }
  return `semantic veto: ${why}`;
}

/** Nothing admitted: what the query asked that the campaign lacks, in the writer's words. */
function whyNothing(terms: readonly SearchTerm[], weights: QueryWeights, apart: readonly SearchTerm[], nearest: Working | undefined): string {
  if (terms.length === 0) return 'the query has no words to search for (only short or common words)';
  const parts: string[] = [];
  if (weights.unseen.length > 0) parts.push(`this campaign never mentions ${quoteList(weights.unseen.map((t) => t.text))}`);
  if (weights.ordinary.length > 0) parts.push(everydayWords(weights));
  if (apart.length > 0) parts.push(wordsApartReason(apart));
  if (nearest?.lexical) {
    const where = [nearest.row.path, ...nearest.headingPath].join(' › ');
    parts.push(`the closest passage (${where}) shares only ${quoteList(nearest.lexical.matched.map((t) => t.text))} with it`);
  } else if (weights.unseen.length < terms.length) {
    parts.push(`no passage holds ${quoteList(terms.filter((t) => !weights.unseen.includes(t)).map((t) => t.text))}`);
  }
  return parts.join('; ');
}

/** Known words that never meet, said so a writer sees why each alone does not answer. */
function wordsApartReason(apart: readonly SearchTerm[]): string {
  return `no passage holds two of ${quoteList(apart.map((t) => t.text))}`;
}

/** The words a campaign holds only in passing, said so a writer sees why they do not count. */
function everydayWords(weights: QueryWeights): string {
  return `this campaign uses ${quoteList(weights.ordinary.map((t) => t.text))} far less often than everyday English does`;
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

/**
 * Admission by evidence: the campaign must answer the query at all (its best passage explains the turn's
 * words better than everyday English does), and the passage must be that one or hold a fair part of the query. A name this turn mentions is evidence enough; a name merely standing in the
 * state never is.
 */
function admitLexically(
  lexical: LexicalJudgement | null,
  weights: QueryWeights,
  answered: boolean,
  apart: readonly SearchTerm[],
  strongest: LexicalJudgement | undefined,
): { admitted: boolean; reason: string } {
  if (!lexical || lexical.matched.length === 0) return { admitted: false, reason: '' };
  const matched = lexical.matched;
  const list = quoteList(matched.map((t) => t.text));
  const names = matched.filter((t) => t.name && !t.standing);
  if (names.length > 0) {
    const others = matched.filter((t) => !names.includes(t));
    return { admitted: true, reason: `mentions ${quoteList(names.map((t) => t.text))}${others.length > 0 ? ` and matched ${quoteList(others.map((t) => t.text))}` : ''}` };
  }
  if (matched.every((t) => t.standing)) {
    return { admitted: false, reason: `matched only ${list}, ${matched.length === 1 ? 'a name' : 'names'} standing in the current state, which alone says nothing about this turn` };
  }
  if (!answered) {
    const lacks = [
      weights.unseen.length > 0 ? `this campaign never mentions ${quoteList(weights.unseen.map((t) => t.text))}` : '',
      weights.ordinary.length > 0 ? everydayWords(weights) : '',
      apart.length > 0 ? wordsApartReason(apart) : '',
    ].filter(Boolean);
    return lacks.length > 0
      ? { admitted: false, reason: `matched ${list}, but ${lacks.join(' and ')}: the question is not about it` }
      : { admitted: false, reason: `matched only ${list}; no passage holds enough of the query to answer it` };
  }
  // The passage that showed the campaign answers is the answer's first evidence, whatever share it holds, and
  // so is one holding as much of the query as it does: the same words, ranked better or worse, are not refused.
  return lexical === strongest || passageHolds(weights, lexical) || (strongest !== undefined && lexical.coverage >= strongest.coverage)
    ? { admitted: true, reason: `matched ${list}` }
    : { admitted: false, reason: `matched only ${list}, words too common here to say what the query is about` };
}

/**
 * How much of the query each source's candidates hold between them, relative to the source holding most:
 * a passage answers better inside a file that is about the whole question (the story it is asked of)
 * than inside one that shares a word or two with it.
 */
function sourceEvidence(candidates: readonly Working[], weights: QueryWeights): Map<string, number> {
  const held = new Map<string, Set<SearchTerm>>();
  for (const w of candidates) {
    if (!w.lexical) continue;
    let terms = held.get(w.row.source_id);
    if (!terms) held.set(w.row.source_id, (terms = new Set()));
    for (const t of w.lexical.matched) terms.add(t);
  }
  const evidence = new Map([...held].map(([id, terms]) => [id, [...terms].reduce((n, t) => n + weights.idf.get(t)!, 0)]));
  const best = Math.max(0, ...evidence.values());
  return new Map([...evidence].map(([id, e]) => [id, best > 0 ? e / best : 1]));
}

function scoreSurvivors(
  admitted: Working[],
  similarities: Map<string, number>,
  floor: number | null,
  terms: readonly SearchTerm[],
  entities: readonly string[],
  bySource: Map<string, number>,
): void {
  // Each path is normalized against its own best survivor: bm25 has no fixed range, cosine's zero is not zero.
  const bestLexical = Math.max(0, ...admitted.map((w) => w.lexical?.score ?? 0));
  const aboveFloor = (w: Working) => {
    const s = similarities.get(w.row.id);
    return s === undefined || floor === null ? 0 : Math.max(0, s - floor);
  };
  const bestSemantic = Math.max(0, ...admitted.map(aboveFloor));
  const termTexts = new Set(terms.map((t) => t.text));
  const stateNames = new Set(entities.map((e) => termText(tokenize(e))));
  const lexicalAt = new Map(admitted.map((w) => [`${w.row.source_id}#${w.row.idx}`, w.lexical?.score ?? 0]));
  const neighbour = (w: Working) => Math.max(lexicalAt.get(`${w.row.source_id}#${w.row.idx - 1}`) ?? 0, lexicalAt.get(`${w.row.source_id}#${w.row.idx + 1}`) ?? 0);
  for (const w of admitted) {
    const d = w.decision;
    const lexical =
      bestLexical > 0 && w.lexical ? ((w.lexical.score + NEIGHBOUR_WEIGHT * neighbour(w)) / bestLexical) * Math.sqrt(bySource.get(w.row.source_id) ?? 1) : 0;
    const semantic = bestSemantic > 0 ? aboveFloor(w) / bestSemantic : 0;
    const relevance = Math.max(lexical, semantic) + HYBRID_SECOND_PATH_WEIGHT * Math.min(lexical, semantic);
    w.relevance = relevance;
    const boosts: CandidateDecision['boosts'] = [];
    if (w.row.priority !== 'normal') boosts.push({ name: `priority ${w.row.priority}`, factor: PRIORITY_BOOST[w.row.priority] });
    const linked = (JSON.parse(w.row.entities) as string[]).map((e) => termText(tokenize(e)));
    // A source whose key or name this turn mentions says it is about what was mentioned, as an entity link does.
    const named = linked.find((e) => termTexts.has(e) || stateNames.has(e)) ?? w.trigger?.mention;
    if (named) boosts.push({ name: `linked to '${named}'`, factor: ENTITY_BOOST });
    const tag = (JSON.parse(w.row.tags) as string[]).map((t) => termText(tokenize(t))).find((t) => termTexts.has(t));
    if (tag) boosts.push({ name: `tag '${tag}'`, factor: TAG_BOOST });
    d.boosts = boosts;
    d.score = round(relevance * CLASS_WEIGHT[w.row.class] * boosts.reduce((f, b) => f * b.factor, 1));
  }
}

/** Marks near-duplicates of better-ranked passages, and passages that only repeat current state. */
function suppressRedundancy(admitted: Working[], pinned: readonly Working[], stateFacts: readonly string[]): void {
  const facts = shingles(stemText(stateFacts.join('\n')).words);
  const kept = new KeptPassages();
  for (const w of pinned) kept.add(w, shinglesOf(w));
  for (const w of admitted) {
    const d = w.decision;
    const own = shinglesOf(w);
    // An entry SillyTavern's activation inserts is sent whatever else is: it may still make others repeats.
    if (w.worldInfo?.fired) {
      kept.add(w, own);
      continue;
    }
    if (facts.size > 0 && own.size > 0 && overlap(own, facts) / own.size >= IN_STATE_CONTAINMENT) {
      d.outcome = 'in-state';
      d.section = competesFor(w);
      d.reason = `${d.reason}; repeats facts already in the current state`;
      continue;
    }
    const original = kept.original(own);
    if (original) {
      d.outcome = 'duplicate';
      d.section = competesFor(w);
      d.duplicateOf = original.row.id;
      d.reason = `${d.reason}; near-duplicate of ${[original.row.path, ...original.headingPath].join(' › ')}, which ranks higher`;
      continue;
    }
    kept.add(w, own);
  }
}

/**
 * The passages redundancy kept, by how many shingles they hold: a near-duplicate holds at least
 * DUPLICATE_JACCARD as many as its original and at most as many over it, so only those are compared.
 */
class KeptPassages {
  private readonly bySize: { w: Working; shingles: ShingleSet; order: number }[] = [];

  add(w: Working, shingles: ShingleSet): void {
    const at = this.firstAtLeast(shingles.size);
    this.bySize.splice(at, 0, { w, shingles, order: this.bySize.length });
  }

  /** The first passage kept (in the order kept) that `own` nearly duplicates. */
  original(own: ShingleSet): Working | undefined {
    const size = own.size;
    let first: { w: Working; order: number } | undefined;
    // The window is a shingle wider on each side than the ratio allows: jaccardAtLeast decides exactly.
    for (let i = this.firstAtLeast(Math.floor(size * DUPLICATE_JACCARD) - 1); i < this.bySize.length && this.bySize[i]!.shingles.size <= size / DUPLICATE_JACCARD + 1; i++) {
      const kept = this.bySize[i]!;
      if ((first === undefined || kept.order < first.order) && jaccardAtLeast(kept.shingles, own, DUPLICATE_JACCARD)) first = kept;
    }
    return first?.w;
  }

  private firstAtLeast(size: number): number {
    let [lo, hi] = [0, this.bySize.length];
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.bySize[mid]!.shingles.size < size) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

function sectionOf(cls: KnowledgeClass): Exclude<KnowledgeSection, 'alwaysInclude'> {
  return cls;
}

function toSelected(w: Working, reason: string): SelectedPassage {
  return rowSelected(w.row, w.headingPath, w.decision.tokenCount, w.decision.score, reason);
}

/** The writer's rule that placed a passage, if one did: a fired World Info entry, or a key of its file this turn mentions. */
function placedByRule(w: Working): SelectedPassage['placedBy'] {
  if (w.worldInfo) return w.worldInfo.fired ? 'world-info' : undefined;
  return w.trigger?.kind === 'key' ? 'keys' : undefined;
}

function emptySections(): Record<KnowledgeSection, SelectedPassage[]> {
  return { alwaysInclude: [], canon: [], reference: [], inspiration: [] };
}

function select(w: Working, section: KnowledgeSection, note?: string): void {
  w.decision.outcome = 'selected';
  w.decision.section = section;
  if (note) w.decision.reason = `${w.decision.reason}; ${note}`;
}

/** The section an admitted passage competes for, so what it left out can be shown under that section. */
function competesFor(w: Working): KnowledgeSection {
  return isAlwaysIncluded(rowSource(w.row)) ? 'alwaysInclude' : sectionOf(w.row.class);
}

function leaveOut(w: Working, note: string): void {
  w.decision.outcome = 'over-budget';
  w.decision.section = competesFor(w);
  w.decision.reason = `${w.decision.reason}; ${note}`;
}

/**
 * Budgeted selection: always-include canon first, then each class within its own budget, best
 * first. With a total, pressure removes inspiration first, then the lowest-ranked reference, then
 * lower-priority canon; pinned canon is never removed at random, and its overflow is a reported conflict.
 * Every cost is the measure's, and a section's frame is charged with the first passage placed in it.
 */
function selectWithinBudgets(ranked: RankedCandidates, budgets: KnowledgeBudgets, measure: TokenMeasure): { selected: Working[]; conflicts: BudgetConflict[] } {
  const used: Record<KnowledgeSection, number> = { alwaysInclude: 0, canon: 0, reference: 0, inspiration: 0 };
  const selected: Working[] = [];
  const conflicts: BudgetConflict[] = [];
  const framed = new Set<KnowledgeSection>();
  const cost = (w: Working, placedIn: KnowledgeSection) => w.decision.tokenCount + (framed.has(placedIn) ? 0 : measure.section(placedIn));

  // What SillyTavern's activation inserts was priced under the World Info budget: the class budgets govern
  // only what retrieval admits, so every entry that fired reaches the prompt, where its position puts it.
  const fired = (w: Working) => w.worldInfo?.fired === true;
  for (const w of [...ranked.alwaysInclude, ...ranked.admitted].filter(fired)) {
    selected.push(w);
    select(w, competesFor(w), 'within the World Info budget, not the class budgets');
  }
  const pins = ranked.alwaysInclude.filter((w) => !fired(w));
  const pinnedNeed = pins.length === 0 ? 0 : pins.reduce((n, w) => n + w.decision.tokenCount, measure.section('alwaysInclude'));
  const overflow: Working[] = [];
  const leftOut: Working[] = [];
  for (const w of pins) {
    const tokens = cost(w, 'alwaysInclude');
    if (used.alwaysInclude + tokens <= budgets.alwaysInclude) {
      used.alwaysInclude += tokens;
      select(w, 'alwaysInclude', `always-include budget ${used.alwaysInclude}/${budgets.alwaysInclude} tokens`);
    } else if (used.canon + tokens <= budgets.canon) {
      // Hard rules outrank retrieved canon, so an overflow borrows from the canon budget first.
      used.canon += tokens;
      overflow.push(w);
      select(w, 'alwaysInclude', `over the always-include budget, so it took ${tokens} tokens from the canon budget`);
    } else {
      leftOut.push(w);
      leaveOut(w, `always-include canon needs ${pinnedNeed} tokens and neither its budget (${budgets.alwaysInclude}) nor the canon budget had room: reported as a conflict`);
      continue;
    }
    framed.add('alwaysInclude');
    selected.push(w);
  }
  if (pinnedNeed > budgets.alwaysInclude) {
    const parts = [`always-include canon needs ${pinnedNeed} tokens but its budget is ${budgets.alwaysInclude}`];
    if (overflow.length > 0) parts.push(`${overflow.length} passage(s) took room from the canon budget`);
    if (leftOut.length > 0) parts.push(`${leftOut.length} passage(s) could not be placed: ${leftOut.map((w) => `${w.row.path} §${w.row.idx + 1}`).join(', ')}`);
    parts.push('raise the always-include budget or mark fewer sources always_include');
    conflicts.push({
      kind: 'always-include-overflow',
      message: parts.join('; '),
      budget: budgets.alwaysInclude,
      needed: pinnedNeed,
      passageIds: [...overflow, ...leftOut].map((w) => w.row.id),
    });
  }

  const subjects = namedPages(ranked.admitted);
  for (const w of [...subjects, ...ranked.admitted.filter((w) => !subjects.includes(w))]) {
    if (w.decision.outcome === 'duplicate' || w.decision.outcome === 'in-state' || fired(w)) continue;
    const section = sectionOf(w.row.class);
    const tokens = cost(w, section);
    if (used[section] + tokens <= budgets[section]) {
      used[section] += tokens;
      framed.add(section);
      selected.push(w);
      const first = subjects.includes(w) ? `placed first, as the page of '${w.trigger!.mention}', which this turn names; ` : '';
      select(w, section, `${first}within the ${section} budget (${used[section]}/${budgets[section]} tokens)`);
    } else {
      leaveOut(w, `over the ${section} budget (${used[section] + tokens}/${budgets[section]} tokens)`);
    }
  }

  if (budgets.total !== undefined) applyTotalPressure(selected, budgets.total, measure);
  return { selected: selected.filter((w) => w.decision.outcome === 'selected'), conflicts };
}

/**
 * The best admitted passage of each page the turn names (its title or alias, or what links call it), best
 * first: the page is what the turn is about, so it takes its budget before passages that only mention the
 * name (Torys: the Day's End page was left out while a merchant's one line about the town was sent). A
 * World Info key is a trigger, not a page's name: SillyTavern's order places those.
 */
function namedPages(admitted: readonly Working[]): Working[] {
  const seen = new Set<string>();
  return admitted.filter((w) => {
    if (!w.trigger || w.trigger.kind === 'key' || w.worldInfo?.fired || seen.has(w.row.source_id)) return false;
    if (w.decision.outcome === 'duplicate' || w.decision.outcome === 'in-state') return false;
    seen.add(w.row.source_id);
    return true;
  });
}

const PRESSURE_ORDER: Record<KnowledgeClass, number> = { inspiration: 0, reference: 1, canon: 2 };
const PRIORITY_RANK: Record<Priority, number> = { low: 0, normal: 1, high: 2 };

function applyTotalPressure(selected: Working[], total: number, measure: TokenMeasure): void {
  const retrieved = selected.filter((w) => !w.worldInfo?.fired);
  const frames = new Set(retrieved.map((w) => w.decision.section!));
  let used = retrieved.reduce((n, w) => n + w.decision.tokenCount, [...frames].reduce((n, s) => n + measure.section(s), 0));
  const removable = retrieved
    .filter((w) => w.decision.section !== 'alwaysInclude')
    .sort(
      (a, b) =>
        PRESSURE_ORDER[a.row.class] - PRESSURE_ORDER[b.row.class] ||
        (a.row.class === 'canon' ? PRIORITY_RANK[a.row.priority] - PRIORITY_RANK[b.row.priority] : 0) ||
        a.decision.score! - b.decision.score!,
    );
  for (const w of removable) {
    if (used <= total) break;
    used -= w.decision.tokenCount;
    leaveOut(w, `removed under the total knowledge budget (${total} tokens): ${w.row.class} goes ${w.row.class === 'inspiration' ? 'first' : w.row.class === 'reference' ? 'after inspiration' : 'last, lowest priority first'}`);
  }
}

function buildRecord(
  store: KnowledgeStore,
  ranked: RankedCandidates,
  stage: RetrievalStage,
  budgets: KnowledgeBudgets,
  conflicts: BudgetConflict[],
  now: Date,
): RetrievalRecord {
  return {
    createdAt: now.toISOString(),
    campaignId: store.campaignId,
    stage,
    queryText: ranked.queryText,
    terms: ranked.terms.map((t) => t.text),
    semantic: ranked.semantic,
    budgets,
    candidates: [...ranked.alwaysInclude, ...ranked.admitted, ...ranked.rest].map((w) => w.decision),
    abstention: ranked.abstention,
    conflicts,
    ...(ranked.worldInfo ? { worldInfo: ranked.worldInfo } : {}),
  };
}

/** The model-free estimate the index stores with each passage, unframed: what a query without a measure is budgeted in. */
const STORED_COUNT: TokenMeasure = { passage: (p) => p.tokenCount, section: () => 0 };

/** The knowledge sections for one prompt, and the record of every decision behind them. */
export async function retrieveKnowledge(store: KnowledgeStore, query: RetrievalQuery, options: RetrievalOptions = {}): Promise<RetrievalResult> {
  const ranked = await rankCandidates(store, { ...query, placePins: true }, options);
  const inserted = new Map([...ranked.alwaysInclude, ...ranked.admitted].flatMap((w) => (w.worldInfo?.fired ? [[w.row.id, w.worldInfo] as const] : [])));
  // Measured before selection, so the record, the budgets and the prompt's sections all count alike.
  if (query.measure) for (const w of [...ranked.alwaysInclude, ...ranked.admitted, ...ranked.rest]) w.decision.tokenCount = query.measure.passage(toSelected(w, ''));
  const { selected, conflicts } = selectWithinBudgets(ranked, query.budgets, query.measure ?? STORED_COUNT);
  const sections = emptySections();
  for (const w of selected) {
    const rule = placedByRule(w);
    sections[w.decision.section!].push({ ...toSelected(w, w.decision.reason), ...(rule ? { placedBy: rule } : {}) });
  }
  // In a section, World Info entries come first, in SillyTavern's prompt order (by position, the highest order last).
  for (const key of Object.keys(sections) as KnowledgeSection[]) {
    const st = sections[key].filter((p) => inserted.has(p.passageId)).sort((a, b) => insertionOrder(inserted.get(a.passageId)!, inserted.get(b.passageId)!));
    if (st.length > 0) sections[key] = [...st, ...sections[key].filter((p) => !inserted.has(p.passageId))];
  }
  return { sections, record: buildRecord(store, ranked, query.stage, query.budgets, conflicts, (options.now ?? (() => new Date()))()) };
}

export interface SearchHit extends SelectedPassage {
  rank: number;
}

export interface SearchResult {
  hits: SearchHit[];
  record: RetrievalRecord;
}

/**
 * What a writer's search finds: the same eligibility, admission and ranking as a prompt, without budgets
 * or pins — the best `limit` admitted passages that stand near the best one, each with its reason. It may
 * find nothing.
 */
export async function searchKnowledge(
  store: KnowledgeStore,
  text: string,
  options: RetrievalOptions & { stage?: RetrievalStage; limit?: number } = {},
): Promise<SearchResult> {
  const stage = options.stage ?? 'narrator';
  const limit = options.limit ?? 10;
  const ranked = await rankCandidates(store, { input: text, stage, placePins: false }, options);
  const hits: SearchHit[] = [];
  // The most relevant, class aside: class orders results, it never decides which are shown.
  const best = ranked.admitted.reduce<Working | undefined>((b, w) => (w.decision.outcome === 'duplicate' || w.decision.outcome === 'in-state' || (b && b.relevance >= w.relevance) ? b : w), undefined);
  for (const w of ranked.admitted) {
    if (w.decision.outcome === 'duplicate' || w.decision.outcome === 'in-state') continue;
    // Only repeats a word or two of the query beside the best result; a mention or a name it holds is reason enough.
    if (w.relevance < SEARCH_RELATIVE_RELEVANCE * best!.relevance && !w.trigger && !w.lexical?.matched.some((t) => t.name && !t.standing)) {
      leaveOut(w, `under ${Math.round(SEARCH_RELATIVE_RELEVANCE * 100)}% of the relevance of the best result (${[best!.row.path, ...best!.headingPath].join(' › ')})`);
      continue;
    }
    if (hits.length < limit) {
      select(w, sectionOf(w.row.class));
      hits.push({ ...toSelected(w, w.decision.reason), rank: hits.length + 1 });
    } else {
      leaveOut(w, `ranked below the first ${limit} results`);
    }
  }
  const record = buildRecord(store, ranked, stage, { ...DEFAULT_KNOWLEDGE_BUDGETS }, [], (options.now ?? (() => new Date()))());
  return { hits, record };
}

/**
 * "Why did this passage not fire?" for any passage: the recorded decision when it was a candidate, else
 * the reason it never became one, worked out from the index and the record's own terms.
 */
export function whyNot(store: KnowledgeStore, record: RetrievalRecord, passageId: string): string {
  const decision = record.candidates.find((c) => c.passageId === passageId);
  if (decision) return `${decision.outcome}: ${decision.reason}`;
  if (store.campaignId !== record.campaignId) return `this index is campaign ${store.campaignId}'s, but the record is campaign ${record.campaignId}'s`;
  const row = store.db
    .prepare(`SELECT ${CANDIDATE_COLUMNS}, p.campaign_id AS campaign FROM passages p JOIN sources s ON s.id = p.source_id WHERE p.id = ?`)
    .get(passageId) as (CandidateRow & { campaign: string }) | undefined;
  if (!row) return `no passage ${passageId} in this index (it may have been reindexed under a new id, or deleted)`;
  if (row.campaign !== record.campaignId) return `it belongs to campaign ${row.campaign}: one campaign never retrieves another's passages`;
  const excluded = eligibilityOutcome(row, record.stage);
  if (excluded) return `${excluded}: ${eligibilityReason(row, excluded, '')}`;
  const verdict = record.worldInfo?.verdicts.find((v) => v.id === row.source_id);
  if (verdict && !verdict.fired) return `SillyTavern's World Info held its entry back: ${verdict.reason}`;
  const { terms } = buildSearchTerms({ input: record.terms.join(' ') });
  const found = matchTerms(stemText(`${(JSON.parse(row.heading_path) as string[]).join(' ')} ${row.text}`), terms);
  const semantic = record.semantic.used
    ? ', and it was not semantically close enough to the query to be recorded'
    : ` (semantic retrieval did not run: ${record.semantic.reason})`;
  if (found.length === 0) {
    return `never a candidate: it contains none of the query's terms (${quoteList(record.terms)})${semantic}`;
  }
  return `never a candidate: it contains ${quoteList(found.map((t) => t.text))}, but ${CANDIDATE_POOL} passages matched the query more strongly`;
}

/**
 * Passages by id, as a prompt would carry them, each when it is eligible now for the stage: in this campaign,
 * indexed, enabled, and visible to that stage. Otherwise the reason it is not, in plain words. Research
 * checks every id a model names through it, a catalogue's or a finish's ids in one query.
 */
export function eligiblePassages(
  store: KnowledgeStore,
  passageIds: readonly string[],
  stage: RetrievalStage,
): Map<string, { passage: SelectedPassage; decision: CandidateDecision } | { refused: string }> {
  const rows = store
    .statement(
      `SELECT ${CANDIDATE_COLUMNS}, p.campaign_id AS campaign FROM passages p JOIN sources s ON s.id = p.source_id
       WHERE p.id IN (SELECT value FROM json_each(@ids))`,
    )
    .all({ ids: JSON.stringify(passageIds) }) as (CandidateRow & { campaign: string })[];
  const byId = new Map(rows.map((row) => [row.id, row]));
  const out = new Map<string, { passage: SelectedPassage; decision: CandidateDecision } | { refused: string }>();
  for (const passageId of passageIds) {
    const row = byId.get(passageId);
    if (!row) {
      out.set(passageId, { refused: `there is no passage ${passageId} in this campaign's index (it may have been edited since, or never existed)` });
      continue;
    }
    if (row.campaign !== store.campaignId) {
      out.set(passageId, { refused: `passage ${passageId} belongs to another campaign` });
      continue;
    }
    const excluded = eligibilityOutcome(row, stage);
    if (excluded) {
      out.set(passageId, { refused: `passage ${passageId} may not be used: ${eligibilityReason(row, excluded, '')}` });
      continue;
    }
    const w = toWorking(row, null);
    out.set(passageId, { passage: toSelected(w, ''), decision: w.decision });
  }
  return out;
}
