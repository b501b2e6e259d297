import fs from 'node:fs';
import path from 'node:path';
import { CampaignError, type Campaign } from '../../knowledge/campaign';
import { campaignHealth, healthSummary, indexHealth } from '../../knowledge/health';
import type { Parser } from '../../knowledge/indexing';
import { defaultSettings } from '../../session';
import { campaignFileFinding, summarizeFindings, type LintReport } from '../../knowledge/health';
import { DEFAULT_KNOWLEDGE_BUDGETS } from '../../knowledge/retrieval';
import { EXIT, UsageError, emit, stringOption, type CliIo, type Command, type ParsedArgs } from '../command';
import { campaignFromArgs, location, parserFromArgs, WORKERS_OPTION } from '../knowledgeArgs';
import { openIndexingSession } from '../knowledgeAccess';

function human(report: LintReport, title: string): string {
  const lines = report.findings
    .filter((f) => f.severity !== 'info')
    .map((f) => `${location(f.path, f.line)}  ${f.severity}  ${f.message}  (${f.code})`);
  const listed = report.findings.some((f) => f.severity === 'info') ? ' (--json lists the notes)' : '';
  lines.push(`${healthSummary(report, title)}${listed}`);
  return lines.join('\n');
}

function healthArgs(args: ParsedArgs): { embeddingModel: string | null; alwaysIncludeBudget: number; narratorModel: string | undefined } {
  const raw = stringOption(args, 'always-include-budget');
  const budget = raw === undefined ? DEFAULT_KNOWLEDGE_BUDGETS.alwaysInclude : Number(raw);
  if (!Number.isInteger(budget) || budget < 0) throw new UsageError(`--always-include-budget must be a whole number of tokens, not '${raw}'`);
  return { embeddingModel: stringOption(args, 'embed-model') ?? null, alwaysIncludeBudget: budget, narratorModel: stringOption(args, 'model') };
}

/** Health of the campaign's own index, first brought in line with the files (only changed files are parsed); undefined when that failed (said on stderr). */
async function sessionHealth(campaign: Campaign, parser: Parser, health: ReturnType<typeof healthArgs>, io: CliIo): Promise<LintReport | undefined> {
  // The narrator model's calibrated token unit prices always-include canon as its prompts do.
  const settings = defaultSettings(health.narratorModel ? { narratorModel: health.narratorModel } : {});
  const session = openIndexingSession('lint', campaign.root, { parser, settings }, io);
  try {
    await session.reindex();
    await session.indexing.idle();
    const state = session.indexing.state;
    if (state.kind === 'error') {
      io.stderr.write(`storyteller lint: ${state.message}\n`);
      return undefined;
    }
    const play = session.playIfAny;
    const options = { alwaysIncludeBudget: health.alwaysIncludeBudget, embeddingModel: health.embeddingModel, measure: session.promptMeasure() };
    return await indexHealth(session.campaign, session.store, { ...options, ...(play ? { playDb: play.db } : {}) });
  } finally {
    await session.close();
  }
}

export const lintCommand: Command = {
  usage: 'storyteller lint [campaign-dir] [--workers 0|1|2] [--embed-model M] [--model NARRATOR] [--always-include-budget N] [--json]',
  options: { ...WORKERS_OPTION, 'embed-model': { type: 'string' }, model: { type: 'string' }, 'always-include-budget': { type: 'string' } },
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
    const health = healthArgs(args);
    const parser = parserFromArgs(args);
    try {
      // A campaign with no index (a CI checkout) is checked on a throwaway one: lint writes nothing there.
      // One with an index is checked on it, through its session, as the editor's health check does.
      const report = fs.existsSync(campaign.indexPath)
        ? await sessionHealth(campaign, parser, health, io)
        : await campaignHealth(campaign, { parser, alwaysIncludeBudget: health.alwaysIncludeBudget, embeddingModel: health.embeddingModel });
      if (!report) return EXIT.failure;
      emit(io, args, report, () => human(report, `${campaign.title} (${campaign.id})`));
      return report.errors > 0 ? EXIT.findings : EXIT.ok;
    } finally {
      await parser.close();
    }
  },
};
