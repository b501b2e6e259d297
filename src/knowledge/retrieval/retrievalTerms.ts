import { CJK_CHARS, CJK_RUN, ftsText } from '../indexing';
import { keptInt32Pair } from './keptArrays';
import { otherSpellings } from './spelling';
import { stem } from './stemmer';
import { otherForms } from './wordForms';

/**
 * Turning text into search terms. Every term reaches FTS5 only as a double-quoted string built here, so
 * a writer's text (quotes, `NEAR`, `*`, column filters) can never change the meaning of the MATCH query.
 */

/** Verbs that frame a question rather than name its topic: "How does grappling work?" is about grappling. */
const QUESTION_FRAME_VERBS = 'work works happen happens happened mean means';

/**
 * Function words: they carry no topic, so a term made only of these is never searched. Content words,
 * however common ("said", "walk", "ask"), are searched and weighed by how rare they are in the campaign.
 */
const STOP_WORDS = new Set(
  (
    'a about above after again against all also am an and any are as at be because been before being below ' +
    'between both but by can could did do does doing done down during each either else even ever every few for ' +
    'from further had has have having he her here hers herself him himself his how however i if in into is it ' +
    'its itself just least less let many may me might mine more most much must my myself near neither no nor ' +
    'not now of off often on once only onto or other others our ours ourselves out over own per perhaps quite ' +
    'rather really same shall she should since so some such than that the their theirs them themselves then ' +
    'there these they this those though through thus to too toward towards under until up upon us very via was ' +
    'we well were what whatever when where whether which while who whom whose why will with within without ' +
    'would yet you your yours yourself yourselves ' +
    // What "couldn't", "didn't" … leave once the apostrophe splits them: the negation of a function word.
    'aren couldn didn doesn hadn hasn haven isn mustn needn shouldn wasn weren wouldn ' +
    QUESTION_FRAME_VERBS
  ).split(' '),
);

/**
 * The words of a text as the index's `porter unicode61 remove_diacritics 2` tokenizer sees them before
 * stemming: lower-cased, diacritics removed, split at anything that is not a letter or digit, and CJK
 * runs as the overlapping character pairs the index holds (see `ftsText`).
 */
export function tokenize(text: string): string[] {
  // Printable ASCII and line breaks (nearly every passage of an English campaign) are unchanged by NFC, NFKD
  // and the CJK pairs, and their letters and digits are [a-z0-9] once lower-cased: the same words, without
  // three Unicode passes.
  if (!NOT_PLAIN_ASCII.test(text)) return text.toLowerCase().match(/[a-z0-9]+/g) ?? [];
  return (
    ftsText(text)
      .replace(NOT_CJK, withoutDiacritics)
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? []
  );
}

const NOT_PLAIN_ASCII = /[^ -~\t\n\r]/;

/**
 * Diacritics go from everything but CJK, as the index's tokenizer does: decomposing would strip the voicing
 * mark from kana (が → か) and split Hangul syllables into letters (마을 → ㅁㅏㅇㅡㄹ), which the index never holds.
 */
const NOT_CJK = new RegExp(`[^${CJK_CHARS}]+`, 'gu');
function withoutDiacritics(text: string): string {
  return text.normalize('NFKD').replace(/\p{M}+/gu, '');
}

/** A CJK character pair, the unit the index holds CJK text in: it names something as a word does. */
const CJK_PAIR = new RegExp(`^[${CJK_CHARS}]{2}$`, 'u');

/**
 * Chinese, Japanese and Korean function words (pronouns, particles, question words, auxiliaries): like
 * STOP_WORDS they carry no topic, and a question is full of them ("宗主是谁", "城主は誰ですか"). The single
 * characters among them also end a run of characters the segmenter left unjoined (see `cjkWords`).
 */
