import { decisionLine } from '../knowledge/retrieval';
import type { ResearchRecord } from './research';
import type { AssembledContext, ContextSection } from './types';

// How an assembled context reads for a writer: the one-screen summary (CLI play's /context) and the full
// markdown report (the editor's Preview Context). Both say what each section cost and what it left out.

/** A passage or memory a section used or left out, named the way a writer finds it. */
export interface ContextItem {
  id: string;
  /** "Source title › heading › heading", or the id when it is not a retrieved passage (a memory). */
  title: string;
  /** "canon · places/old-abbey.md · matched 'abbey'", or the section's own reason. */
  detail: string;
}

export interface DescribedSection {
  section: ContextSection;
  items: ContextItem[];
  leftOut: ContextItem[];
}

/** Each section with its items and left-out items resolved against the retrieval record (of a context just assembled or frozen with a turn). */
export function describeContext(context: Pick<AssembledContext, 'sections' | 'retrieval'>): DescribedSection[] {
  const candidates = new Map(context.retrieval.candidates.map((c) => [c.passageId, c]));
  const describe = (id: string, reason?: string): ContextItem => {
    const candidate = candidates.get(id);
    if (!candidate) return { id, title: id, detail: reason ?? '' };
    // A file's first heading usually repeats its title: "Sister Mara", not "Sister Mara › Sister Mara".
    const headings = candidate.headingPath[0] === candidate.sourceTitle ? candidate.headingPath.slice(1) : candidate.headingPath;
    const trail = headings.length > 0 ? ` › ${headings.join(' › ')}` : '';
    return { id, title: `${candidate.sourceTitle}${trail}`, detail: `${candidate.class} · ${candidate.sourcePath} · ${reason ?? candidate.reason}` };
  };
  return context.sections.map((section) => ({
    section,
    items: section.itemIds.map((id) => describe(id)),
    leftOut: section.leftOut.map((l) => describe(l.id, l.reason)),
  }));
}

const RAN_WORDS: Record<ResearchRecord['ran'], string> = {
  native: 'native tool calls',
  json: 'the JSON reply protocol',
  lexical: "today's keyword selection (no research)",
};

/** One line a writer reads after a turn: how research ran, what it looked for, kept and was refused. */
export function researchHeadline(record: ResearchRecord): string {
  const queries = record.steps.filter((s) => s.tool === 'search' && s.outcome === 'answered').map((s) => queryOf(s.arguments));
  const refusedCalls = record.steps.filter((s) => s.outcome === 'refused').length;
  const parts = [
    `research: ${RAN_WORDS[record.ran]}`,
    ...(queries.length > 0 ? [`searched ${queries.map((q) => `“${q}”`).join(', ')}`] : []),
    ...(record.ran === 'lexical' ? [] : [`kept ${record.kept.length}`]),
    ...(refusedCalls + record.refused.length > 0 ? [`refused ${refusedCalls + record.refused.length}`] : []),
    ...(record.limits.length > 0 ? [`stopped at ${record.limits.join(', ')}`] : []),
  ];
  return parts.join(' · ');
}

function queryOf(args: string): string {
  try {
    const parsed = JSON.parse(args) as { query?: unknown };
    if (typeof parsed.query === 'string') return parsed.query.replace(/\s+/g, ' ').trim();
  } catch {
    // A cut or broken argument text is shown as written.
  }
  return args;
}

/** Research as steps, one per line: each call the model made with the runtime's answer, then what was kept and refused. */
export function researchLines(record: ResearchRecord): string[] {
  const lines = [
    researchHeadline(record),
    `  why: ${record.reason}`,
    ...record.steps.map((s) => `  ${s.round}. ${s.tool} ${s.arguments} → ${s.outcome === 'refused' ? 'REFUSED: ' : ''}${s.said}${s.shown.length > 0 ? ` [${s.shown.join(', ')}]` : ''}`),
    ...record.kept.map((k) => `  kept ${k.id}${k.reason ? `: ${k.reason}` : ''}`),
    ...record.refused.map((r) => `  refused ${r.id}: ${r.reason}`),
    `  ${record.rounds} round(s), ${record.resultTokens} tokens of results sent to the model, ${record.modelMs} ms model, ${record.runtimeMs} ms runtime`,
  ];
  return lines;
}

