/**
 * Normalization shared by fact extraction and conflict detection: how attributes and values are compared
 * (names: see ../names). Deterministic and deliberately conservative — two values conflict only when neither could be
 * read as a restatement of the other.
 */
import { foldText, LEADING_ARTICLE } from '../names';

/** `Ages` under a list heading and `Age` on a sheet name one attribute: a plain trailing plural is dropped. */
export function attributeKey(attribute: string): string {
  return foldText(attribute)
    .replace(LEADING_ARTICLE, '')
    .replace(/([a-z]{2,}[^s\s])s$/, '$1');
}

const NUMBER_WORDS: Record<string, number> = {
  zero: 0, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10,
  eleven: 11, twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17,
  eighteen: 18, nineteen: 19, twenty: 20, thirty: 30, forty: 40, fifty: 50, sixty: 60, seventy: 70,
  eighty: 80, ninety: 90, hundred: 100,
};

/** `thirty-four` → `34`, `twelve` → `12`: a number written out and in digits is the same value. */
function numberWordsToDigits(folded: string): string {
  return folded.replace(/\b(twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)[ -](one|two|three|four|five|six|seven|eight|nine)\b/g, (_, tens: string, ones: string) =>
    String(NUMBER_WORDS[tens]! + NUMBER_WORDS[ones]!),
  ).replace(/\b[a-z]+\b/g, (word) => (word in NUMBER_WORDS ? String(NUMBER_WORDS[word]) : word));
}

/** Units that restate a bare number (`34 years old` is `34`). */
const NUMBER_SUFFIXES = / (years old|years|year old|yrs|y o|yo)$/;

/** British and American spellings of words that describe people and places: one value, two spellings. */
const SPELLING_VARIANTS: Record<string, string> = {
  grey: 'gray', colour: 'color', armour: 'armor', harbour: 'harbor', centre: 'center', honour: 'honor',
  favour: 'favor', theatre: 'theater', metre: 'meter', jewellery: 'jewelry', travelling: 'traveling',
};

export function valueKey(value: string): string {
  return numberWordsToDigits(foldText(value).replace(LEADING_ARTICLE, ''))
    .replace(NUMBER_SUFFIXES, '')
    .replace(/\b[a-z]+\b/g, (word) => SPELLING_VARIANTS[word] ?? word)
    .trim();
}

const FILLER = new Set(['the', 'a', 'an', 'of', 'and', 'or', 'in', 'at', 'on', 'to', 's', 'with', 'for', 'by', 'from']);
const NEGATIONS = new Set(['not', 'no', 'never', 'none', 'non', 'without', 'nor']);

function contentWords(key: string): Set<string> {
  return new Set(key.split(' ').filter((w) => w && !FILLER.has(w)));
}

/**
 * Whether two normalized values disagree. Equal keys agree; so do values where one's content words are a
 * subset of the other's (`Captain Ilse Varra` restates `Ilse Varra`), unless the numbers differ or only
 * one of them is negated (`alive` / `not alive`).
 */
export function valuesConflict(a: string, b: string): boolean {
  if (a === b) return false;
  const wa = contentWords(a);
  const wb = contentWords(b);
  const numbers = (w: Set<string>) => [...w].filter((x) => /^\d/.test(x)).sort().join(' ');
  const na = numbers(wa);
  const nb = numbers(wb);
  if (na && nb && na !== nb) return true;
  const negated = (w: Set<string>) => [...w].some((x) => NEGATIONS.has(x));
  if (negated(wa) !== negated(wb)) return true;
  const subset = (x: Set<string>, y: Set<string>) => [...x].every((w) => y.has(w));
  if (wa.size === 0 || wb.size === 0) return false;
  return !subset(wa, wb) && !subset(wb, wa);
}
