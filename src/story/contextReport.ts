import path from 'node:path';
import { decisionLine, worldInfoLines } from '../knowledge/retrieval';
import type { PlayStore } from './playStore';
import { plural } from './research';
import type { ResearchRecord, ResearchStep } from './types';
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
  /** What it costs in the prompt, when the record says (a passage); null for a turn or a memory. */
  tokens: number | null;
  /** The file and line it is written at, when it is a retrieved passage. */
  at?: { path: string; line: number | undefined };
}

export interface DescribedSection {
  section: ContextSection;
  items: ContextItem[];
  leftOut: ContextItem[];
}

const oneLine = (text: string, max: number): string => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
};

/** A section item that is not a retrieved passage, named for a writer: a turn, a memory, the summary. */
export function playItemName(store: Pick<PlayStore, 'getTurn' | 'listMemories'> | undefined, adventureId: string | undefined, id: string): string {
  const turn = store?.getTurn(id);
  if (turn) return `Turn ${turn.depth + 1}: ${oneLine(turn.action.text, 50)}`;
  const memory = adventureId ? store?.listMemories(adventureId).find((m) => m.id === id) : undefined;
  if (memory) return `Memory: ${oneLine(memory.text, 50)}`;
  return id === 'story-summary' ? 'The story so far' : 'an item no longer stored';
}

/**
 * A section's budget as a stacked bar: what it used item by item (the rest of its cost is its heading and
 * frames), the room left, and what was left out beside it. Widths are tokens over `scale`, the larger of the
 * budget and what used and left out would have needed together, so every bar reads on its own scale.
 */
export interface BudgetBar {
  scale: number;
  used: number;
  budget: number | null;
  /** In order: used items, the frames, then left-out items (sized when their cost is known). */
  segments: { kind: 'item' | 'frame' | 'left-out'; tokens: number; title: string; detail: string }[];
  /** Left-out items whose cost the record does not hold (turns, memories): counted, not drawn. */
  unsizedLeftOut: number;
}

export function budgetBar({ section, items, leftOut }: DescribedSection): BudgetBar {
  const sized = items.every((item) => item.tokens !== null);
  const itemTokens = sized ? items.reduce((n, item) => n + item.tokens!, 0) : 0;
  const segments: BudgetBar['segments'] = sized
    ? items.map((item) => ({ kind: 'item' as const, tokens: item.tokens!, title: item.title, detail: item.detail }))
    : [];
  // Items with no cost of their own (turns, memories) share one segment; passages' frames are the rest.
  const rest = Math.max(0, section.tokens - itemTokens);
  if (rest > 0) {
    const title = sized ? 'Heading and passage frames' : items.length > 0 ? items.map((item) => item.title).join('\n') : sectionLabel(section).label;
    segments.push({ kind: 'frame', tokens: rest, title, detail: sized ? '' : `${items.length} item${items.length === 1 ? '' : 's'}` });
  }
  const left = leftOut.filter((item) => item.tokens !== null);
  segments.push(...left.map((item) => ({ kind: 'left-out' as const, tokens: item.tokens!, title: item.title, detail: item.detail })));
  const wanted = section.tokens + left.reduce((n, item) => n + item.tokens!, 0);
  return { scale: Math.max(1, section.budget ?? 0, wanted), used: section.tokens, budget: section.budget, segments, unsizedLeftOut: leftOut.length - left.length };
}

/**
 * A section as a writer reads its name: a short sentence-case label ("Always-included canon") and what the
 * prompt's own heading says beyond it ("untrusted data"), for a description or a tooltip. Read from the
 * title, so turns stored with older headings read the same way.
 */
export function sectionLabel(section: Pick<ContextSection, 'title'> & Partial<Pick<ContextSection, 'id'>>): { label: string; note: string } {
  // The prompt calls it "Imported knowledge", which reads as what was imported; it is the rule for reading it, sent even when nothing is.
  if (section.id === 'knowledge-rule') return { label: 'Rules for campaign notes', note: '' };
  const parts = /^(.*?)\s+(?:—\s+(.*)|\((.*)\))$/s.exec(section.title);
  const head = parts ? parts[1]! : section.title;
  const note = parts ? (parts[2] ?? parts[3]!) : '';
  const sentence = (text: string) => (text === text.toUpperCase() ? text.toLowerCase() : text);
  const label = sentence(head);
  return { label: `${label.charAt(0).toUpperCase()}${label.slice(1)}`, note: sentence(note) };
}