const CJK_STOP_WORDS = new Set(
  (
    // Chinese (simplified and traditional).
    '的 了 是 在 和 与 與 及 或 有 没 沒 不 也 都 就 把 被 给 給 对 對 从 從 向 到 于 为 為 我 你 他 她 它 们 們 这 這 那 哪 谁 誰 ' +
    '吗 嗎 呢 吧 啊 么 麼 个 個 很 又 还 還 去 来 來 说 說 要 会 會 能 想 着 過 过 得 地 里 裡 ' +
    '我们 我們 你们 你們 他们 他們 她们 她們 它们 咱们 这个 這個 那个 那個 这些 這些 那些 这里 這裡 那里 那裡 哪里 哪裡 哪儿 哪个 ' +
    '什么 什麼 怎么 怎麼 怎样 怎么样 为什么 為什麼 如何 可以 可能 没有 沒有 一个 一個 自己 已经 已經 因为 因為 所以 但是 如果 ' +
    '还是 還是 或者 就是 不是 现在 現在 时候 時候 知道 请问 請問 告诉 告訴 一下 应该 應該 需要 ' +
    '然后 然後 而且 可是 不过 不過 还有 還有 一些 一样 一樣 这样 這樣 那样 那樣 这么 這麼 那么 那麼 非常 觉得 覺得 东西 東西 ' +
    '起来 起來 出来 出來 为了 為了 关于 關於 虽然 雖然 只是 ' +
    // Japanese (function words the segmenter gives as words of two or more characters).
    '何 私 彼 彼女 彼ら 我々 貴方 何故 ました ません でした ですか ますか という ている ていた でしょう ください られる ' +
    'ところ それから けれど けれども だろう なので ですが あります ありません います いません しました します ' +
    'こちら そちら あちら どちら どうして なんで これら それら あなた わたし だから しかし そして それで ' +
    'とても もっと ちょっと やはり やっぱり みんな なった なって ' +
    // Korean (after its particle is taken off: 무엇을 → 무엇).
    '그리고 그러나 하지만 그런데 그래서 어디 무엇 무엇인가 누구 누가 누구인가 언제 어떻게 이것 그것 저것 여기 거기 저기 ' +
    '우리 있다 없다 하다 입니다 있나요 있어요 있습니까 어때요 어떤 무슨'
  ).split(' '),
);

/** Korean particles written after a word, longest first: the question's "마법사에게" is the text's "마법사가". */
const KOREAN_PARTICLES = [
  '에게서', '한테서', '으로서', '으로써', '에서는', '에게는', '으로는', '이라고', '에서', '에게', '한테', '께서', '으로', '부터',
  '까지', '처럼', '보다', '마다', '이나', '이랑', '라고', '은', '는', '이', '가', '을', '를', '의', '에', '로', '와', '과', '도', '만', '랑',
];

/** A Hangul word without its particle, when at least two syllables remain (마을 stays 마을). */
function withoutParticle(word: string): string {
  const particle = KOREAN_PARTICLES.find((p) => word.endsWith(p) && [...word].length - [...p].length >= 2);
  return particle ? word.slice(0, -particle.length) : word;
}

/** Made when a CJK run first needs it: loading ICU's word dictionaries costs every start-up ~15 ms otherwise. */
let wordSegmenter: Intl.Segmenter | undefined;
const SINGLE_HAN = /^\p{Script=Han}$/u;
const KATAKANA = /^[\p{Script=Katakana}ーｰ]+$/u;
const HIRAGANA = /^\p{Script=Hiragana}+$/u;
const HANGUL = /^\p{Script=Hangul}+$/u;

/**
 * The words of a CJK run of a query, by the dictionary segmenter the runtime ships (ICU): "女将の秘密は何ですか"
 * → 女将, 秘密. Single Han characters it leaves apart stand for a name it does not know (黒|鉄|城, simplified
 * 宗|门) and join back up to a function word; katakana it cuts (ダン|ジョン) is one loanword. Function words,
 * a Korean word's particle and kana of one or two characters (particles and endings: が, です, べた) go; a
 * single character alone is no searchable unit.
 */
