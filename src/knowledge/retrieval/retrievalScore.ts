import type { KnowledgeStore } from '../indexing';
import { englishProbability, isEverydayWord } from './backgroundEnglish';
import { stem } from './stemmer';
import { buildMatchExpression, occurrences, otherStemsOf, phraseTerm, stemPositions, stemsSought, tokenize, wordId, type SearchTerm, type StemmedText } from './retrievalTerms';

/**
 * Lexical relevance with meaning: BM25 over stems with the campaign's own term statistics, the exact
 * spelling and the heading counting for more, a bonus for query terms found close together, and
 * abstention decided by evidence: whether the best passage explains the turn's words better than everyday
 * English does (an off-topic question is met only on its everyday words, or on a rare one used in passing).
 * Constants are tuned on FairytaleQA's train split (bench/fairytaleBench.ts), never on what is reported.
 */

/** BM25 term-frequency saturation and passage-length normalisation. */
export const BM25_K1 = 1.2;
export const BM25_B = 0.75;
/** An occurrence in the heading trail counts this many times one in the body. */
export const HEADING_TF = 2;
/** An occurrence spelled exactly as asked adds this much to its stem's count: a name beats a cousin word. */
export const EXACT_TF = 0.5;
/**
 * Two query terms side by side add this share of the rarer one's weight, decaying with distance. Raised
 * from 0.3 once small words stood as partners (train, all 232 stories: R@1 +0.002 per story, +0.005 pooled).
 */
export const PROXIMITY_WEIGHT = 0.45;
/**
 * A small word of the turn (see smallWords) counts this share of a meaningful word with its rarity, in
 * ranking only, and as a partner in the proximity bonus. Tuned on FairytaleQA train (all 232 stories): 0.35
 * and 0.5 alike lift R@1 by a point per story and pooled, R@5 by half a point to one; leaving the question
 * frames in lost half of that; as proximity partners, R@1 +0.005 and R@5 +0.003 more.
 */
const SMALL_WORD_WEIGHT = 0.5;
/** Words apart beyond which two terms are no longer "together". */
const PROXIMITY_WINDOW = 12;
/** This turn's words say what it is about; the story so far, the scene and the state frame it. */
const ORIGIN_WEIGHT: Record<SearchTerm['origin'], number> = { input: 1, scene: 0.5, recent: 0.5, entity: 0.5 };

/**
 * A passage of an answered query is admitted when it holds at least this share of the query's evidence
 * (Σ idf, a word the campaign never uses weighing as much as the rarest word can). In a small campaign
 * every word is rarer, so the share asked grows with its size up to this value at ANSWER_FULL_SIZE passages.
 */
export const ANSWER_COVERAGE = 0.3;
const ANSWER_FULL_SIZE = 400;
/** A passage of an answered query still needs this share of the bar: two common verbs are not a topic. */
const PASSAGE_SHARE_OF_BAR = 0.5;

/**
 * A campaign answers a turn only when its best passage explains the turn's words better than everyday
 * English does, by at least this log-likelihood ratio (see `judge`). Tuned on FairytaleQA train stories
 * and the tuning half of the off-topic questions: the highest floor that turned away no more than 1% of
 * real questions there, lowered a little for questions it never saw.
 */
export const EVIDENCE_FLOOR = 0.5;
/**
 * One word shows a passage is about it at most this many nats per ln(1 + times the passage's file uses
 * it): a word its file mentions once or twice ("radiator", "restore") is a passing mention, however rare
 * it is in English, while a name the file keeps using can decide alone. Counted in the file, not the
 * campaign: a word twenty tales each mention in passing is no tale's subject. Tuned on FairytaleQA train
 * with its off-topic halves: counted in the file, 2 and 2.5 refused as many real questions (0.7% per story,
 * 0.8% pooled) and 3 one in a thousand fewer, but 3 answered more SRD headings per story and 2 more
 * everyday questions pooled.
 */