const BAR_CELLS = 24;

/** The bar in text, for the report: █ used, ▒ left out, ░ room left in the budget (each on its own scale). */
export function textBar(bar: BudgetBar): string {
  const cells = (tokens: number) => Math.round((BAR_CELLS * tokens) / bar.scale);
  const used = Math.min(BAR_CELLS, cells(bar.used));
  const left = Math.min(BAR_CELLS - used, cells(bar.segments.filter((s) => s.kind === 'left-out').reduce((n, s) => n + s.tokens, 0)));
  return `${'█'.repeat(used)}${'▒'.repeat(left)}${'░'.repeat(BAR_CELLS - used - left)}`;
}

/** Every section's bar, one line each, with its label, cost against its budget and what it left out. */
export function renderBudgetBars(described: readonly DescribedSection[]): string {
  const width = Math.max(...described.map((d) => sectionLabel(d.section).label.length));
  return described
    .map((d) => {
      const bar = budgetBar(d);
      const figures = bar.budget === null ? `${bar.used} · required` : `${bar.used} / ${bar.budget}${bar.used > bar.budget ? ' · over budget' : ''}`;
      const left = d.leftOut.length > 0 ? ` · ${d.leftOut.length} left out` : '';
      return `${sectionLabel(d.section).label.padEnd(width)}  ${textBar(bar)}  ${figures}${left}`;
    })
    .join('\n');
}