function cjkWords(run: string): string[] {
  const words: string[] = [];
  let joined = '';
  let joining: RegExp | null = null;
  const keep = (word: string) => {
    if ([...word].length >= 2 && !CJK_STOP_WORDS.has(word) && !(HIRAGANA.test(word) && [...word].length < 3)) words.push(word);
  };
  wordSegmenter ??= new Intl.Segmenter(undefined, { granularity: 'word' });
  for (const { segment } of wordSegmenter.segment(run)) {
    const joins = KATAKANA.test(segment) ? KATAKANA : SINGLE_HAN.test(segment) && !CJK_STOP_WORDS.has(segment) ? SINGLE_HAN : null;
    if (joins !== null && joins === joining) {
      joined += segment;
      continue;
    }
    keep(joined);
    [joined, joining] = joins ? [segment, joins] : ['', null];
    if (!joins) keep(HANGUL.test(segment) && !CJK_STOP_WORDS.has(segment) ? withoutParticle(segment) : segment);
  }
  keep(joined);
  return words;
}

/**
 * Words that only frame a question ("What did …", "How does … work?"), and the articles and joints every
 * passage is full of: they tell no passage from another.
 */
const TELL_NOTHING = new Set(
  `what who whom whose how why when where which did do does was were is are ${QUESTION_FRAME_VERBS} a an the of to and`.split(' '),
);

/**
 * Small words that rank a little (every passage is full of them, so they shift little) but that no writer
 * would give as the reason a passage answers ("ranked up by its small words 'that'"): pronouns, forms of
 * "be" and "have", plain prepositions and joints. "must", "not", "after", "herself" say something and are said.
 */
const GRAMMAR_ONLY = new Set(
  'that this these those it its there here be been being am has have had having about as at by for from in into on onto with or but if so'.split(' '),
);

/** Whether a small word is worth naming as a reason a passage ranks higher. */
export function tellsWhy(smallWord: string): boolean {
  // A single letter is what an apostrophe left ("Day's" → 's'), or "I": never a reason.
  return smallWord.length > 1 && !GRAMMAR_ONLY.has(smallWord);
}

/**
 * A turn's small words and their stems: too common or too short to say what it is about, yet telling which
 * passage tells it ("What must the maiden not do?" is answered where the tale says "must not", "after"
 * asks for what came later). They only order what its meaningful words admitted.
 */
export function smallWords(text: string): { word: string; stem: string }[] {
  const words = [...new Set(tokenize(text).filter((word) => !isMeaningfulWord(word) && !TELL_NOTHING.has(word)))];
  return words.map((word) => ({ word, stem: stem(word) }));
}

export function isMeaningfulWord(word: string): boolean {
  if (STOP_WORDS.has(word)) return false;
  return word.length >= 3 || (word.length === 2 && (/\d/.test(word) || CJK_PAIR.test(word)));
}

/**
 * A search term: one word, or a multi-word entity name searched as a phrase. It matches a passage by its
 * stems (the index stems with Porter, so "dragons" finds "dragon" and "hunted" finds "hunting"); the exact
 * spelling counts for more when scoring.
 */
export interface SearchTerm {
  /** Display form, as recorded in matchedTerms. */
  text: string;
  /** The words as written (one for a word, several for a phrase). */
  words: string[];
  /** Their stems, as the index holds them. */
  stems: string[];
  /** Per word, the stems of its other spellings and forms ("neighbour" for "neighbor", "saw" for "see"): they match as the word does. */
  otherStems: string[][];
  /** Named in the standing state (a character present, the location) rather than in this turn's text. */
  standing: boolean;
  /** The name of an entity (from the state or the library's entity lists), not just a word. */
  name: boolean;
  /**
   * Capitalised words of this turn run together ("Armor of Shadows"): counted where the campaign holds them
   * side by side, not as their rarest word, so a name the campaign never uses is a word it never uses.
   */
  capitalized?: boolean;
  /** Where the term came from, for the record. */
  origin: 'input' | 'recent' | 'scene' | 'entity';
}

/** Other spellings and forms of a word ("neighbor", "saw" for "see"): it is searched by all of them. */
function variantsOf(word: string): string[] {
  return [...otherSpellings(word), ...otherForms(word)];
}

