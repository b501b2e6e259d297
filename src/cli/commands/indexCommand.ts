import { describeClassOrigin } from '../../knowledge/classify';
import type { ImportReport } from '../../knowledge/importer';
import { rebuildIndex } from '../../knowledge/operations';
import { importCampaign } from '../../knowledge/importer';
import { CalibrationError, calibrateSemanticFloor, type CalibrationReport } from '../../knowledge/calibration';
import { OllamaEmbedder, embedPassages, type EmbedReport } from '../../knowledge/embeddings';
import { resolveOllamaHost } from '../../knowledge/ollamaHost';
import { KnowledgeStore } from '../../knowledge/store';
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

interface SemanticOutcome {
  model: string;
  embed: EmbedReport | null;
  calibration: CalibrationReport | null;
  /** Why the semantic half did not finish; the lexical index is complete either way. */
  problem: string | null;
}

/** Embeds and calibrates after the lexical import; its failure is reported, never fatal. */
async function indexSemantic(store: KnowledgeStore, args: ParsedArgs): Promise<SemanticOutcome | null> {
  const model = stringOption(args, 'embed-model');
  if (!model) return null;
  const outcome: SemanticOutcome = { model, embed: null, calibration: null, problem: null };
  try {
    outcome.embed = await embedPassages(store, new OllamaEmbedder(resolveOllamaHost(stringOption(args, 'ollama-host')), model));
    outcome.calibration = calibrateSemanticFloor(store, model);
  } catch (error) {
    if (!(error instanceof CalibrationError) && !(error instanceof Error)) throw error;
    outcome.problem = error.message;
  }
  return outcome;
}

function semanticSummary(outcome: SemanticOutcome): string {
  const parts = [`semantic (${outcome.model}):`];
  if (outcome.embed) parts.push(`${outcome.embed.embedded} embedded, ${outcome.embed.reused} reused;`);
  if (outcome.calibration) parts.push(`floor ${outcome.calibration.floor.toFixed(3)} from ${outcome.calibration.samplePairs} unrelated pairs`);
  if (outcome.problem) parts.push(`not available — ${outcome.problem}; lexical search works`);
  return parts.join(' ');
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
      const options = { parser };
      const report = args.values.rebuild === true ? await rebuildIndex(campaign, store, options) : await importCampaign(campaign, store, options);
      const semantic = await indexSemantic(store, args);
      const sources = store.listSources();
      emit(
        io,
        args,
        {
          ...report,
          semantic,
          sources: sources.map((s) => ({ id: s.id, path: s.path, class: s.class, classOrigin: describeClassOrigin(s.classOrigin), lexicalState: s.lexicalState })),
        },
        () => [summary(report, `${campaign.title} (${campaign.id})`), ...(semantic ? [semanticSummary(semantic)] : [])].join('\n'),
      );
      return report.counts.error > 0 ? EXIT.findings : EXIT.ok;
    } finally {
      store.close();
      await parser.close();
    }
  },
};