const PASSING_MENTION_EVIDENCE = 2.5;
/**
 * A turn whose words the campaign knows, but never two of them in one passage ("Armor of Shadows": armour
 * in one tale, shadows in another), is about something else, unless one passage explains it as strongly as
 * a word the campaign uses three times can alone (a name usually does, wherever the other words are). Tuned
 * on FairytaleQA train and the off-topic tuning halves: asked of one passage rather than one file, it turns
 * away 4.5 to 5.4 points more of the SRD-heading questions asked of the pooled tales, and one real question
 * in 1102 more; none more among questions about the Torys setting's people asked with words their pages
 * lack ("What does Takala fear?").
 */
const STANDALONE_EVIDENCE = PASSING_MENTION_EVIDENCE * Math.log(1 + 3);
/**
 * When more than this share of a turn's words never occur in the campaign, it is not what the turn is
 * about. The evidence test decides almost everywhere; this one speaks for a campaign too small for its
 * missing words to count as evidence (a few hundred words are little evidence of what they lack).
 */
export const MAX_UNSEEN_SHARE = 0.75;
/** Words' worth of its file's language model a passage's model is smoothed with. */
const PASSAGE_SMOOTHING = 1000;
/**
 * Words' worth of the rest of the campaign a file's model is smoothed with, and of everyday English the
 * rest's model is: a small campaign is little evidence, and a file is explained by its own words first.
 */
const CAMPAIGN_SMOOTHING = 1000;
/** A campaign using a word less than this share as often as everyday English does holds it only in passing (said when it abstains). */
export const EVERYDAY_RATIO = 0.5;

export interface CampaignStatistics {
  /** The index's version these figures are of (see indexVersion): what else is kept while it stays. */
  key: string;
  passages: number;
  averageLength: number;
  /** The index file also holds other campaigns' passages (their words must not count here). */
  sharedIndex: boolean;
  /** Passages holding a stem (FTS5 vocabulary over the index). */
  docFrequency(stem: string): number;
  /** Words in the campaign's text, and how many of them are a stem: its own language model. */
  words(): number;
  termCount(stem: string): number;
  /** Passages holding a phrase's words side by side, in any of their spellings. */
  phraseFrequency(term: SearchTerm): number;
  /** Every stem the index holds (of any campaign in it). */
  vocabulary(): ReadonlySet<string>;
  /** Whether the campaign's text holds this word as written (lower-case, as tokenized), not only its stem. */
  writes(word: string): boolean;
  /** How the given files (a turn's candidates') use its words, counted as they are asked for. */
  fileUse(sourceIds: readonly string[]): FileUse;
}

/** Uses of a term in one file (a capitalised name: passages holding it whole), and the file's size in words. */
export interface FileUse {
  count(term: SearchTerm, sourceId: string): number;
  words(sourceId: string): number;
}

const statisticsCache = new WeakMap<KnowledgeStore, CampaignStatistics>();
/**
 * Files' sizes in characters. A term's uses file by file are counted from the index's own postings (every
 * file at once, once per term while the index stays as it is), each posting's passage given its file from
 * a map read once: joining every posting to its passage row cost more than the turn's search.
 */
const FILE_SIZES =
  'SELECT source_id AS source, sum(chars) AS n FROM passages WHERE campaign_id = @campaign AND source_id IN (SELECT value FROM json_each(@sources)) GROUP BY source_id';
/** Terms' counts by file (and files' sizes) kept before they are dropped: a long session over a large campaign would keep every word's. */
const FILE_COUNTS_HELD = 500_000;

/** Moves whenever the index changes: `data_version` on another connection's commit, `total_changes()` on this one's. */
export function indexVersion(store: KnowledgeStore): string {
  return (store.statement("SELECT (SELECT data_version FROM pragma_data_version) || ':' || total_changes() AS version").get() as { version: string }).version;
}

