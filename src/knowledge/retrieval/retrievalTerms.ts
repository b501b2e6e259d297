/**
 * Turning text into search terms. Every term reaches FTS5 only as a double-quoted string built here, so
 * a writer's text (quotes, `NEAR`, `*`, column filters) can never change the meaning of the MATCH query.
 */

/** Words that carry no topic. A term made only of these is never searched. */
const STOP_WORDS = new Set(
  (
    'a about above after again against all also am an and any are as at be because been before being below ' +
    'between both but by can could did do does doing done down during each either else even ever every few for ' +
    'from further get gets go goes going got had has have having he her here hers herself him himself his how ' +
    'however i if in into is it its itself just least less let like made make many may me might mine more most ' +
    'much must my myself near neither no nor not now of off often on once one only onto or other others our ours ' +
    'ourselves out over own per perhaps quite rather really said same say says see seen shall she should since ' +
    'so some such than that the their theirs them themselves then there these they thing things this those ' +
    'though through thus to too toward towards under until up upon us use used uses using very via was we well ' +
    'were what whatever when where whether which while who whom whose why will with within without would yet you ' +
    'your yours yourself yourselves tell know want look looks take takes come comes back still way around'
  ).split(' '),
);

/**
 * The words of a text as FTS5's `unicode61 remove_diacritics 2` tokenizer sees them: lower-cased,
 * diacritics removed, split at anything that is not a letter or digit.
 */
export function tokenize(text: string): string[] {
  return (
    text
      .normalize('NFKD')
      .replace(/\p{M}+/gu, '')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? []
  );
}

export function isMeaningfulWord(word: string): boolean {
  if (STOP_WORDS.has(word)) return false;
  return word.length >= 3 || (word.length === 2 && /\d/.test(word));
}

/**
 * A search term: one word, or a multi-word entity name searched as a phrase. `variants` are the forms
 * searched for it (a plural also finds its singular), so "dragons" matches a passage about a dragon.
 */
export interface SearchTerm {
  /** Display form, as recorded in matchedTerms. */
  text: string;
  /** Token sequences; the term matches when any of them occurs. */
  variants: string[][];
  /** Named in the standing state (a character present, the location) rather than in this turn's text. */
  standing: boolean;
  /** The name of an entity (from the state or the library's entity lists), not just a word. */
  name: boolean;
  /** Where the term came from, for the record. */
  origin: 'input' | 'recent' | 'scene' | 'entity';
}

function singular(word: string): string | null {
  if (word.length < 5 || /\d/.test(word)) return null;
  if (word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.endsWith('ves')) return `${word.slice(0, -3)}f`;
  if (/(ches|shes|sses|xes)$/.test(word)) return word.slice(0, -2);
  if (word.endsWith('s') && !word.endsWith('ss') && !word.endsWith('us') && !word.endsWith('is')) return word.slice(0, -1);
  return null;
}

function wordTerm(word: string, origin: SearchTerm['origin'], standing: boolean, name: boolean): SearchTerm {
  const base = singular(word);
  return { text: word, variants: base ? [[word], [base]] : [[word]], standing, name, origin };
}

/** `"a b"` with quotes doubled: the only way a term enters a MATCH expression. */
function quote(tokens: string[]): string {
  return `"${tokens.join(' ').replace(/"/g, '""')}"`;
}

/** An FTS5 MATCH expression that finds any of the terms, or null when there is nothing to search. */
export function buildMatchExpression(terms: readonly SearchTerm[]): string | null {
  const parts = terms.map((t) => (t.variants.length === 1 ? quote(t.variants[0]!) : `(${t.variants.map(quote).join(' OR ')})`));
  return parts.length > 0 ? parts.join(' OR ') : null;
}

function containsSequence(tokens: readonly string[], sequence: readonly string[]): boolean {
  if (sequence.length === 1) return tokens.includes(sequence[0]!);
  outer: for (let i = 0; i + sequence.length <= tokens.length; i++) {
    for (let j = 0; j < sequence.length; j++) if (tokens[i + j] !== sequence[j]) continue outer;
    return true;
  }
  return false;
}

/** The terms that occur in already-tokenized text. */
export function matchTerms(tokens: readonly string[], terms: readonly SearchTerm[]): SearchTerm[] {
  const set = new Set(tokens);
  return terms.filter((t) =>
    t.variants.some((v) => (v.length === 1 ? set.has(v[0]!) : v.every((w) => set.has(w)) && containsSequence(tokens, v))),
  );
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

/** How many of the newest story lines join the query: enough for the thread, not the whole transcript. */
const RECENT_LINES_IN_QUERY = 2;

/** A name's words without leading articles: "the Abbey" is the name "abbey", which "Old Abbey" also holds. */
function nameTokens(name: string): string[] {
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

  const addText = (text: string | undefined, origin: SearchTerm['origin']) => {
    if (!text) return;
    const tokens = tokenize(text);
    const claimed = new Array<boolean>(tokens.length).fill(false);
    for (const name of names) {
      if (name.length < 2) continue;
      for (let i = 0; i + name.length <= tokens.length; i++) {
        if (name.every((w, j) => tokens[i + j] === w && !claimed[i + j])) {
          for (let j = 0; j < name.length; j++) claimed[i + j] = true;
          add({ text: name.join(' '), variants: [name], standing: false, name: true, origin });
        }
      }
    }
    tokens.forEach((word, i) => {
      if (!claimed[i] && isMeaningfulWord(word)) add(wordTerm(word, origin, false, oneWordNames.has(word)));
    });
  };

  addText(parts.input, 'input');
  addText(parts.scene, 'scene');
  for (const line of (parts.recent ?? []).slice(-RECENT_LINES_IN_QUERY)) addText(line, 'recent');
  for (const name of parts.entities ?? []) {
    const tokens = nameTokens(name);
    if (tokens.length === 0) continue;
    if (tokens.length === 1 && !isMeaningfulWord(tokens[0]!)) continue;
    const key = tokens.join(' ');
    add(tokens.length === 1 ? wordTerm(key, 'entity', true, true) : { text: key, variants: [tokens], standing: true, name: true, origin: 'entity' });
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
