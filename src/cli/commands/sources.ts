import { describeClassOrigin, standingFlags } from '../../knowledge/campaign';
import { campaignStatus, sourceStatus } from '../../knowledge/indexing';
import { EXIT, emit, type Command } from '../command';
import { IndexMissingError, openCampaignIndex } from '../knowledgeAccess';
import { oneLine } from '../terminalText';

export const sourcesCommand: Command = {
  usage: 'storyteller sources [campaign-dir] [--json]',
  options: { campaign: { type: 'string' } },
  async run(args, io) {
    let opened;
    try {
      const dir = args.positionals[0];
      opened = await openCampaignIndex('sources', dir ? { ...args, values: { ...args.values, campaign: dir } } : args, io);
    } catch (error) {
      if (!(error instanceof IndexMissingError)) throw error;
      io.stderr.write(`storyteller sources: ${error.message}\n`);
      return EXIT.failure;
    }
    const { campaign, store } = opened;
    try {
      const status = campaignStatus(store);
      const rows = store.listSources().map((source) => ({ ...source, status: sourceStatus(store, source) }));
      emit(io, args, { campaign: { id: campaign.id, title: campaign.title, root: campaign.root }, status, sources: rows }, () => {
        if (rows.length === 0) return `${campaign.title} (${campaign.id}): no sources indexed yet — run 'storyteller index'`;
        const lines = [
          `${campaign.title} (${campaign.id}): ${status.sources} sources, ${status.passages} retrievable passages; ` +
            `lexical ${status.lexical.ready} ready / ${status.lexical.duplicate} duplicate / ${status.lexical.error} error; ` +
            `semantic ${status.semantic.ready} ready / ${status.semantic.pending} pending / ${status.semantic.error} error / ${status.semantic.off} off`,
        ];
        for (const row of rows) {
          const flags = standingFlags(row);
          const problems = row.issues.length ? `  ${row.issues.length} issue${row.issues.length > 1 ? 's' : ''}: ${row.issues[0]!.message}` : '';
          lines.push(
            `  ${row.class.padEnd(11)} ${row.lexicalState.padEnd(9)} ${String(row.status.passages).padStart(4)} passages  ${oneLine(row.path)}` +
              `  [${describeClassOrigin(row.classOrigin)}${flags.length ? `; ${flags.join(', ')}` : ''}]${problems}`,
          );
        }
        return lines.join('\n');
      });
      return EXIT.ok;
    } finally {
      await opened.session.close();
    }
  },
};