/** The campaign's statistics, recomputed only when the index changed (see indexVersion). */
export function campaignStatistics(store: KnowledgeStore): CampaignStatistics {
  const version = indexVersion(store);
  const cached = statisticsCache.get(store);
  if (cached && cached.key === version) return cached;
  store.db.exec("CREATE VIRTUAL TABLE IF NOT EXISTS temp.passages_vocab USING fts5vocab('main', 'passages_fts', 'row')");
  store.db.exec("CREATE VIRTUAL TABLE IF NOT EXISTS temp.passages_occurrences USING fts5vocab('main', 'passages_fts', 'instance')");
  const { n, chars } = store
    .statement('SELECT count(*) AS n, coalesce(avg(chars), 0) AS chars FROM passages WHERE campaign_id = ?')
    .get(store.campaignId) as { n: number; chars: number };
  // One index file may hold several campaigns: then every count is restricted to this campaign's passages.
  const shared = (store.statement('SELECT count(*) AS n FROM (SELECT DISTINCT campaign_id FROM passages)').get() as { n: number }).n > 1;
  /** A stem's passages and uses, asked of the index once per stem while the index stays as it is. */
  const ofThisCampaign = 'FROM temp.passages_occurrences o JOIN passages p ON p.rowid = o.doc WHERE o.term = ? AND p.campaign_id = ?';
  const stemStatement = store.statement(
    shared ? `SELECT count(DISTINCT o.doc) AS doc, count(*) AS cnt ${ofThisCampaign}` : 'SELECT doc, cnt FROM temp.passages_vocab WHERE term = ?',
  );
  const stemFigures = new Map<string, { doc: number; cnt: number }>();
  const figuresOf = (stem: string): { doc: number; cnt: number } => {
    let figures = stemFigures.get(stem);
    if (figures === undefined) {
      figures = ((shared ? stemStatement.get(stem, store.campaignId) : stemStatement.get(stem)) as { doc: number; cnt: number } | undefined) ?? { doc: 0, cnt: 0 };
      stemFigures.set(stem, figures);
    }
    return figures;
  };
  const docFrequency = (stem: string) => figuresOf(stem).doc;
  const termCount = (stem: string) => figuresOf(stem).cnt;
  /**
   * This campaign's files numbered, and each passage's file number by rowid: what a posting of the index
   * belongs to. Numbers in typed arrays rather than maps of strings: they are kept for the whole session,
   * and on the heap every kept object widens V8's young generation (see docs/benchmarks.md, issue 50).
   */
  let numbered: { fileNumber: Map<string, number>; fileOfRow: Int32Array; tally: Int32Array } | undefined;
  const passageFiles = () => {
    if (!numbered) {
      const fileNumber = new Map<string, number>();
      const last = (store.statement('SELECT coalesce(max(rowid), 0) AS n FROM passages').get() as { n: number }).n;
      const fileOfRow = new Int32Array(last + 1).fill(-1);
      // The index by file covers both columns: reading the passages table itself would read every passage's text.
      const rows = shared
        ? store.statement('SELECT rowid, source_id FROM passages WHERE campaign_id = ?').raw().iterate(store.campaignId)
        : store.statement('SELECT rowid, source_id FROM passages INDEXED BY passages_by_source').raw().iterate();
      for (const [rowid, source] of rows as Iterable<[number, string]>) {
        let file = fileNumber.get(source);
        if (file === undefined) fileNumber.set(source, (file = fileNumber.size));
        fileOfRow[rowid] = file;
      }
      numbered = { fileNumber, fileOfRow, tally: new Int32Array(fileNumber.size) };
    }
    return numbered;
  };
  /**
   * Per file, how many of `rowids` (one per posting) are its passages': the files' numbers ascending, then
   * their counts in the same order, in one array (see countIn).
   */
  const byFile = (rowids: readonly number[]): Int32Array => {
    const { fileOfRow, tally } = passageFiles();
    const found: number[] = [];
    for (const rowid of rowids) {
      const file = rowid < fileOfRow.length ? fileOfRow[rowid]! : -1;
      if (file < 0) continue;
      if (tally[file] === 0) found.push(file);
      tally[file]! += 1;
    }
    const counts = new Int32Array(found.length * 2);
    counts.set(found);
    counts.subarray(0, found.length).sort();
    for (let i = 0; i < found.length; i++) {
      const file = counts[i]!;
      counts[found.length + i] = tally[file]!;
      tally[file] = 0;
    }
    return counts;
  };
  /** A file's count in byFile's array, 0 when it has none. */
  const countIn = (counts: Int32Array, sourceId: string): number => {
    const file = passageFiles().fileNumber.get(sourceId);
    if (file === undefined) return 0;
    const files = counts.length / 2;
    let low = 0;
    let high = files - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const at = counts[middle]!;
      if (at === file) return counts[files + middle]!;
      if (at < file) low = middle + 1;
      else high = middle - 1;
    }
    return 0;
  };
  // Every term's counts by file, and files' sizes, kept until FILE_COUNTS_HELD entries; then started afresh.
  let held = 0;
  let stemUses = new Map<string, Int32Array>();
  let phraseUses = new Map<string, Int32Array>();
  /** Files' sizes in characters by file number, -1 until asked for. */
  let sizes: Float64Array | undefined;
  const kept = (counts: Int32Array): Int32Array => {
    held += counts.length / 2;
    return counts;
  };
  const occurrencesStatement = store.statement('SELECT doc FROM temp.passages_occurrences WHERE term = ?').pluck();
  const matchesStatement = store.statement('SELECT rowid FROM passages_fts WHERE passages_fts MATCH ?').pluck();
  /** A stem's uses in each file that has it. */
  const usesOfStem = (stem: string): Int32Array => {
    let counts = stemUses.get(stem);
    if (!counts) stemUses.set(stem, (counts = kept(byFile(occurrencesStatement.all(stem) as number[]))));
    return counts;
  };
  /** Passages holding a phrase's words side by side, in each file that has one. */
  const usesOfPhrase = (term: SearchTerm): Int32Array => {
    const expression = buildMatchExpression([term])!;
    let counts = phraseUses.get(expression);
    if (!counts) phraseUses.set(expression, (counts = kept(byFile(matchesStatement.all(expression) as number[]))));
    return counts;
  };
  let words: number | undefined;
  let vocabulary: Set<string> | undefined;
  const written = new Map<string, boolean>();
  // The index holds stems: of the passages holding the word's stem, those whose text holds its letters are read for the word itself.
  const spelledIn = store.statement(
    'SELECT p.text FROM passages_fts f CROSS JOIN passages p ON p.rowid = f.rowid WHERE passages_fts MATCH ? AND p.campaign_id = ? AND instr(lower(p.text), ?) > 0',
  );
  const stats: CampaignStatistics = {
    key: version,
    passages: n,
    averageLength: chars,
    sharedIndex: shared,
    docFrequency,
    termCount,
    phraseFrequency(term) {
      const counts = usesOfPhrase(term);
      let n = 0;
      for (let i = counts.length / 2; i < counts.length; i++) n += counts[i]!;
      return n;
    },
    fileUse(sourceIds) {
      const { fileNumber } = passageFiles();
      if (held > FILE_COUNTS_HELD || !sizes) {
        held = 0;
        [stemUses, phraseUses, sizes] = [new Map(), new Map(), new Float64Array(fileNumber.size).fill(-1)];
      }
      const sized = sizes;
      const unsized = sourceIds.filter((id) => {
        const file = fileNumber.get(id);
        return file !== undefined && sized[file]! < 0;
      });
      if (unsized.length > 0) {
        for (const id of unsized) sized[fileNumber.get(id)!] = 0;
        for (const r of store.statement(FILE_SIZES).all({ sources: JSON.stringify(unsized), campaign: store.campaignId }) as { source: string; n: number }[]) sized[fileNumber.get(r.source)!] = r.n;
        held += unsized.length;
      }
      // A file's share of the campaign's text: counting its words exactly would read every word it holds.
      const wordsPerChar = stats.words() / Math.max(1, n * chars);
      return {
        count: (term, sourceId) => (term.capitalized ? countIn(usesOfPhrase(term), sourceId) : perWord(term, (s) => countIn(usesOfStem(s), sourceId))),
        words: (sourceId) => {
          const file = fileNumber.get(sourceId);
          return file === undefined ? 0 : Math.max(0, sized[file]!) * wordsPerChar;
        },
      };
    },
    writes(word) {
      let found = written.get(word);
      if (found === undefined) {
        found = false;
        for (const row of spelledIn.iterate(buildMatchExpression([phraseTerm([word])])!, store.campaignId, word) as Iterable<{ text: string }>) {
          if (tokenize(row.text).includes(word)) {
            found = true;
            break;
          }
        }
        written.set(word, found);
      }
      return found;
    },
    vocabulary() {
      vocabulary ??= new Set((store.statement('SELECT term FROM temp.passages_vocab').all() as { term: string }[]).map((r) => r.term));
      return vocabulary;
    },
    words(): number {
      words ??= (
        (shared
          ? store
              .statement('SELECT count(*) AS n FROM temp.passages_occurrences o JOIN passages p ON p.rowid = o.doc WHERE p.campaign_id = ?')
              .get(store.campaignId)
          : store.statement('SELECT coalesce(sum(cnt), 0) AS n FROM temp.passages_vocab').get()) as { n: number }
      ).n;
      return words;
    },
  };
  statisticsCache.set(store, stats);
  return stats;
}

