import path from 'node:path';
import { CampaignError } from '../../knowledge/campaign';
import { campaignFileFinding, lintCampaign, summarizeFindings, type LintReport } from '../../knowledge/lint';
import { EXIT, emit, type Command } from '../command';
import { campaignFromArgs, location, parserFromArgs, WORKERS_OPTION } from '../knowledgeArgs';

function human(report: LintReport, title: string): string {
  const lines = report.findings
    .filter((f) => f.severity !== 'info')
    .map((f) => `${location(f.path, f.line)}  ${f.severity}  ${f.message}  (${f.code})`);
  const unclassified = report.infos ? `; ${report.infos === 1 ? '1 file uses' : `${report.infos} files use`} the campaign's default class (--json lists them)` : '';
  lines.push(`${title}: ${report.errors} error${report.errors === 1 ? '' : 's'}, ${report.warnings} warning${report.warnings === 1 ? '' : 's'}${unclassified}`);
  return lines.join('\n');
}

export const lintCommand: Command = {
  name: 'lint',
  summary: 'Check a campaign: front matter, encoding, binary and oversize files, duplicates, unclassified files (exit 1 on errors)',
  usage: 'storyteller lint [campaign-dir] [--workers 0|1|2] [--json]',
  options: { ...WORKERS_OPTION },
  async run(args, io) {
    let campaign;
    try {
      campaign = campaignFromArgs(args, io.cwd, args.positionals[0]);
    } catch (error) {
      if (!(error instanceof CampaignError)) throw error;
      const root = path.dirname(error.file);
      const report = summarizeFindings('', [campaignFileFinding(error, root)]);
      emit(io, args, report, () => human(report, path.relative(io.cwd, root) || '.'));
      return EXIT.findings;
    }
    const parser = parserFromArgs(args);
    try {
      // A throwaway index: lint reads the campaign and writes nothing into it.
      const report = await lintCampaign(campaign, { parser });
      emit(io, args, report, () => human(report, `${campaign.title} (${campaign.id})`));
      return report.errors > 0 ? EXIT.findings : EXIT.ok;
    } finally {
      await parser.close();
    }
  },
};
