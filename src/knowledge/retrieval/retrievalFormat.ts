import type { CandidateDecision, WorldInfoRecord } from './retrievalTypes';
import type { EntryVerdict } from './worldInfo';
import { isMeaningfulWord, tokenize } from './retrievalTerms';

// How retrieval results read as text, for every surface that prints them (CLI, previews in the editor).

/** "places/old-abbey.md:9-12 › The Old Abbey › The Crypt" (without the lines when a stored record has none) */
export function locate(p: Pick<CandidateDecision, 'sourcePath' | 'startLine' | 'endLine' | 'headingPath'>): string {
  const lines = p.startLine === undefined ? '' : `:${p.startLine}-${p.endLine}`;
  return [`${p.sourcePath}${lines}`, ...p.headingPath].join(' › ');
}

export function excerpt(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/** The text around the first query word it contains (words as search reads them), on one line. */
export function excerptAround(text: string, query: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const wanted = new Set(tokenize(query).filter(isMeaningfulWord));
  const first = [...flat.matchAll(/\S+/g)].find((m) => tokenize(m[0]).some((word) => wanted.has(word)))?.index ?? 0;
  const start = Math.max(0, first - max / 4);
  const slice = flat.slice(start, start + max);
  return `${start > 0 ? '…' : ''}${slice}${start + max < flat.length ? '…' : ''}`;
}

/** Each outcome of retrieval in the words a writer uses. */
export const OUTCOME_WORDS: Record<CandidateDecision['outcome'], string> = {
  selected: 'used',
  'not-relevant': 'not relevant to this turn',
  'over-budget': 'no room left in its section',
  duplicate: 'repeats a passage that was used',
  'in-state': 'already said by the world state',
  disabled: 'its source is turned off',
  'hidden-for-stage': 'hidden at this stage of the story',
  'not-ready': 'not indexed yet',
};

/** SillyTavern's insertion positions, in its editor's words. */
const POSITIONS = ['↑Char (before the character)', '↓Char (after the character)', "↑AN (top of the author's note)", "↓AN (bottom of the author's note)", '@D (at a depth)', '↑EM (before the examples)', '↓EM (after the examples)', 'outlet'];
const ROLES = ['system', 'user', 'assistant'];

/** The role SillyTavern sends an entry at a depth as: "system", "user", "assistant". */
export const worldInfoRole = (role: number): string => ROLES[role] ?? `role ${role}`;

/** Where SillyTavern would put an entry: "↓Char (after the character), order 100" / "@D (at a depth) 4 as system, order 100". */
export function worldInfoPlace(v: Pick<EntryVerdict, 'position' | 'depth' | 'role' | 'order'>): string {
  const position = POSITIONS[v.position] ?? `position ${v.position}`;
  return `${position}${v.position === 4 ? ` ${v.depth} as ${worldInfoRole(v.role)}` : ''}, order ${v.order}`;
}

/** SillyTavern's World Info for one prompt: a heading, then each entry (fired, held back, not mentioned) with why. */
export function worldInfoItems(record: WorldInfoRecord): { heading: string; items: { label: string; detail: string }[] } {
  const fired = record.verdicts.filter((v) => v.fired);
  // Entries nothing mentioned are counted, not listed: a thousand-entry book would bury the ones that matter.
  const unmentioned = record.verdicts.filter((v) => !v.fired && v.reason.startsWith('no key in the last'));
  const held = record.verdicts.filter((v) => !v.fired && !unmentioned.includes(v));
  return {
    heading: `World Info at message ${record.chatLength} (seed ${record.seed}): ${fired.length} of ${record.verdicts.length} entries fired, ${record.used} of ${record.budget} budget tokens`,
    items: [
      ...fired.map((v) => ({ label: `fired · ${v.title} (${v.sourcePath})`, detail: `${v.reason} · SillyTavern: ${worldInfoPlace(v)}` })),
      ...held.map((v) => ({ label: `held back · ${v.title} (${v.sourcePath})`, detail: v.reason })),
      ...(unmentioned.length > 0
        ? [{ label: `not mentioned · ${unmentioned.length} ${unmentioned.length === 1 ? 'entry' : 'entries'}`, detail: `their keys are not in the scanned messages: ${unmentioned.slice(0, 8).map((v) => v.title).join(', ')}${unmentioned.length > 8 ? ' …' : ''}` }]
        : []),
    ],
  };
}

/** The same as lines: "fired · The Red Dragon (lore/dragon.md): sticky: 1 more message after this one · SillyTavern: ↑Char …". */
export function worldInfoLines(record: WorldInfoRecord): string[] {
  const { heading, items } = worldInfoItems(record);
  return [heading, ...items.map((i) => `${i.label}: ${i.detail}`)];
}

/** "used · places/old-abbey.md:9-12 › The Crypt: matched 'crypt'; within the canon budget (412/1500 tokens)" */
export function decisionLine(d: CandidateDecision): string {
  return `${OUTCOME_WORDS[d.outcome]} · ${locate(d)}: ${d.reason}`;
}