/** A figure of a term: a phrase's is its rarest word's; a word's is the sum over its spellings and forms. */
function perWord(term: SearchTerm, figure: (stem: string) => number): number {
  return Math.min(...term.stems.map((s, j) => term.otherStems[j]!.reduce((n, other) => n + figure(other), figure(s))));
}

/**
 * How rare a term is here: a phrase as rare as its rarest word, a capitalised name as the passages holding
 * it whole ("Second Wind" is not in a tale that has a second chance and a north wind); a word the campaign lacks has df 0.
 */
export function inverseFrequency(stats: CampaignStatistics, term: SearchTerm): { idf: number; df: number } {
  // Summed over a word's forms, passages holding two of them ("eat" and "ate") count twice: never more than all.
  const df = Math.min(stats.passages, term.capitalized ? stats.phraseFrequency(term) : perWord(term, (s) => stats.docFrequency(s)));
  return { idf: rarity(stats, df), df };
}

/** BM25's inverse document frequency of something `df` passages hold. */
function rarity(stats: CampaignStatistics, df: number): number {
  return Math.log(1 + (stats.passages - df + 0.5) / (df + 0.5));
}

export interface LexicalJudgement {
  score: number;
  matched: SearchTerm[];
  /** The turn's small words it holds: they ranked it, and the writer sees which. */
  smallMatched: string[];
  /** Share of the query's evidence (Σ idf) the passage holds. */
  coverage: number;
  /**
   * How much better the passage explains this turn's words than everyday English does: the log-likelihood
   * ratio of its language model (smoothed with the campaign's) against English's, over the turn's words.
   */
  evidence: number;
}

