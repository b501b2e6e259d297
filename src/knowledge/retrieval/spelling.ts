/**
 * British and American spellings of one word. A setting bible written in one and a turn typed in the
 * other are about the same neighbour; Porter's stemmer keeps them apart ("neighbour" and "neighbor",
 * "realis" and "realiz"), so a search asks the index for every spelling. A spelling no file uses costs
 * nothing: it matches no passage.
 */

/** Words spelled -our in Britain and -or in America: what comes before it. */
const OUR_ROOTS = 'arb ard arm behavi cand clam col demean endeav fav flav glam harb hon hum lab neighb od parl ranc rig rum savi sav splend tum val vap vig';
const OUR_WORD = new RegExp(`^(${OUR_ROOTS.split(' ').join('|')})(our|or)(s|ed|ing|ite|ites|able|ably|ful|fully|hood|hoods|less|ly|er|ers|ism|y)?$`);
/** -ise / -ize and -yse / -yze endings (realise, organisation, analyse), with a stem long enough to be one of them. */
const ISE_WORD = /^(.{3,}[iy])([sz])(e|es|ed|ing|er|ers|ation|ations|ational)$/;
/** Whole-word pairs no rule covers: -re / -er, -ence / -ense, and the odd ones writers meet in settings. */
const PAIRS = [
  ['centre', 'center'],
  ['theatre', 'theater'],
  ['fibre', 'fiber'],
  ['sombre', 'somber'],
  ['spectre', 'specter'],
  ['lustre', 'luster'],
  ['sabre', 'saber'],
  ['meagre', 'meager'],
  ['calibre', 'caliber'],
  ['metre', 'meter'],
  ['litre', 'liter'],
  ['sepulchre', 'sepulcher'],
  ['defence', 'defense'],
  ['offence', 'offense'],
  ['licence', 'license'],
  ['pretence', 'pretense'],
  ['grey', 'gray'],
  ['plough', 'plow'],
  ['mould', 'mold'],
  ['smoulder', 'smolder'],
  ['moult', 'molt'],
  ['jewellery', 'jewelry'],
  ['manoeuvre', 'maneuver'],
  ['sceptic', 'skeptic'],
  ['sceptical', 'skeptical'],
  ['pyjamas', 'pajamas'],
  ['aluminium', 'aluminum'],
  ['catalogue', 'catalog'],
  ['dialogue', 'dialog'],
  ['programme', 'program'],
  ['judgement', 'judgment'],
  ['ageing', 'aging'],
  ['skilful', 'skillful'],
  ['wilful', 'willful'],
  ['fulfil', 'fulfill'],
  ['enrol', 'enroll'],
  ['whisky', 'whiskey'],
];
/** Endings a whole-word pair keeps on both sides (centres, ploughed, greyish). */
const PAIR_ENDINGS = ['', 's', 'es', 'd', 'ed', 'ing', 'er', 'ers', 'ish', 'ly'];
const PAIRED = new Map<string, string>();
for (const [british, american] of PAIRS) {
  for (const ending of PAIR_ENDINGS) {
    PAIRED.set(british + ending, american + ending);
    PAIRED.set(american + ending, british + ending);
  }
}

/** The word's other spellings (lower-case, as tokenized), never the word itself; empty for most words. */
export function otherSpellings(word: string): string[] {
  const paired = PAIRED.get(word);
  if (paired) return [paired];
  const our = OUR_WORD.exec(word);
  if (our) return [`${our[1]}${our[2] === 'our' ? 'or' : 'our'}${our[3] ?? ''}`];
  const ise = ISE_WORD.exec(word);
  if (ise) return [`${ise[1]}${ise[2] === 's' ? 'z' : 's'}${ise[3]}`];
  return [];
}