/** The stems of a word's variants that differ from its own ("dwarfs" stems as "dwarf" does). */
export function otherStemsOf(word: string): string[] {
  const own = stem(word);
  return [...new Set(variantsOf(word).map(stem))].filter((s) => s !== own);
}

/**
 * Words as a writer reads them: joined by spaces, except the overlapping pairs of a CJK word, which join
 * back into it ("마법 법사" is "마법사"). Term texts and the names compared with them are both made here.
 */
export function termText(words: readonly string[]): string {
  return words.reduce((text, word, i) => {
    const previous = words[i - 1];
    const overlaps = previous !== undefined && CJK_PAIR.test(previous) && CJK_PAIR.test(word) && [...previous][1] === [...word][0];
    return i === 0 ? word : overlaps ? text + [...word][1]! : `${text} ${word}`;
  }, '');
}

function term(words: string[], origin: SearchTerm['origin'], standing: boolean, name: boolean): SearchTerm {
  return { text: termText(words), words, stems: words.map(stem), otherStems: words.map(otherStemsOf), standing, name, origin };
}

/** A phrase of words as a search term, to ask the index how often they stand side by side. */
export function phraseTerm(words: string[]): SearchTerm {
  return term(words, 'input', false, false);
}

/** A word of the turn with the words written either side of it, which tell which of two spellings it meant. */
export type Respeller = (word: string, before: string | undefined, after: string | undefined) => string | null;

/** The turn's terms with the words the campaign spells otherwise (see campaignSpelling) spelled its way. */
export function respelled(terms: readonly SearchTerm[], input: string, spelling: Respeller): SearchTerm[] {
  const written = tokenize(input);
  const respell = (word: string) => {
    const at = written.indexOf(word);
    return spelling(word, written[at - 1], written[at + 1]) ?? word;
  };
  const byText = new Map<string, SearchTerm>();
  for (const t of terms) {
    const words = t.origin === 'input' ? t.words.map(respell) : t.words;
    const respelt = words.every((w, i) => w === t.words[i]) ? t : { ...term(words, t.origin, t.standing, t.name), capitalized: t.capitalized };
    // "Starkard and Starkad" is one name asked twice.
    if (!byText.has(respelt.text)) byText.set(respelt.text, respelt);
  }
  return [...byText.values()];
}

/** Every variant of a term's words, for the index to find it by (a phrase's combinations are few). */
function variantPhrases(words: readonly string[]): string[][] {
  return words.reduce<string[][]>((sofar, word) => sofar.flatMap((prefix) => [word, ...variantsOf(word)].map((w) => [...prefix, w])), [[]]);
}

/** `"a b"` with quotes doubled: the only way a term enters a MATCH expression. */
function quote(tokens: string[]): string {
  return `"${tokens.join(' ').replace(/"/g, '""')}"`;
}

/** A term's variants, quoted and OR-ed: built once per term, since a capitalised name is asked of every candidate's file. */
const termExpressions = new WeakMap<SearchTerm, string>();
function termExpression(t: SearchTerm): string {
  let expression = termExpressions.get(t);
  if (expression === undefined) termExpressions.set(t, (expression = variantPhrases(t.words).map(quote).join(' OR ')));
  return expression;
}

/** An FTS5 MATCH expression that finds any of the terms, or null when there is nothing to search. */
export function buildMatchExpression(terms: readonly SearchTerm[]): string | null {
  return terms.length > 0 ? terms.map(termExpression).join(' OR ') : null;
}

/**
 * Words and stems as numbers: a text's words are held as ids, a few bytes each and compared as numbers, and
 * each spelling is stemmed once. A stem is an id of the same table, so a turn's stem and a passage's word
 * meet by number. The table, and every text read by it, is forgotten when it grows past VOCABULARY_HELD, at
 * the start of a search (see forgetWordsWhenFull), never in the middle of one.
 */
const wordIds = new Map<string, number>();
/** By word id, its stem's id (-1 until it is asked for). */
const stemIds: number[] = [];
const VOCABULARY_HELD = 1 << 17;
/** Moves when the table is forgotten: an id worked out before then means nothing after. */
let generation = 0;