/** How often the campaign and everyday English use one of this turn's words (a phrase counts as its rarest word). */
interface Background {
  campaign: number;
  english: number;
  /** Times the campaign uses it. */
  count: number;
}

export interface QueryWeights {
  idf: Map<SearchTerm, number>;
  /** The turn's small words, their stems and rarity: they only rank (see SMALL_WORD_WEIGHT). */
  smallWords: { word: string; stem: string; stemId: number; idf: number }[];
  /** The stems a passage's words are gathered by (see stemPositions): the terms' and the small words'. */
  sought: Uint32Array;
  total: number;
  /** Meaningful words of this turn the campaign has never seen, and their share of the turn's words. */
  unseen: SearchTerm[];
  unseenShare: number;
  /** Coverage a passage is measured against (see passageHolds), and a turn with no words of its own must reach. */
  bar: number;
  /** This turn's own words and their two language models: what the evidence is weighed over. */
  background: Map<SearchTerm, Background>;
  /** Words of this turn the campaign holds, but far less often than anyone says them. */
  ordinary: SearchTerm[];
}

/**
 * The campaign's language model against everyday English's for one term. The campaign's model is
 * smoothed toward English (Dirichlet, CAMPAIGN_SMOOTHING words' worth), so a word seen once or twice in a
 * small campaign is not taken for its subject.
 */
function backgroundOf(stats: CampaignStatistics, term: SearchTerm): Background {
  const english = perWord(term, englishProbability);
  const count = term.capitalized ? stats.phraseFrequency(term) : perWord(term, (s) => stats.termCount(s));
  return { campaign: (count + CAMPAIGN_SMOOTHING * english) / (stats.words() + CAMPAIGN_SMOOTHING), english, count };
}