/** Each section with its items and left-out items resolved against the retrieval record (of a context just assembled or frozen with a turn). */
export function describeContext(context: Pick<AssembledContext, 'sections' | 'retrieval'>, nameOf: (id: string) => string = (id) => id): DescribedSection[] {
  const candidates = new Map(context.retrieval.candidates.map((c) => [c.passageId, c]));
  const describe = (id: string, reason?: string): ContextItem => {
    const candidate = candidates.get(id);
    if (!candidate) return { id, title: nameOf(id), detail: reason ?? '', tokens: null };
    // A file's first heading usually repeats its title: "Sister Mara", not "Sister Mara › Sister Mara".
    const headings = candidate.headingPath[0] === candidate.sourceTitle ? candidate.headingPath.slice(1) : candidate.headingPath;
    const trail = headings.length > 0 ? ` › ${headings.join(' › ')}` : '';
    return {
      id,
      title: `${candidate.sourceTitle}${trail}`,
      detail: `${candidate.class} · ${candidate.sourcePath} · ${reason ?? candidate.reason}`,
      tokens: candidate.tokenCount,
      at: { path: candidate.sourcePath, line: candidate.startLine },
    };
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

/** How research ran, in the status bar's few words. */
export const RESEARCH_MODE: Record<ResearchRecord['ran'], string> = { native: 'tools', json: 'JSON fallback', lexical: 'lexical' };

/** One line a writer reads after a turn: how research ran, what it looked for, kept and was refused. */
export function researchHeadline(record: ResearchRecord): string {
  const queries = record.steps.filter((s) => s.tool === 'search' && s.outcome === 'answered').map((s) => queryOf(s.arguments));
  const refusedCalls = record.steps.filter((s) => s.outcome === 'refused').length;
  const parts = [
    `research: ${RAN_WORDS[record.ran]}`,
    ...(queries.length > 0 ? [`searched ${queries.map((q) => `“${q}”`).join(', ')}`] : []),
    ...(record.ran === 'lexical' ? [] : [`kept ${record.kept.length}`]),
    ...(record.finished === false ? ['did not finish'] : []),
    ...(refusedCalls + record.refused.length > 0 ? [`refused ${refusedCalls + record.refused.length}`] : []),
    ...(record.limits.length > 0 ? [`stopped at ${record.limits.join(', ')}`] : []),
  ];
  return parts.join(' · ');
}

/**
 * A research step as a writer reads it: what the model searched for, read or kept, by the passages' names.
 * A call the runtime could not read is shown as the model wrote it, since that is what went wrong.
 */
export function researchStepWords(step: Pick<ResearchStep, 'tool' | 'arguments'>, name: (id: string) => string): string {
  let args: { query?: unknown; class?: unknown; id?: unknown; keep?: unknown } | undefined;
  try {
    const parsed: unknown = JSON.parse(step.arguments || '{}');
    if (parsed && typeof parsed === 'object') args = parsed as typeof args;
  } catch {
    // Broken or cut arguments: shown as written below.
  }
  if (step.tool === 'search' && typeof args?.query === 'string') return `searched “${queryOf(step.arguments)}”${typeof args.class === 'string' ? ` in ${args.class}` : ''}`;
  if (step.tool === 'read' && typeof args?.id === 'string') return `read ${name(args.id)}`;
  if (step.tool === 'finish' && Array.isArray(args?.keep)) {
    const ids = args.keep.map((k: unknown) => (typeof k === 'string' ? k : typeof (k as { id?: unknown })?.id === 'string' ? (k as { id: string }).id : null)).filter((id): id is string => id !== null);
    return ids.length === 0 ? 'finished, keeping nothing' : `finished, keeping ${ids.map(name).join('; ')}`;
  }
  return `called ${step.tool} with ${oneLine(step.arguments, 80) || 'nothing'}`;
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
  // Passages by the names a writer reads; an id the model made up has no name and is shown as it wrote it.
  const name = (id: string) => record.names?.[id] ?? id;
  const lines = [
    researchHeadline(record),
    `  why: ${record.reason}`,
    ...record.steps.map((s) => `  ${s.round}. ${researchStepWords(s, name)} → ${s.outcome === 'refused' ? 'REFUSED: ' : ''}${s.said}${s.shown.length > 0 ? ` [${s.shown.map(name).join('; ')}]` : ''}`),
    ...record.kept.map((k) => `  kept ${name(k.id)}${k.reason ? `: ${k.reason}` : ''}`),
    ...record.refused.map((r) => `  refused ${name(r.id)}: ${r.reason}`),
    // Today's selection asked no model: its rounds, tokens and times are all nothing.
    ...(record.rounds === 0 ? [] : [`  ${plural(record.rounds, 'round')}, ${record.resultTokens} tokens of results sent to the model, ${record.modelMs} ms model, ${record.runtimeMs} ms runtime`]),
  ];
  return lines;
}

/** One line per section: where it sits, what it cost against its budget, how much was left out. */
export function renderContextSummary(context: AssembledContext): string {
  const width = Math.max(...context.sections.map((s) => sectionLabel(s).label.length));
  const lines = (stable: boolean) =>
    context.sections
      .filter((s) => s.stable === stable)
      .map((s) => {
        const budget = s.budget === null ? '' : ` / ${s.budget}`;
        const left = s.leftOut.length > 0 ? `, ${s.leftOut.length} left out` : '';
        return `    ${sectionLabel(s).label.padEnd(width)} ${String(s.tokens).padStart(5)}${budget} tokens${left}`;
      });
  return [
    `Context: ${context.budget.used} of ${context.budget.total} tokens (model context ${context.budget.contextLength}, ${context.budget.replyReserve} kept for the reply)`,
    '  Sent the same every turn:',
    ...lines(true),
    '  Written for this turn:',
    ...lines(false),
    ...(context.retrieval.worldInfo ? [`  ${worldInfoLines(context.retrieval.worldInfo)[0]}`] : []),
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

/** Where the report's passage links lead: the campaign's folder, and the folder a link starting with "/" is read from. */
export interface ReportLinks {
  campaignRoot: string;
  linkRoot: string;
}

/**
 * A link that opens a passage's file at its line in the markdown preview. The preview disables command
 * links, and reads a path starting with "/" from the first workspace folder when the document (this
 * report has no file) is in none; "#L12" is the line it opens at.
 */
function passageHref(links: ReportLinks, at: { path: string; line: number | undefined }): string {
  const file = path.join(links.campaignRoot, ...at.path.split('/'));
  const fromRoot = path.relative(links.linkRoot, file).split(path.sep).map(encodeURIComponent).join('/');
  return `</${fromRoot}${at.line ? `#L${at.line}` : ''}>`;
}

/**
 * The whole context as a markdown document: the summary, then every section in prompt order with its
 * tokens and budget, the passages it carries, what it left out and why, and the exact text it sends.
 */
export function renderContextMarkdown(context: AssembledContext, heading: ContextReportHeading, nameOf?: (id: string) => string, links?: ReportLinks): string {
  const described = describeContext(context, nameOf);
  // A passage's name is the link to it, when the report says where links lead; anything else is named only.
  const named = (item: Pick<ContextItem, 'title' | 'at'>) => (item.at && links ? `**[${inline(item.title)}](${passageHref(links, item.at)})**` : `**${inline(item.title)}**`);
  const out: string[] = [
    `# Context preview: ${inline(heading.action || '(continue)')}`,
    '',
    `Campaign **${inline(heading.campaignTitle)}**, adventure **${inline(heading.adventureTitle)}**. ` +
      'Nothing was sent to a model: this is what the next turn would send, assembled the same way.',
    '',
    fenced(renderContextSummary(context)),
    '',
    'Budget by section (█ used, ▒ left out, ░ room left; each bar on its own scale):',
    '',
    fenced(renderBudgetBars(described)),
    '',
    // One line in quotes: the query joins the action and recent narration with line breaks, which a JSON string would show as a literal \n.
    `Retrieval searched “${inline(context.retrieval.queryText.replace(/\s+/g, ' ').trim())}” (terms: ${inline(context.retrieval.terms.join(', ') || 'none')}); ` +
      `semantic: ${inline(context.retrieval.semantic.reason)}.`,
  ];
  if (context.research) out.push('', '## Research', '', fenced(researchLines(context.research).join('\n')));
  for (const [position, { section, items, leftOut }] of described.entries()) {
    const budget = section.budget === null ? 'required' : `budget ${section.budget}`;
    const { label, note } = sectionLabel(section);
    out.push('', `## ${position + 1}. ${inline(label)}${note ? ` (${inline(note)})` : ''} — ${section.tokens} tokens (${budget})`, '');
    out.push(section.stable ? 'Sent the same every turn, in the system message.' : 'Written for this turn.', '');
    if (section.id === 'history') {
      // Turns are named by the story text below, not by their ids, which mean nothing to a writer.
      if (items.length > 0) out.push(`Uses: ${items.length === 1 ? 'the latest turn' : `the ${items.length} latest turns`}, as sent below.`, '');
      if (leftOut.length > 0) out.push(`Left out: ${leftOut.length === 1 ? '1 older turn' : `${leftOut.length} older turns`} — ${inline(leftOut[0]!.detail)}.`, '');
    } else {
      if (items.length > 0) {
        out.push('Uses:', '', ...items.map((item) => `- ${named(item)}${item.detail ? ` — ${inline(item.detail)}` : ''}`), '');
      }
      if (leftOut.length > 0) {
        out.push('Left out:', '', ...leftOut.map((item) => `- ${named(item)} — ${inline(item.detail)}`), '');
      }
    }
    if (section.worldInfo) {
      const entry = (id: string) => {
        const candidate = context.retrieval.candidates.find((c) => c.passageId === id);
        return candidate ? named({ title: candidate.sourceTitle, at: { path: candidate.sourcePath, line: candidate.startLine } }) : named({ title: id });
      };
      out.push('SillyTavern World Info placed here, where its position says:', '', ...section.worldInfo.map((w) => `- ${entry(w.id)} — ${inline(w.where)}`), '');
    }
    if (/^\\#/m.test(section.text)) out.push('A line of this text that starts with `#` is sent as `\\#`: plain text, so it cannot open a section of the prompt.', '');
    out.push(section.text.trim() === '' ? '*(sends nothing)*' : fenced(section.text));
  }
  const unused = context.retrieval.candidates.filter((c) => c.outcome !== 'selected');
  out.push('', `## Retrieval decisions (${context.retrieval.candidates.length} candidates, ${unused.length} not used)`, '');
  if (context.retrieval.abstention) out.push(`Nothing retrieved: ${inline(context.retrieval.abstention)}.`, '');
  out.push(context.retrieval.candidates.length === 0 ? '*(no candidate passages: retrieval found nothing that fits)*' : fenced(context.retrieval.candidates.map(decisionLine).join('\n')));
  if (context.retrieval.worldInfo) {
    const [head, ...lines] = worldInfoLines(context.retrieval.worldInfo);
    out.push('', '## SillyTavern World Info', '', `${inline(head!)}. An entry it inserts goes where its position puts it (before the player character, after the plot essentials, around the author's note, at a depth among the recent turns), framed by its class.`, '', fenced(lines.join('\n')));
  }
  return `${out.join('\n')}\n`;
}