export function wordId(word: string): number {
  let id = wordIds.get(word);
  if (id === undefined) {
    id = wordIds.size;
    wordIds.set(word, id);
    stemIds.push(-1);
  }
  return id;
}

function stemIdOf(id: number, word: string): number {
  let s = stemIds[id]!;
  if (s < 0) stemIds[id] = s = wordId(stem(word));
  return s;
}

/** A text's words with their stems, as ids (see wordId), worked out once and reused for matching, scoring and proximity. */
export interface StemmedText {
  words: Int32Array;
  stems: Int32Array;
}

/** Stemmed text for one turn; `kept` for text kept across turns (see keptArrays.ts). */
export function stemText(text: string, kept = false): StemmedText {
  const tokens = tokenize(text);
  const [words, stems] = kept ? keptInt32Pair(tokens.length) : [new Int32Array(tokens.length), new Int32Array(tokens.length)];
  for (let i = 0; i < tokens.length; i++) {
    const id = wordId(tokens[i]!);
    words[i] = id;
    stems[i] = stemIdOf(id, tokens[i]!);
  }
  return { words, stems };
}

/**
 * Stemmed text by a key that names its content (a passage's content hash, a heading trail's JSON: neither
 * can be taken for the other), reused across turns, up to TOKENS_HELD words in all. The text is asked for
 * only when its key is new: a heading trail is parsed and joined only then.
 */
const stemmedCache = new Map<string, StemmedText>();
const TOKENS_HELD = 4_000_000;
let tokensHeld = 0;

export function stemmedPassage(key: string, text: () => string): StemmedText {
  let stemmed = stemmedCache.get(key);
  if (!stemmed) {
    stemmed = stemText(text(), true);
    for (const [hash, old] of stemmedCache) {
      if (tokensHeld + stemmed.words.length <= TOKENS_HELD) break;
      stemmedCache.delete(hash);
      tokensHeld -= old.words.length;
    }
    stemmedCache.set(key, stemmed);
    tokensHeld += stemmed.words.length;
  }
  return stemmed;
}

/** Called where a search starts: a full table is forgotten with the texts read by it (see wordId). */
export function forgetWordsWhenFull(): void {
  if (wordIds.size < VOCABULARY_HELD) return;
  wordIds.clear();
  stemIds.length = 0;
  stemmedCache.clear();
  tokensHeld = 0;
  generation++;
}

/** A term's stems and words as ids: the first word's stem and its variants' find where it may start. */
interface TermIds {
  generation: number;
  first: number[];
  stems: number[];
  otherStems: number[][];
  words: number[];
}
const termIdsCache = new WeakMap<SearchTerm, TermIds>();
function termIds(t: SearchTerm): TermIds {
  let ids = termIdsCache.get(t);
  if (!ids || ids.generation !== generation) {
    const otherStems = t.otherStems.map((list) => list.map(wordId));
    const stems = t.stems.map(wordId);
    ids = { generation, first: [stems[0]!, ...otherStems[0]!], stems, otherStems, words: t.words.map(wordId) };
    termIdsCache.set(t, ids);
  }
  return ids;
}

/**
 * The ids of the stems where the terms may start, and of `also` (stems): what stemPositions gathers. A bit
 * per id, not a set: it is asked of every word of every candidate passage.
 */
export function stemsSought(terms: readonly SearchTerm[], also: readonly string[] = []): Uint32Array {
  const ids = [...terms.flatMap((t) => termIds(t).first), ...also.map(wordId)];
  const sought = new Uint32Array(ids.length === 0 ? 0 : (Math.max(...ids) >>> 5) + 1);
  for (const id of ids) sought[id >>> 5]! |= 1 << (id & 31);
  return sought;
}

