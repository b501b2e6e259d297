import { neutralizeMarkers, promptField } from '../models';
import type { CastEntry } from './ports';
import type { ChatMessage, Memory, Persona, Turn } from './types';
import { memoryLine, renderHistoryTurn } from './contextBuilder';
import { isMeaningfulWord, tokenize } from '../knowledge/retrieval';

/**
 * The memory bank: every N actions a block of the story is compressed into a short, third-person memory
 * naming who did what. The summarizer is told who the protagonist is, who else could be "she", and where
 * the story is set; without that, "She grabs your arm" can only become a memory that names no one.
 */

export const MEMORY_MAX_WORDS = 50;
/** Reply bounds of the memory and summary calls: room for their word limits (50 and 150 words) twice over. */
export const MEMORY_REPLY_TOKENS = 160;
export const SUMMARY_REPLY_TOKENS = 480;
/** Characters the brief may list beside the protagonist. */
export const MAX_CAST_MEMBERS = 6;
const MAX_DESCRIPTION_WORDS = 40;

function firstWords(text: string, max: number): string {
  const words = text.trim().split(/\s+/).filter(Boolean);
  return words.length <= max ? words.join(' ') : `${words.slice(0, max).join(' ')}…`;
}

function mentions(text: string, entry: CastEntry): boolean {
  return [entry.name, ...entry.aliases].some((name) => {
    const escaped = name.trim().replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    return escaped !== '' && new RegExp(`(^|[^\\p{L}\\p{N}])${escaped}($|[^\\p{L}\\p{N}])`, 'iu').test(text);
  });
}

/**
 * Who the block could be about: the protagonist, then entries the block mentions, then other characters up
 * to the cap. Unmentioned characters are listed because the brief answers "who could these pronouns be";
 * unmentioned places are not, because an absent tavern is nobody's "she". Fixed descriptions only, never
 * live stats, so the same block is framed the same way whenever it is summarized.
 */
export function buildCastBrief(input: { persona: Persona; cast: readonly CastEntry[]; setting: string; blockText: string; cap?: number }): string {
  const cap = input.cap ?? MAX_CAST_MEMBERS;
  const seen = new Set<string>();
  const unique = input.cast.filter((c) => {
    const key = c.name.trim().toLowerCase();
    if (!key || seen.has(key) || key === input.persona.name.trim().toLowerCase()) return false;
    seen.add(key);
    return true;
  });
  const matched = unique.filter((c) => mentions(input.blockText, c));
  const topUp = unique.filter((c) => c.kind === 'character' && !matched.includes(c));
  const roster = [...matched, ...topUp].slice(0, cap);

  const lines: string[] = [];
  const { name, pronouns, description } = input.persona;
  if (name) lines.push(`- ${name}${pronouns ? ` (${pronouns})` : ''} — the protagonist.${description ? ` ${firstWords(description, MAX_DESCRIPTION_WORDS)}` : ''}`);
  for (const c of roster) {
    // Narrator-only canon is named, so pronouns resolve, but its secrets stay out of memories the player reads.
    const desc = c.hidden ? '' : firstWords(c.description, MAX_DESCRIPTION_WORDS);
    lines.push(`- ${c.name}${desc ? ` — ${desc}` : ''}`);
  }
  const parts: string[] = [];
  if (lines.length > 0) parts.push(`Cast:\n${lines.map(promptField).join('\n')}`);
  if (input.setting.trim()) parts.push(`Setting:\n${input.setting.trim()}`);
  return parts.join('\n\n');
}

/** The framing rule both the memory and the summary prompts state, so they never disagree about who "you" is. */
function framingRule(persona: Persona): string {
  const protagonist = persona.name
    ? `Refer to the protagonist by name, as ${persona.name}${persona.pronouns ? ` (${persona.pronouns})` : ''}.`
    : 'Refer to the protagonist as "the player".';
  return `Write in third person, never "you". ${protagonist} Name characters rather than using bare pronouns.`;
}

export function memorySystemPrompt(persona: Persona): string {
  return [
    'You compress interactive-fiction story excerpts into memories.',
    `Respond with one or two plain sentences, at most ${MEMORY_MAX_WORDS} words, in past tense, stating the concrete facts and events`,
    '(names, places, items, promises, injuries). When you must trim, keep the details a later scene could turn on.',
    framingRule(persona),
    'No preamble, no commentary.',
  ].join(' ');
}

/** The story text of a block, as the summarizer reads it. */
export function blockText(turns: readonly Turn[], persona: Persona): string {
  return turns
    .map((t) => renderHistoryTurn(t, persona.name))
    .filter((t): t is string => t !== null)
    .join('\n\n');
}

/**
 * The one place a memory prompt is built: the post-turn pass and the rewrite of an old memory both call
 * it, so a rewritten memory is written with the prompt that ships.
 */
export function buildMemoryPrompt(input: { persona: Persona; cast: readonly CastEntry[]; setting: string; block: readonly Turn[] }): ChatMessage[] {
  const text = blockText(input.block, input.persona);
  const brief = buildCastBrief({ persona: input.persona, cast: input.cast, setting: input.setting, blockText: text });
  return [
    { role: 'system', content: memorySystemPrompt(input.persona) },
    { role: 'user', content: `${brief ? `${brief}\n\n` : ''}Story excerpt:\n\n${text}\n\nMemory:` },
  ];
}

/** The running summary, rebuilt on the memories (and the previous summary) with the same brief. */
export function buildSummaryPrompt(input: { persona: Persona; cast: readonly CastEntry[]; setting: string; previous: string | null; memories: readonly Memory[] }): ChatMessage[] {
  const text = input.memories.map(memoryLine).join('\n');
  const brief = buildCastBrief({ persona: input.persona, cast: input.cast, setting: input.setting, blockText: text });
  return [
    {
      role: 'system',
      content: `You keep the running summary of an interactive story. Write at most 150 words in past tense. ${framingRule(input.persona)} No preamble, no commentary.`,
    },
    {
      role: 'user',
      content: [brief, input.previous ? `Summary so far:\n${neutralizeMarkers(input.previous)}` : '', `Memories, oldest first:\n${text}`, 'Updated summary:'].filter(Boolean).join('\n\n'),
    },
  ];
}

/** The words that say what a text is about, as retrieval reads them. */
function terms(text: string): Set<string> {
  return new Set(tokenize(text).filter(isMeaningfulWord));
}

/** Memories for the next turn: pinned first, then by how many words they share with the moment. */
export function rankMemories(memories: readonly Memory[], queryText: string, topK: number): Memory[] {
  const query = terms(queryText);
  const scored = memories
    .filter((m) => !m.pinned)
    .map((m) => ({ m, score: [...terms(m.text)].filter((t) => query.has(t)).length }))
    .filter((x) => x.score > 0)
    .sort((a, b) => b.score - a.score || b.m.createdAt.localeCompare(a.m.createdAt));
  return [...memories.filter((m) => m.pinned), ...scored.slice(0, topK).map((x) => x.m)];
}

/** Trims the model's answer to the memory itself: no "Memory:" echo, no quotes, no trailing state block. */
export function cleanMemoryText(reply: string): string {
  return reply
    .replace(/```[\s\S]*?```/g, '')
    .replace(/^\s*(memory|summary|updated summary)\s*:\s*/i, '')
    .trim()
    .replace(/^"(.*)"$/s, '$1')
    .trim();
}
