import path from 'node:path';
import { CAMPAIGN_FILE, CampaignError, type Campaign } from '../campaign';
import { describeClassOrigin } from '../campaign';
import { importCampaign, type ImportOptions } from '../indexing';
import { KnowledgeStore } from '../indexing';
import type { SourceRecord } from '../campaign';

export type FindingSeverity = 'error' | 'warning' | 'info';

/** One problem in a campaign, located so an editor can underline it and CI can print it. */
export interface Finding {
  severity: FindingSeverity;
  code: string;
  message: string;
  /** Campaign-relative POSIX path of the file concerned. */
  path: string;
  /** 1-based line, when the problem has one. */
  line?: number;
  sourceId?: string;
}

/** What a finding producer may look at: the campaign and its freshly synchronized index. */
export interface LintContext {
  campaign: Campaign;
  store: KnowledgeStore;
  sources: readonly SourceRecord[];
}

/**
 * Produces findings about a campaign. Lint is the list of these: other parts of the product (canon
 * conflicts, the health check, the extension's diagnostics) add their own producers rather than a second lint.
 */
export type FindingProducer = (context: LintContext) => Finding[] | Promise<Finding[]>;

/** Every problem recorded on a source while importing it: front matter, encoding, binary, size, duplicates, symlinks. */
export const sourceIssueFindings: FindingProducer = ({ sources }) =>
  sources.flatMap((source) =>
    source.issues.map((issue) => ({
      severity: issue.severity,
      code: issue.code,
      message: issue.message,
      path: source.path,
      sourceId: source.id,
      ...(issue.line !== undefined ? { line: issue.line } : {}),
    })),
  );

/** Files whose class nobody chose: neither front matter nor a folder rule says what they are. */
export const unclassifiedFindings: FindingProducer = ({ sources }) =>
  sources
    .filter((s) => s.classOrigin.kind === 'campaign-default' && s.lexicalState !== 'error')
    .map((s) => ({
      severity: 'info' as const,
      code: 'unclassified',
      message: `no class in front matter or a folder rule: treated as ${s.class} (${describeClassOrigin(s.classOrigin)})`,
      path: s.path,
      sourceId: s.id,
    }));

export const KNOWLEDGE_FINDING_PRODUCERS: readonly FindingProducer[] = [sourceIssueFindings, unclassifiedFindings];

export interface LintReport {
  campaignId: string;
  findings: Finding[];
  errors: number;
  warnings: number;
  infos: number;
}

export interface LintOptions extends ImportOptions {
  /**
   * The index to synchronize and inspect. Without one, lint works on a throwaway in-memory index, so it
   * can run in CI without writing anything into the campaign.
   */
  store?: KnowledgeStore;
  /** Producers to run; defaults to KNOWLEDGE_FINDING_PRODUCERS. Pass `[...KNOWLEDGE_FINDING_PRODUCERS, mine]` to extend. */
  producers?: readonly FindingProducer[];
}

const SEVERITY_ORDER: Record<FindingSeverity, number> = { error: 0, warning: 1, info: 2 };

export function summarizeFindings(campaignId: string, findings: Finding[]): LintReport {
  const sorted = [...findings].sort(
    (a, b) => a.path.localeCompare(b.path) || (a.line ?? 0) - (b.line ?? 0) || SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity],
  );
  return {
    campaignId,
    findings: sorted,
    errors: sorted.filter((f) => f.severity === 'error').length,
    warnings: sorted.filter((f) => f.severity === 'warning').length,
    infos: sorted.filter((f) => f.severity === 'info').length,
  };
}

/** Brings the index up to date with the files, then runs every producer over it. */
export async function lintCampaign(campaign: Campaign, options: LintOptions = {}): Promise<LintReport> {
  const store = options.store ?? KnowledgeStore.inMemory(campaign.id);
  try {
    await importCampaign(campaign, store, options);
    const context: LintContext = { campaign, store, sources: store.listSources() };
    const findings: Finding[] = [];
    for (const produce of options.producers ?? KNOWLEDGE_FINDING_PRODUCERS) findings.push(...(await produce(context)));
    return summarizeFindings(campaign.id, findings);
  } finally {
    if (!options.store) store.close();
  }
}

/** A campaign file that does not load is itself a finding (it stops everything else, so it is the only one). */
export function campaignFileFinding(error: CampaignError, campaignRoot: string): Finding {
  return {
    severity: 'error',
    code: 'campaign-file',
    message: error.message.replace(`${error.file}${error.line ? `:${error.line}` : ''}: `, ''),
    path: path.relative(campaignRoot, error.file).split(path.sep).join('/') || CAMPAIGN_FILE,
    ...(error.line !== undefined ? { line: error.line } : {}),
  };
}