/** One line per section: where it sits, what it cost against its budget, how much was left out. */
export function renderContextSummary(context: AssembledContext): string {
  const lines = context.sections.map((s) => {
    const budget = s.budget === null ? '' : ` / ${s.budget}`;
    const left = s.leftOut.length > 0 ? `, ${s.leftOut.length} left out` : '';
    return `  ${s.stable ? '[prefix]' : '[live]  '} ${s.id.padEnd(16)} ${String(s.tokens).padStart(5)}${budget} tokens${left}`;
  });
  return [
    `Context: ${context.budget.used} of ${context.budget.total} tokens (model context ${context.budget.contextLength}, ${context.budget.replyReserve} kept for the reply)`,
    ...lines,
    ...context.warnings.map((w) => `  ! ${w}`),
    ...(context.research ? [`  ${researchHeadline(context.research)}`] : []),
  ].join('\n');
}

/** A code fence longer than any backtick run inside `text`, so sent text (imported data) stays inert text. */
export function fenced(text: string, info = 'text'): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}${info}\n${text}${text.endsWith('\n') ? '' : '\n'}${fence}`;
}

/**
 * The characters that can open inline markup (emphasis, code, links, images, HTML, tables), escaped so a
 * source title renders as the title and never as markup or a link. Mid-line, nothing else can.
 */
function inline(text: string): string {
  return text.replace(/[\\`*_[\]<>!|~&]/g, (ch) => `\\${ch}`);
}

export interface ContextReportHeading {
  campaignTitle: string;
  adventureTitle: string;
  action: string;
}

/**
 * The whole context as a markdown document: the summary, then every section in prompt order with its
 * tokens and budget, the passages it carries, what it left out and why, and the exact text it sends.
 */
export function renderContextMarkdown(context: AssembledContext, heading: ContextReportHeading): string {
  const out: string[] = [
    `# Context preview: ${inline(heading.action || '(continue)')}`,
    '',
    `Campaign **${inline(heading.campaignTitle)}**, adventure **${inline(heading.adventureTitle)}**. ` +
      'Nothing was sent to a model: this is what the next turn would send, assembled the same way.',
    '',
    fenced(renderContextSummary(context)),
    '',
    // One line in quotes: the query joins the action and recent narration with line breaks, which a JSON string would show as a literal \n.
    `Retrieval searched “${inline(context.retrieval.queryText.replace(/\s+/g, ' ').trim())}” (terms: ${inline(context.retrieval.terms.join(', ') || 'none')}); ` +
      `semantic: ${inline(context.retrieval.semantic.reason)}.`,
  ];
  if (context.research) out.push('', '## Research', '', fenced(researchLines(context.research).join('\n')));
  for (const [position, { section, items, leftOut }] of describeContext(context).entries()) {
    const budget = section.budget === null ? 'required' : `budget ${section.budget}`;
    out.push('', `## ${position + 1}. ${inline(section.title)} — ${section.tokens} tokens (${budget})`, '');
    out.push(`${section.stable ? 'Stable prefix (system message)' : 'Live part'} · section \`${section.id}\``, '');
    if (items.length > 0) {
      out.push('Uses:', '', ...items.map((item) => `- **${inline(item.title)}**${item.detail ? ` — ${inline(item.detail)}` : ''}`), '');
    }
    if (leftOut.length > 0) {
      out.push('Left out:', '', ...leftOut.map((item) => `- **${inline(item.title)}** — ${inline(item.detail)}`), '');
    }
    out.push(section.text.trim() === '' ? '*(sends nothing)*' : fenced(section.text));
  }
  const unused = context.retrieval.candidates.filter((c) => c.outcome !== 'selected');
  out.push('', `## Retrieval decisions (${context.retrieval.candidates.length} candidates, ${unused.length} not used)`, '');
  if (context.retrieval.abstention) out.push(`Nothing retrieved: ${inline(context.retrieval.abstention)}.`, '');
  out.push(context.retrieval.candidates.length === 0 ? '*(no candidate passages: retrieval found nothing that fits)*' : fenced(context.retrieval.candidates.map(decisionLine).join('\n')));
  return `${out.join('\n')}\n`;
}
