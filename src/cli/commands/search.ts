import readline from 'node:readline';
import { searchKnowledge } from '../../knowledge/retrieval';
import type { RetrievalStage } from '../../knowledge/retrieval';
import { EXIT, UsageError, emit, stringOption, type Command } from '../command';
import { IndexMissingError, KNOWLEDGE_READ_OPTIONS, openCampaignIndex, semanticFromArgs } from '../knowledgeAccess';
import { excerptAround, locate } from '../../knowledge/retrieval';
import { MODEL_SERVER_USAGE } from '../modelArgs';
import { oneLine } from '../terminalText';

export function stageOption(value: string | undefined): RetrievalStage {
  if (value === undefined || value === 'narrator' || value === 'player') return value ?? 'narrator';
  throw new UsageError(`--stage must be 'narrator' or 'player', not '${value}'`);
}

export const searchCommand: Command = {
  usage:
    'storyteller search "<query>" | --stdin [--campaign <dir>] [--limit N] [--stage narrator|player] [--embed-model M] ' +
    `${MODEL_SERVER_USAGE} [--lexical-only] [--json]\n` +
    '  --stdin: one query per line on standard input, one JSON line out per query (start-up paid once)',
  options: { ...KNOWLEDGE_READ_OPTIONS, limit: { type: 'string' }, stage: { type: 'string' }, stdin: { type: 'boolean', default: false } },
  async run(args, io) {
    const text = args.positionals.join(' ').trim();
    const batch = args.values.stdin === true;
    if (batch && text) throw new UsageError('give the query either as text or on standard input with --stdin, not both');
    if (batch && !io.stdin) throw new UsageError('--stdin needs standard input');
    if (!batch && !text) throw new UsageError('give the text to search for');
    const limitText = stringOption(args, 'limit');
    const limit = limitText === undefined ? 10 : Number(limitText);
    if (!Number.isInteger(limit) || limit < 1) throw new UsageError(`--limit must be a positive whole number, not '${limitText}'`);
    const stage = stageOption(stringOption(args, 'stage'));
    let opened;
    try {
      opened = await openCampaignIndex('search', args, io);
    } catch (error) {
      if (!(error instanceof IndexMissingError)) throw error;
      io.stderr.write(`storyteller search: ${error.message}\n`);
      return EXIT.failure;
    }
    const { campaign, store } = opened;
    try {
      if (batch) {
        const semantic = semanticFromArgs(args, io, store);
        for await (const line of readline.createInterface({ input: io.stdin!, crlfDelay: Infinity })) {
          const query = line.trim();
          if (!query) continue;
          const { hits } = await searchKnowledge(store, query, { stage, limit, semantic });
          // Compact: one line per query, the fields a script reads; the full record stays with single search --json.
          const found = hits.map((h) => ({ rank: h.rank, path: h.sourcePath, startLine: h.startLine, endLine: h.endLine, headingPath: h.headingPath, class: h.class, tokens: h.tokenCount, score: h.score, reason: h.reason }));
          io.stdout.write(`${JSON.stringify({ campaign: campaign.id, query, hits: found })}\n`);
        }
        return EXIT.ok;
      }
      const result = await searchKnowledge(store, text, { stage, limit, semantic: semanticFromArgs(args, io, store) });
      emit(io, args, { campaign: campaign.id, query: text, ...result }, () => {
        const semantic = result.record.semantic.used ? `semantic: ${result.record.semantic.reason}` : `lexical only (${result.record.semantic.reason})`;
        if (result.hits.length === 0) {
          const why = result.record.abstention ? ` Why: ${result.record.abstention}.` : '';
          return `Nothing in '${campaign.title}' is relevant to "${shownQuery(text)}".${why} ${semantic}\n`;
        }
        const lines = [`${result.hits.length} result(s) for "${shownQuery(text)}" in '${campaign.title}' — ${semantic}`, ''];
        for (const hit of result.hits) {
          const decision = result.record.candidates.find((c) => c.passageId === hit.passageId)!;
          lines.push(`${hit.rank}. ${oneLine(locate(hit))}  [${hit.class}${hit.hidden ? ', hidden' : ''}] score ${hit.score?.toFixed(3)}`);
          lines.push(`   ${decision.reason}`);
          lines.push(`   ${excerptAround(hit.text, text)}`);
        }
        return lines.join('\n');
      });
      return EXIT.ok;
    } finally {
      await opened.session.close();
    }
  },
};

/** A long query (a pasted scene) is echoed by its opening words; the results follow it. */
function shownQuery(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 160 ? `${flat.slice(0, 160)}…` : flat;
}