/** Where the sought stems stand in a text, each in order: one pass over the text, however many terms a query has. */
export function stemPositions(text: StemmedText, sought: Uint32Array): Map<number, number[]> {
  const at = new Map<number, number[]>();
  const stems = text.stems;
  for (let i = 0; i < stems.length; i++) {
    const s = stems[i]!;
    const word = s >>> 5;
    if (word >= sought.length || ((sought[word]! >>> (s & 31)) & 1) === 0) continue;
    const list = at.get(s);
    if (list) list.push(i);
    else at.set(s, [i]);
  }
  return at;
}

/**
 * Positions where a term occurs in the text, and how many of them are spelled exactly as asked. `at` is the
 * text's stemPositions for stems that include the term's (see stemsSought).
 */
export function occurrences(text: StemmedText, at: ReadonlyMap<number, readonly number[]>, t: SearchTerm): { positions: readonly number[]; exact: number } {
  const ids = termIds(t);
  const n = ids.stems.length;
  // One word with one stem, the usual term: its positions are its stem's, and exact is a count of spellings.
  if (n === 1 && ids.first.length === 1) {
    const positions = at.get(ids.first[0]!) ?? NOWHERE;
    let exact = 0;
    for (const i of positions) if (text.words[i] === ids.words[0]) exact++;
    return { positions, exact };
  }
  const positions: number[] = [];
  let exact = 0;
  const starts = ids.first.flatMap((s) => at.get(s) ?? []);
  // A variant's positions interleave with the word's own.
  if (ids.first.length > 1) starts.sort((a, b) => a - b);
  outer: for (const i of starts) {
    if (i + n > text.stems.length) continue;
    for (let j = 1; j < n; j++) if (text.stems[i + j] !== ids.stems[j] && !ids.otherStems[j]!.includes(text.stems[i + j]!)) continue outer;
    positions.push(i);
    if (ids.words.every((w, j) => text.words[i + j] === w)) exact++;
  }
  return { positions, exact };
}
const NOWHERE: readonly number[] = [];

/** The terms that occur in the text. */
export function matchTerms(text: StemmedText, terms: readonly SearchTerm[]): SearchTerm[] {
  const at = stemPositions(text, stemsSought(terms));
  return terms.filter((t) => occurrences(text, at, t).positions.length > 0);
}

export interface QueryParts {
  input: string;
  recent?: readonly string[];
  scene?: string;
  /** Names standing in the current state. */
  entities?: readonly string[];
  /** Multi-word names the library knows (source entity lists), searched as phrases where they occur. */
  knownNames?: readonly string[];
}