export function queryWeights(stats: CampaignStatistics, terms: readonly SearchTerm[], small: readonly { word: string; stem: string }[]): QueryWeights {
  const idf = new Map<SearchTerm, number>();
  const unseen: SearchTerm[] = [];
  const background = new Map<SearchTerm, Background>();
  let total = 0;
  for (const t of terms) {
    const { idf: value, df } = inverseFrequency(stats, t);
    idf.set(t, value * ORIGIN_WEIGHT[t.origin]);
    total += value * ORIGIN_WEIGHT[t.origin];
    // Subtitles spell numbers out, so English's count of a numeral says nothing; a number weighs by idf alone.
    if (t.origin !== 'input' || /\d/.test(t.text)) continue;
    if (df === 0) unseen.push(t);
    background.set(t, backgroundOf(stats, t));
  }
  const size = Math.min(1, Math.log(Math.max(2, stats.passages)) / Math.log(ANSWER_FULL_SIZE));
  return {
    idf,
    smallWords: small.map((s) => ({ ...s, stemId: wordId(s.stem), idf: rarity(stats, stats.docFrequency(s.stem)) })),
    sought: stemsSought(terms, small.map((s) => s.stem)),
    total,
    unseen,
    unseenShare: background.size === 0 ? 0 : unseen.length / background.size,
    bar: ANSWER_COVERAGE * size,
    background,
    ordinary: [...background].filter(([t, b]) => !unseen.includes(t) && b.campaign < EVERYDAY_RATIO * b.english).map(([t]) => t),
  };
}

/**
 * What decides whether the campaign answers, for one passage: its evidence against everyday English; for
 * a turn with no words of its own (only the story so far or the scene), its share of the query's evidence.
 */
export function answerStrength(weights: QueryWeights, judgement: LexicalJudgement): number {
  return weights.background.size > 0 ? judgement.evidence : judgement.coverage;
}

/** This turn's own words that the campaign holds somewhere. */
function knownWords(weights: QueryWeights): SearchTerm[] {
  return [...weights.background.keys()].filter((t) => !weights.unseen.includes(t));
}

/**
 * The turn's known words when no passage holds two of them (see STANDALONE_EVIDENCE), else none. `held` is,
 * per candidate passage, the terms it matched. The pool ranks passages holding more of the turn's words
 * first; it can miss one holding two common words once below 80 holding one of them often (7 of 662 random
 * two-word SRD questions it found apart), and such words are strong enough to answer alone (all 7 did).
 */
export function wordsApart(weights: QueryWeights, held: Iterable<readonly SearchTerm[]>): SearchTerm[] {
  const known = knownWords(weights);
  if (known.length < 2) return [];
  for (const terms of held) if (known.filter((t) => terms.includes(t)).length >= 2) return [];
  return known;
}

/**
 * Whether the campaign answers the query at all, judged on its strongest passage (see answerStrength) and,
 * for a turn whose known words never meet in one passage, on whether that passage answers it alone.
 */
export function answers(weights: QueryWeights, strongest: LexicalJudgement | undefined, apart: readonly SearchTerm[]): boolean {
  if (strongest === undefined || weights.unseenShare > MAX_UNSEEN_SHARE) return false;
  const strength = answerStrength(weights, strongest);
  if (weights.background.size === 0) return strength >= weights.bar;
  return strength >= (apart.length > 0 ? STANDALONE_EVIDENCE : EVIDENCE_FLOOR);
}

/** Whether one passage of an answered query holds enough of it to be admitted. */
export function passageHolds(weights: QueryWeights, judgement: LexicalJudgement): boolean {
  return judgement.coverage >= weights.bar * PASSAGE_SHARE_OF_BAR;
}

/**
 * How often a file uses a term, as a language model: its own uses smoothed with the rest of the campaign's
 * (and that with English's). A word the other tales use and this one never does is not this tale's word: a
 * passage missing it is not excused by its being common elsewhere. In a campaign of one file, and without
 * the files' counts (a pasted chapter), the campaign's model.
 */
