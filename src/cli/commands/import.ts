import path from 'node:path';
import { CampaignError, findCampaignRoot } from '../../knowledge/campaign';
import { indexFile, type FileOutcome } from '../../knowledge/indexing';
import { LorebookError } from '../../knowledge/interchange';
import { DEFAULT_LORE_FOLDER, importLorebookFile, lorebookImportReport, type LorebookImportResult } from '../../knowledge/interchange';
import { BundleError, bundleImportReport, importCampaignBundle } from '../../knowledge/interchange';
import { KNOWLEDGE_CLASSES, type KnowledgeClass } from '../../knowledge/campaign';
import { EXIT, UsageError, emit, progressNotice, stringOption, type CliIo, type Command, type ParsedArgs } from '../command';
import { openCliSession } from '../knowledgeAccess';

/** Resolves `--campaign` (or the campaign around the working folder). */
export function campaignRootOption(value: string | undefined, cwd: string): string {
  if (value !== undefined) return path.resolve(cwd, value);
  const found = findCampaignRoot(cwd);
  if (!found) throw new UsageError('not inside a campaign (no campaign.yaml here or above); pass --campaign <dir>');
  return found;
}

/** A refused command: with --json the reason is the JSON document, otherwise it goes to stderr. Nothing was written. */
export function refuse(io: CliIo, args: ParsedArgs, command: string, reason: string): number {
  if (args.json) io.stdout.write(`${JSON.stringify({ ok: false, error: reason }, null, 2)}\n`);
  else io.stderr.write(`storyteller ${command}: ${reason}\n`);
  return EXIT.failure;
}

/** Indexes the new files at once, so they are searchable from the shell; the extension's watcher would do the same. */
async function indexLoreFiles(campaignRoot: string, paths: readonly string[], progress: (what: string, done: number, total: number) => void): Promise<FileOutcome[]> {
  const session = openCliSession(campaignRoot);
  try {
    const outcomes: FileOutcome[] = [];
    for (const [index, relPath] of paths.entries()) {
      outcomes.push(...(await indexFile(session.campaign, session.store, relPath)).files);
      progress('indexing', index + 1, paths.length);
    }
    return outcomes;
  } finally {
    await session.close();
  }
}

function describeLorebookImport(result: LorebookImportResult, cwd: string, indexed: readonly FileOutcome[]): string {
  const problems = indexed.flatMap((o) => o.issues.map((i) => `  ${o.path}${i.line ? `:${i.line}` : ''}: ${i.severity}: ${i.message}`));
  return [
    ...lorebookImportReport(result, path.relative(cwd, result.file) || result.file),
    `Indexed ${indexed.filter((o) => o.outcome === 'indexed').length} of ${indexed.length} new files.`,
    ...problems,
  ].join('\n');
}

export const importLorebookCommand: Command = {
  usage: `storyteller import-lorebook <file> --class canon|reference|inspiration [--campaign <dir>] [--folder ${DEFAULT_LORE_FOLDER}] [--json]`,
  options: {
    campaign: { type: 'string' },
    class: { type: 'string' },
    folder: { type: 'string' },
  },
  async run(args, io) {
    const [file, ...extra] = args.positionals;
    if (!file || extra.length > 0) throw new UsageError('give exactly one lorebook file');
    const cls = stringOption(args, 'class');
    if (!cls || !(KNOWLEDGE_CLASSES as readonly string[]).includes(cls)) {
      throw new UsageError(`--class is required: one of ${KNOWLEDGE_CLASSES.join(', ')} (what these entries are to your campaign)`);
    }
    const campaignRoot = campaignRootOption(stringOption(args, 'campaign'), io.cwd);
    try {
      const folder = stringOption(args, 'folder');
      const progress = progressNotice('import-lorebook', io);
      const result = importLorebookFile(path.resolve(io.cwd, file), {
        campaignRoot,
        class: cls as KnowledgeClass,
        ...(folder !== undefined ? { folder } : {}),
        onProgress: (done, total) => progress('writing', done, total),
      });
      const indexed = await indexLoreFiles(campaignRoot, result.written.map((w) => w.path), progress);
      emit(io, args, { ...result, indexed }, () => describeLorebookImport(result, io.cwd, indexed));
      return EXIT.ok;
    } catch (error) {
      if (error instanceof LorebookError || error instanceof CampaignError) {
        return refuse(io, args, 'import-lorebook', error.message);
      }
      throw error;
    }
  },
};

export const importCommand: Command = {
  usage: 'storyteller import <bundle> --into <new-dir> [--json]',
  options: { into: { type: 'string' } },
  async run(args, io) {
    const [bundle, ...extra] = args.positionals;
    if (!bundle || extra.length > 0) throw new UsageError('give exactly one bundle file');
    const into = stringOption(args, 'into');
    if (!into) throw new UsageError('--into <dir> is required: a new or empty folder for the campaign');
    try {
      const progress = progressNotice('import', io);
      const summary = await importCampaignBundle(path.resolve(io.cwd, bundle), path.resolve(io.cwd, into), {
        onProgress: ({ step, done, total }) => progress(step, done, total),
      });
      emit(io, args, summary, () => bundleImportReport(summary, path.relative(io.cwd, summary.target) || summary.target).join('\n'));
      // A member left out is a finding: the writer should know the bundle held more than a campaign.
      return summary.notRestored.length > 0 ? EXIT.findings : EXIT.ok;
    } catch (error) {
      if (error instanceof BundleError || error instanceof CampaignError) return refuse(io, args, 'import', error.message);
      throw error;
    }
  },
};
