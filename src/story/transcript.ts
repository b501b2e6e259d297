import type { Adventure, Turn } from './types';

/**
 * A branch of an adventure as a markdown document a writer can keep, edit or share: the actions as
 * quoted lines, the narration as prose. Nothing is dropped — a cut-off reply and a failed turn say so
 * rather than disappear.
 */

function actionLine(turn: Turn, personaName: string): string | undefined {
  const text = turn.action.text.trim();
  const who = personaName || 'You';
  switch (turn.action.kind) {
    case 'do':
      return `> **${who}:** ${text}`;
    case 'say':
      return `> **${who} says:** “${text.replace(/^["“]|["”]$/g, '')}”`;
    case 'story':
      return `> **Story:** ${text}`;
    case 'continue':
      return '> _Continue._';
    case 'start':
      return text ? `> **Opening:** ${text}` : undefined;
  }
}

function replyOf(turn: Turn): string {
  const narration = turn.narration.trim();
  if (turn.status === 'incomplete') return `${narration}\n\n_(The reply was cut off here.)_`;
  if (turn.status === 'error') return narration ? `${narration}\n\n_(The reply failed: ${turn.error ?? 'unknown error'}.)_` : `_(No reply: ${turn.error ?? 'unknown error'}.)_`;
  if (turn.status === 'pending' || turn.status === 'streaming') return narration ? `${narration}\n\n_(Still being written.)_` : '_(Not answered yet.)_';
  return narration;
}

/** `turns` is one branch, root first (PlayStore.lineage). */
export function transcriptMarkdown(adventure: Pick<Adventure, 'title' | 'persona'>, turns: readonly Turn[], campaignTitle: string): string {
  const persona = adventure.persona.name.trim();
  const header = [`# ${adventure.title}`, '', `_${[campaignTitle, `${turns.length} turn${turns.length === 1 ? '' : 's'}`, persona ? `played as ${persona}` : ''].filter(Boolean).join(' · ')}_`];
  const body = turns.map((turn) => [actionLine(turn, persona), replyOf(turn)].filter((part) => part !== undefined && part !== '').join('\n\n'));
  return `${[header.join('\n'), ...body].join('\n\n---\n\n')}\n`;
}