function fileModel(stats: CampaignStatistics, term: SearchTerm, background: Background, sourceId: string, files: FileUse | null): { probability: number; count: number } {
  if (!files) return { probability: background.campaign, count: background.count };
  const count = files.count(term, sourceId);
  const size = files.words(sourceId);
  const rest = (Math.max(0, background.count - count) + CAMPAIGN_SMOOTHING * background.english) / (Math.max(0, stats.words() - size) + CAMPAIGN_SMOOTHING);
  return { probability: (count + CAMPAIGN_SMOOTHING * rest) / (size + CAMPAIGN_SMOOTHING), count };
}

/**
 * BM25 with stems, exact spellings, the heading, and proximity; the share of the query's evidence held;
 * and the passage's evidence against everyday English for this turn's words.
 */
export function judge(
  stats: CampaignStatistics,
  weights: QueryWeights,
  terms: readonly SearchTerm[],
  passage: { heading: StemmedText; body: StemmedText; length: number; sourceId: string },
  files: FileUse | null,
): LexicalJudgement {
  const { heading, body, length, sourceId } = passage;
  const norm = 1 - BM25_B + (BM25_B * length) / Math.max(1, stats.averageLength);
  const words = heading.words.length + body.words.length;
  let score = 0;
  let held = 0;
  let evidence = 0;
  /** What the turn's everyday words the campaign never uses take from the evidence (see below). */
  let absentFraming = 0;
  let rareExact = false;
  const matched: SearchTerm[] = [];
  const smallMatched: string[] = [];
  const positions: { idf: number; at: readonly number[] }[] = [];
  const bodyAt = stemPositions(body, weights.sought);
  const headingAt = stemPositions(heading, weights.sought);
  for (const t of terms) {
    const inBody = occurrences(body, bodyAt, t);
    const inHeading = occurrences(heading, headingAt, t);
    const background = weights.background.get(t);
    if (background) {
      const found = inBody.positions.length + inHeading.positions.length;
      const file = fileModel(stats, t, background, sourceId, files);
      const ratio = Math.log((found + PASSAGE_SMOOTHING * file.probability) / (words + PASSAGE_SMOOTHING) / background.english);
      evidence += found > 0 ? Math.min(ratio, PASSING_MENTION_EVIDENCE * Math.log(1 + file.count)) : ratio;
      if (background.count === 0 && t.words.every((w) => isEverydayWord(stem(w)))) absentFraming += ratio;
      else if (inBody.exact + inHeading.exact > 0 && !t.words.some((w) => isEverydayWord(stem(w)))) rareExact = true;
    }
    const tf = inBody.positions.length + HEADING_TF * inHeading.positions.length + EXACT_TF * (inBody.exact + inHeading.exact);
    if (tf === 0) continue;
    const idf = weights.idf.get(t)!;
    matched.push(t);
    held += idf;
    // A capitalised name only says whether the campaign knows it: its words rank the passage, and side by side earn the proximity bonus.
    if (!t.capitalized) score += (idf * tf * (BM25_K1 + 1)) / (tf + BM25_K1 * norm);
    if (inBody.positions.length > 0) positions.push({ idf, at: inBody.positions });
  }
  for (const small of weights.smallWords) {
    const at = bodyAt.get(small.stemId);
    if (!at) continue;
    smallMatched.push(small.word);
    score += (SMALL_WORD_WEIGHT * small.idf * at.length * (BM25_K1 + 1)) / (at.length + BM25_K1 * norm);
    // Beside the turn's other words ("the maiden must not"), at their lesser weight.
    positions.push({ idf: SMALL_WORD_WEIGHT * small.idf, at });
  }
  for (let i = 0; i < positions.length; i++) {
    for (let j = i + 1; j < positions.length; j++) {
      const gap = closest(positions[i]!.at, positions[j]!.at);
      if (gap <= PROXIMITY_WINDOW) score += (PROXIMITY_WEIGHT * Math.min(positions[i]!.idf, positions[j]!.idf)) / gap;
    }
  }
  // A word everyday English uses and the campaign never does only frames the question ("What does GDP stand
  // for?" of notes that never say "stand"): it does not outweigh a word rare in English that the passage
  // holds exactly as asked. Absent rare words ("cantrip", "kubernetes") still say the question is elsewhere.
  if (rareExact) evidence -= absentFraming;
  return { score, matched, smallMatched, coverage: weights.total > 0 ? held / weights.total : 0, evidence };
}

