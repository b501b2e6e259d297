import { findSource } from '../../knowledge/indexing';
import { EXIT, UsageError, emit, type Command } from '../command';
import { IndexMissingError, openCampaignIndex } from '../knowledgeAccess';
import { oneLine } from '../terminalText';

export const passagesCommand: Command = {
  usage: 'storyteller passages <source path or id> [--campaign dir] [--json]',
  options: { campaign: { type: 'string' } },
  async run(args, io) {
    const wanted = args.positionals[0];
    if (!wanted) throw new UsageError('name a source: its path (as listed by `storyteller sources`) or its id');
    // A path to the file itself finds its campaign; otherwise the campaign is the one around cwd.
    const looksLikePath = wanted.includes('/') || wanted.includes('\\');
    let opened;
    try {
      opened = await openCampaignIndex('passages', args.values.campaign || !looksLikePath ? args : { ...args, values: { ...args.values, campaign: wanted } }, io);
    } catch (error) {
      if (!(error instanceof IndexMissingError)) throw error;
      io.stderr.write(`storyteller passages: ${error.message}\n`);
      return EXIT.failure;
    }
    const { campaign, store } = opened;
    try {
      const source = findSource(campaign, store, wanted, io.cwd);
      if (!source) {
        io.stderr.write(`storyteller passages: no source '${wanted}' in ${campaign.title} (${campaign.id}); 'storyteller sources' lists them\n`);
        return EXIT.failure;
      }
      const passages = store.listPassages(source.id);
      emit(io, args, { source, passages }, () => {
        const head = `${oneLine(source.path)} (${source.class}, ${source.lexicalState}): ${passages.length} passages`;
        const issues = source.issues.map((i) => `  ${i.severity}: ${i.message}`);
        const bodies = passages.map(
          (p) =>
            `── #${p.index}  lines ${p.startLine}–${p.endLine}  ${p.tokenCount} tokens  ${p.headingPath.join(' › ') || '(no heading)'}\n${p.text}`,
        );
        return [head, ...issues, ...bodies].join('\n');
      });
      return EXIT.ok;
    } finally {
      await opened.session.close();
    }
  },
};