// \u2019 (’) as an escape: a raw template's text is what the bundle's ASCII-only output cannot rewrite.
const TITLE_WORD = String.raw`\p{Lu}[\p{L}\p{N}'\u2019-]*\p{Ll}[\p{L}\p{N}'\u2019-]*`;
/** Small words a name holds between its capitalised ones ("Circle of the Land"); "and" joins two names. */
const NAME_LINK = String.raw`(?:(?:of|the|a|an|on|in|to|with|for|at|from)\s+)*`;
const CAPITALIZED_RUN = new RegExp(`${TITLE_WORD}(?:\\s+${NAME_LINK}${TITLE_WORD})+`, 'gu');
const FIRST_WORD = new RegExp(`^\\S+\\s+${NAME_LINK}`, 'u');
const SENTENCE_START = /(^|[.!?:;"“(\n])\s*$/u;

/**
 * Runs of two or more capitalised words in a turn ("How does Armor of Shadows work?"): the names it asks
 * about. A sentence's first word is capitalised anyway, so it is left out.
 */
export function capitalizedNames(text: string): string[][] {
  const names: string[][] = [];
  for (const match of text.matchAll(CAPITALIZED_RUN)) {
    // "Tom Kitten's mother" names Tom Kitten; "Dark One's Blessing" keeps its 's, as the index does.
    let run = match[0].replace(/['’]s$/u, '');
    if (SENTENCE_START.test(text.slice(0, match.index))) run = run.replace(FIRST_WORD, '');
    const tokens = nameTokens(run);
    if (tokens.length >= 2) names.push(tokens);
  }
  return names;
}

/** How many of the newest story lines join the query: enough for the thread, not the whole transcript. */
export const RECENT_LINES_IN_QUERY = 2;

/** A name's words without leading articles: "the Abbey" is the name "abbey", which "Old Abbey" also holds. */
export function nameTokens(name: string): string[] {
  const tokens = tokenize(name);
  let start = 0;
  while (start < tokens.length - 1 && !isMeaningfulWord(tokens[start]!)) start++;
  return tokens.slice(start);
}

/**
 * The terms of a retrieval query (not the user's input alone). Entity names become phrase terms;
 * a name that comes only from the standing state is marked `standing`, because it is in every turn's
 * query and so, alone, says nothing about what this turn needs. The persona is not searched: it
 * shapes the narrator's voice, and its words (in every query) would admit passages about nothing.
 */
export function buildSearchTerms(parts: QueryParts): { terms: SearchTerm[]; queryText: string } {
  const terms = new Map<string, SearchTerm>();
  const names = [...(parts.entities ?? []), ...(parts.knownNames ?? [])]
    .map(nameTokens)
    .filter((tokens) => tokens.length > 1 || (tokens.length === 1 && isMeaningfulWord(tokens[0]!)));
  // Longest names first, so "Days End Graveyard" claims its words before "Days End" does.
  names.sort((a, b) => b.length - a.length);
  const oneWordNames = new Set(names.filter((n) => n.length === 1).map((n) => n[0]!));

  const add = (term: SearchTerm) => {
    const existing = terms.get(term.text);
    if (!existing) terms.set(term.text, term);
    else if (existing.standing && !term.standing) terms.set(term.text, { ...existing, standing: false, origin: term.origin });
  };

  const addText = (raw: string | undefined, origin: SearchTerm['origin']) => {
    if (!raw) return;
    // A CJK run has no spaces between its words: each of its words is searched as a phrase of its pairs.
    const text = raw.replace(CJK_RUN, (run) => {
      for (const word of cjkWords(run)) add(term(tokenize(word), origin, false, false));
      return ' ';
    });
    const tokens = tokenize(text);
    const claimed = new Array<boolean>(tokens.length).fill(false);
    // A library declares hundreds of names: each is looked for only where its first word stands.
    const startsAt = new Map<string, number[]>();
    tokens.forEach((word, i) => {
      const at = startsAt.get(word);
      if (at) at.push(i);
      else startsAt.set(word, [i]);
    });
    for (const name of names) {
      if (name.length < 2) continue;
      for (const i of startsAt.get(name[0]!) ?? []) {
        if (i + name.length <= tokens.length && name.every((w, j) => tokens[i + j] === w && !claimed[i + j])) {
          for (let j = 0; j < name.length; j++) claimed[i + j] = true;
          add(term(name, origin, false, true));
        }
      }
    }
    tokens.forEach((word, i) => {
      if (!claimed[i] && isMeaningfulWord(word)) add(term([word], origin, false, oneWordNames.has(word)));
    });
  };

  addText(parts.input, 'input');
  // A name the turn writes with capitals is also searched whole: whether the campaign holds it side by side decides.
  for (const name of capitalizedNames(parts.input ?? '')) if (!terms.has(termText(name))) add({ ...term(name, 'input', false, false), capitalized: true });
  addText(parts.scene, 'scene');
  for (const line of (parts.recent ?? []).slice(-RECENT_LINES_IN_QUERY)) addText(line, 'recent');
  for (const name of parts.entities ?? []) {
    const tokens = nameTokens(name);
    if (tokens.length === 0) continue;
    if (tokens.length === 1 && !isMeaningfulWord(tokens[0]!)) continue;
    add(term(tokens, 'entity', true, true));
  }

  const queryText = [
    parts.input,
    parts.scene,
    ...(parts.recent ?? []).slice(-RECENT_LINES_IN_QUERY),
    ...(parts.entities ?? []),
  ]
    .filter((s): s is string => typeof s === 'string' && s.trim().length > 0)
    .join('\n');
  return { terms: [...terms.values()], queryText };
}
