/**
 * Forms of one word that Porter's stemmer keeps apart: irregular verbs ("What did the king see?" is
 * answered by "the king saw"; "foretell" by "foretold"), irregular plurals ("wolf" and "wolves"), and the comparison of common
 * adjectives ("Who was the older son?" beside "the oldest"). A search asks for every form, as it does for
 * every spelling. Words with a common unrelated sense are left out ("ground" is not "grind", "rose" is
 * mostly a flower in a story, "bear" an animal), since a form joins everything the word means.
 */

/**
 * One verb's forms per group (`|` or a new line between groups), base first; forms Porter already joins
 * (sees, seeing) are not listed. "lie" and "lay" share "lay", so they are one group.
 */
const IRREGULAR_VERBS = `
arise arose arisen|awake awoke awoken|begin began begun|bend bent|beseech besought
bind bound|bite bitten|bleed bled|blow blew blown|break broke broken|breed bred|bring brought|build built
burn burnt|buy bought|catch caught|choose chose chosen|cling clung|come came|creep crept|dig dug
draw drew drawn|dream dreamt|drink drank drunk|drive drove driven|dwell dwelt|eat ate eaten|fall fell fallen
feed fed|feel felt|fight fought|find found|flee fled|fling flung|fly flew flown|forbid forbade forbidden
forsake forsook forsaken|freeze froze frozen|get got gotten
give gave given|go went gone goes|grow grew grown|hang hung|hear heard|hide hid hidden|hold held|keep kept
kneel knelt|know knew known|lay laid lie lies lied lain lying|lead led|leap leapt|leave left|lend lent|light lit
lose lost|make made|meet met|pay paid|ride rode ridden|ring rang rung|rise risen
run ran|say said|see saw seen|seek sought|sell sold|send sent|shake shook shaken|shine shone|shoot shot
sing sang sung|sink sank sunk|sit sat|slay slew slain|sleep slept|slide slid|speak spoke spoken|spend spent
spin spun|spring sprang sprung|stand stood|steal stole stolen|stick stuck|sting stung|stride strode stridden
strike struck stricken|swear swore sworn|sweep swept|swim swam swum|swing swung|take took taken|teach taught
tear tore torn|tell told|think thought|throw threw thrown|tread trod trodden
wake woke woken|wear wore worn|weave wove woven|weep wept|win won|write wrote written|die dies died dying
tie ties tied tying
`;

const IRREGULAR_PLURALS = `
man men|woman women|child children|foot feet|tooth teeth|goose geese|mouse mice|ox oxen|wolf wolves
thief thieves|elf elves|dwarf dwarves dwarfs|half halves|loaf loaves|shelf shelves|calf calves|knife knives
wife wives|sheaf sheaves|hoof hooves hoofs|scarf scarves|person people
`;

/**
 * Adjectives a question compares with: "the older son" is "the oldest" of two, so the -er and -est forms
 * (made by rule) find each other; the plain adjective, far more common, is a different word to a reader.
 */
const COMPARED_ADJECTIVES =
  'old young big small great tall short long strong weak rich poor wise happy sad brave bold proud fair ' +
  'dark bright deep high low wide narrow near far close dear cruel kind clever sweet cold hot warm fat thin ' +
  'heavy light quick slow swift fine pretty ugly lovely hard soft loud quiet safe wild large little tiny ' +
  'early late easy busy angry hungry lucky noble humble gentle simple grand rare strange black white';

/**
 * Short words ending in a consonant and "y", whose forms Porter's stemmer splits in two: "cry" and "crying"
 * stem to "cry", "cries" and "cried" to "cri" ("Why did the girl cry?" is answered by "she cried").
 */
const SHORT_Y_WORDS = 'cry try fly dry fry spy pry ply shy sky';

/** Comparisons that no rule makes. */
const IRREGULAR_COMPARISONS = 'better best|worse worst|older oldest elder eldest';

/** big → bigger, happy → happier, wise → wiser, old → older. */
function compared(adjective: string, ending: 'er' | 'est'): string {
  if (adjective.endsWith('e')) return adjective + ending.slice(1);
  if (/[^aeiou]y$/.test(adjective)) return `${adjective.slice(0, -1)}i${ending}`;
  if (/^[^aeiou]*[aeiou][^aeiouwxy]$/.test(adjective)) return adjective + adjective.at(-1)! + ending;
  return adjective + ending;
}

/** Prefixes that make a verb of an irregular one with the same forms: foretell/foretold, withdraw/withdrew, become/became. */
const VERB_PREFIXES = ['fore', 'over', 'under', 'with', 'for', 'mis', 'out', 'up', 're', 'be', 'un'];

type Groups = Map<string, Set<string>>;
function join(groups: Groups, forms: readonly string[]): void {
  const group = new Set(forms);
  for (const form of forms) for (const other of groups.get(form) ?? []) group.add(other);
  for (const form of group) groups.set(form, group);
}
function groupsOf(lists: string): Groups {
  const groups: Groups = new Map();
  for (const line of lists.split(/[|\n]/)) {
    const forms = line.trim().split(/\s+/).filter(Boolean);
    if (forms.length > 1) join(groups, forms);
  }
  return groups;
}
const VERBS = groupsOf(IRREGULAR_VERBS);
const FORMS = groupsOf(`${IRREGULAR_VERBS}|${IRREGULAR_PLURALS}|${IRREGULAR_COMPARISONS}`);
for (const adjective of COMPARED_ADJECTIVES.split(' ')) join(FORMS, [compared(adjective, 'er'), compared(adjective, 'est')]);
for (const word of SHORT_Y_WORDS.split(' ')) join(FORMS, [word, `${word}ing`, `${word.slice(0, -1)}ies`, `${word.slice(0, -1)}ied`]);

/** The word's other forms (lower-case, as tokenized), never the word itself; empty for most words. */
export function otherForms(word: string): string[] {
  const group = FORMS.get(word);
  if (group) return [...group].filter((form) => form !== word);
  for (const prefix of VERB_PREFIXES) {
    const verb = word.startsWith(prefix) ? word.slice(prefix.length) : '';
    // A two-letter verb ("go") only after a long prefix: "undergo" is one, "bego" is not.
    const forms = verb.length >= (prefix.length >= 4 ? 2 : 3) ? VERBS.get(verb) : undefined;
    if (forms) return [...forms].filter((form) => form !== verb).map((form) => prefix + form);
  }
  return [];
}
