import path from 'node:path';
import { CampaignError } from '../../knowledge/campaign';
import { LorebookError } from '../../knowledge/interchange';
import { exportCampaignWorldInfo, worldInfoExportReport } from '../../knowledge/interchange';
import { BUNDLE_EXTENSION, BundleError, describePlayData, exportCampaignBundle } from '../../knowledge/interchange';
import { EXIT, UsageError, emit, stringOption, type CliIo, type Command } from '../command';
import { campaignRootOption, refuse } from './import';
import { buildIfEmpty, openCliSession } from '../knowledgeAccess';
import type { CampaignSession } from '../../session';

function campaignArgument(positionals: string[], cwd: string): string {
  if (positionals.length > 1) throw new UsageError('give at most one campaign folder');
  return campaignRootOption(positionals[0], cwd);
}

/**
 * Runs an export over the campaign's session. An index that holds something is only read, never re-imported;
 * one that holds nothing (never built, or damaged and moved aside) is built first, so the export describes
 * the campaign's sources.
 */
async function withExportSession<T>(command: string, root: string, io: CliIo, run: (session: CampaignSession) => T): Promise<T> {
  const session = openCliSession(root);
  try {
    await buildIfEmpty(command, session, io);
    return run(session);
  } finally {
    await session.close();
  }
}

export const exportCommand: Command = {
  usage: `storyteller export [campaign-dir] --out <file${BUNDLE_EXTENSION}> [--embeddings] [--force] [--json]`,
  options: {
    out: { type: 'string' },
    embeddings: { type: 'boolean', default: false },
    force: { type: 'boolean', default: false },
  },
  async run(args, io) {
    const out = stringOption(args, 'out');
    if (!out) throw new UsageError(`--out is required (for example campaign${BUNDLE_EXTENSION})`);
    const root = campaignArgument(args.positionals, io.cwd);
    try {
      const summary = await withExportSession('export', root, io, (session) =>
        exportCampaignBundle(session.exportSource, path.resolve(io.cwd, out), {
          embeddings: args.values.embeddings === true,
          force: args.values.force === true,
        }),
      );
      emit(io, args, summary, () =>
        [
          `Exported ${summary.files} files (${summary.sources} indexed sources) to ${path.relative(io.cwd, summary.file) || summary.file}.`,
          `Play data: ${describePlayData(summary.playRows)}.`,
          args.values.embeddings === true ? `Embeddings: ${summary.embeddings} vectors with their model metadata.` : 'Embeddings left out (rebuilt after import).',
          ...summary.skipped.map((s) => `Left out: ${s.path}: ${s.reason}`),
        ].join('\n'),
      );
      return EXIT.ok;
    } catch (error) {
      if (error instanceof BundleError || error instanceof CampaignError) return refuse(io, args, 'export', error.message);
      throw error;
    }
  },
};

export const exportLorebookCommand: Command = {
  usage: 'storyteller export-lorebook [campaign-dir] --out <world.json> [--force] [--json]',
  options: { out: { type: 'string' }, force: { type: 'boolean', default: false } },
  async run(args, io) {
    const out = stringOption(args, 'out');
    if (!out) throw new UsageError('--out is required (for example world.json)');
    const root = campaignArgument(args.positionals, io.cwd);
    try {
      const result = await withExportSession('export-lorebook', root, io, (session) =>
        exportCampaignWorldInfo(session.store, path.resolve(io.cwd, out), { force: args.values.force === true, settled: session.canonFacts().supersededCanon() }));
      emit(io, args, result, () => worldInfoExportReport(result, path.relative(io.cwd, result.file) || result.file).join('\n'));
      return EXIT.ok;
    } catch (error) {
      if (error instanceof LorebookError || error instanceof CampaignError) return refuse(io, args, 'export-lorebook', error.message);
      throw error;
    }
  },
};