/** Smallest distance between two sorted position lists. */
function closest(a: readonly number[], b: readonly number[]): number {
  let best = Infinity;
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    best = Math.min(best, Math.abs(a[i]! - b[j]!) || 1);
    if (a[i]! < b[j]!) i++;
    else j++;
  }
  return best;
}

/** Words shorter than this are not respelled: too many real words lie one letter from them. */
const RESPELL_MIN_LENGTH = 5;
/**
 * Nor longer than this: the edits of a word number 53 per letter and each is as long as the word, so the work
 * grows with its square; a 5,000-letter "aaaa…" took seconds of a turn, and no word of a language is that long.
 */
const RESPELL_MAX_LENGTH = 60;

/**
 * The campaign's spelling of a word it never uses and everyday English does not either ("frigtened",
 * "Farquar"): a word it writes one letter away (dropped, added, changed or two swapped) after the first. Of several, the
 * one the campaign writes beside the word's neighbour in the turn ("Mother Hulde" is Mother Hulda, not
 * "holde"), else the one it uses most; null when there is none. A word whose other spellings or forms the
 * campaign holds is no misspelling ("conceptualised" of notes saying "conceptual"), and an edit is a word the
 * campaign writes, never one that only stems like one of its words (a non-word such as "conceptualized").
 */
export function campaignSpelling(stats: CampaignStatistics, word: string, before: string | undefined, after: string | undefined): string | null {
  if (word.length < RESPELL_MIN_LENGTH || word.length > RESPELL_MAX_LENGTH || !/^[a-z]+$/.test(word)) return null;
  const own = stem(word);
  if (isEverydayWord(own) || [own, ...otherStemsOf(word)].some((s) => stats.docFrequency(s) > 0)) return null;
  const vocabulary = stats.vocabulary();
  // By stem, as the index holds words. Of the edits sharing one, a letter changed or swapped is likelier the
  // word than one added, and one added than one dropped ("spindel" is "spindle", not "spindl").
  const likelihood = (edit: string) => (edit.length === word.length ? 2 : edit.length > word.length ? 1 : 0);
  const byStem = new Map<string, { edits: string[]; count: number }>();
  for (const edit of oneEditAway(word)) {
    const s = stem(edit);
    const count = vocabulary.has(s) ? stats.termCount(s) : 0;
    if (count === 0) continue;
    const known = byStem.get(s);
    if (known) known.edits.push(edit);
    else byStem.set(s, { edits: [edit], count });
  }
  const candidates = new Map<string, { edit: string; count: number }>();
  for (const [s, { edits, count }] of byStem) {
    const edit = edits.sort((a, b) => likelihood(b) - likelihood(a)).find((e) => stats.writes(e));
    if (edit) candidates.set(s, { edit, count });
  }
  const byUse = [...candidates.values()].sort((a, b) => b.count - a.count).map((c) => c.edit);
  const besideNeighbour = (edit: string) =>
    (before !== undefined && stats.phraseFrequency(phraseTerm([before, edit])) > 0) || (after !== undefined && stats.phraseFrequency(phraseTerm([edit, after])) > 0);
  return (byUse.length > 1 ? byUse.find(besideNeighbour) : undefined) ?? byUse[0] ?? null;
}

const LETTERS = 'abcdefghijklmnopqrstuvwxyz';
/**
 * Edits that keep the first letter: a misspelling nearly always does, while a real word English uses too
 * rarely for the everyday list often lies one letter in front of another ("router" is not "outer").
 */
function* oneEditAway(word: string): Generator<string> {
  for (let i = 1; i <= word.length; i++) {
    const [head, tail] = [word.slice(0, i), word.slice(i)];
    if (tail) yield head + tail.slice(1);
    if (tail.length > 1) yield head + tail[1] + tail[0] + tail.slice(2);
    for (const c of LETTERS) {
      if (tail && c !== tail[0]) yield head + c + tail.slice(1);
      yield head + c + tail;
    }
  }
}
