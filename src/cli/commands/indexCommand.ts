import { describeClassOrigin } from '../../knowledge/campaign';
import type { ImportReport } from '../../knowledge/indexing';
import { describeSemanticIndex } from '../../knowledge/retrieval';
import { defaultSettings } from '../../session';
import { EXIT, emit, stringOption, type Command } from '../command';
import { MODEL_SERVER_OPTIONS, MODEL_SERVER_USAGE, backendFromArgs } from '../modelArgs';
import { campaignFromArgs, location, parserFromArgs, WORKERS_OPTION } from '../knowledgeArgs';
import { openIndexingSession } from '../knowledgeAccess';

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

export const indexCommand: Command = {
  usage: `storyteller index [campaign-dir] [--rebuild] [--workers 0|1|2] [--embed-model M ${MODEL_SERVER_USAGE}] [--json]`,
  options: { rebuild: { type: 'boolean', default: false }, 'embed-model': { type: 'string' }, ...MODEL_SERVER_OPTIONS, ...WORKERS_OPTION },
  async run(args, io) {
    const campaign = campaignFromArgs(args, io.cwd, args.positionals[0]);
    // The server is named before any work, so a bad flag costs nothing.
    const backend = backendFromArgs(args, io);
    const parser = parserFromArgs(args);
    // Embeds and calibrates after the lexical import when --embed-model names a model, on the server --provider/--base-url name.
    const embeddingModel = stringOption(args, 'embed-model') ?? '';
    const settings = defaultSettings({
      embeddingModel,
      narratorBackend: backend,
      embeddingBackend: backend,
      ...(backend.provider === 'ollama' ? { ollamaHost: backend.baseUrl } : {}),
    });
    const session = openIndexingSession('index', campaign.root, { parser, settings }, io);
    try {
      const damaged = session.store.damagedIndexMovedTo;
      const report = args.values.rebuild === true ? await session.rebuild() : await session.reindex();
      await session.indexing.idle();
      if (!report) {
        const state = session.indexing.state;
        io.stderr.write(`storyteller index: ${state.kind === 'error' ? state.message : 'the import did not finish'}\n`);
        return EXIT.failure;
      }
      const semantic = embeddingModel ? (session.lastSemantic ?? null) : null;
      // Listing every source is for --json only: at 10,000 files it costs more than an unchanged import.
      const sources = args.json ? session.store.listSources() : [];
      emit(
        io,
        args,
        {
          ...report,
          ...(damaged ? { damagedIndexMovedTo: damaged } : {}),
          semantic,
          sources: sources.map((s) => ({ id: s.id, path: s.path, class: s.class, classOrigin: describeClassOrigin(s.classOrigin), lexicalState: s.lexicalState })),
        },
        () => [summary(report, `${campaign.title} (${campaign.id})`), ...(semantic ? [describeSemanticIndex(semantic)] : [])].join('\n'),
      );
      return report.counts.error > 0 ? EXIT.findings : EXIT.ok;
    } finally {
      await session.close();
      await parser.close();
    }
  },
};
