import { describeClassOrigin } from '../../knowledge/campaign';
import type { ImportReport } from '../../knowledge/indexing';
import { rebuildIndex } from '../../knowledge/indexing';
import { importCampaign } from '../../knowledge/indexing';
import { describeSemanticIndex, indexSemantic, type SemanticIndexReport } from '../../knowledge/retrieval';
import { OllamaEmbedder } from '../../knowledge/retrieval';
import { resolveOllamaHost } from '../../knowledge/models';
import { KnowledgeStore } from '../../knowledge/indexing';
import { EXIT, emit, stringOption, type Command, type ParsedArgs } from '../command';
import { campaignFromArgs, location, parserFromArgs, WORKERS_OPTION } from '../knowledgeArgs';

function summary(report: ImportReport, title: string): string {
  const c = report.counts;
  const lines = [
    `${title}: ${report.files.length} files — ${c.indexed} indexed, ${c.unchanged} unchanged, ${c.reclassified} reclassified, ` +
      `${c.duplicate} duplicate, ${c.error} with errors, ${c.removed + c.vanished} removed; ` +
      `${report.passages} passages written in ${(report.durationMs / 1000).toFixed(1)} s`,
  ];
  for (const file of report.files) {
    for (const issue of file.issues) {
      if (file.outcome === 'unchanged') continue; // reported when the file changed; `lint` lists them all
      lines.push(`  ${issue.severity.padEnd(7)}  ${location(file.path, issue.line)}  ${issue.message}`);
    }
  }
  return lines.join('\n');
}

/** Embeds and calibrates after the lexical import when --embed-model names a model. */
function semanticFromArgs(store: KnowledgeStore, args: ParsedArgs): Promise<SemanticIndexReport> | null {
  const model = stringOption(args, 'embed-model');
  return model ? indexSemantic(store, new OllamaEmbedder(resolveOllamaHost(stringOption(args, 'ollama-host')), model)) : null;
}

export const indexCommand: Command = {
  name: 'index',
  summary: "Import a campaign's files into its search index (only new and changed files are parsed)",
  usage: 'storyteller index [campaign-dir] [--rebuild] [--workers 0|1|2] [--embed-model M [--ollama-host H]] [--json]',
  options: { rebuild: { type: 'boolean', default: false }, 'embed-model': { type: 'string' }, 'ollama-host': { type: 'string' }, ...WORKERS_OPTION },
  async run(args, io) {
    const campaign = campaignFromArgs(args, io.cwd, args.positionals[0]);
    const parser = parserFromArgs(args);
    const store = KnowledgeStore.open(campaign);
    try {
      const options = {
        parser,
        onLockWait: (pid: number) => io.stderr.write(`storyteller index: another index run (process ${pid}) is updating this campaign's index; waiting for it to finish…\n`),
      };
      const report = args.values.rebuild === true ? await rebuildIndex(campaign, store, options) : await importCampaign(campaign, store, options);
      const semantic = await semanticFromArgs(store, args);
      const sources = store.listSources();
      emit(
        io,
        args,
        {
          ...report,
          semantic,
          sources: sources.map((s) => ({ id: s.id, path: s.path, class: s.class, classOrigin: describeClassOrigin(s.classOrigin), lexicalState: s.lexicalState })),
        },
        () => [summary(report, `${campaign.title} (${campaign.id})`), ...(semantic ? [describeSemanticIndex(semantic)] : [])].join('\n'),
      );
      return report.counts.error > 0 ? EXIT.findings : EXIT.ok;
    } finally {
      store.close();
      await parser.close();
    }
  },
};
