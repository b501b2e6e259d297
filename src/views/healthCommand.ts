import * as vscode from 'vscode';
import { healthSummary, indexHealth } from '../knowledge/health';
import type { Finding, FindingSeverity, LintReport } from '../knowledge/health';
import type { CampaignRegistry } from './campaigns';
import { campaignTarget } from './commands';
import { Disposable } from './disposable';
import type { KnowledgeService } from './knowledgeService';
import type { ReportDocuments } from './reportDocuments';
import type { Settings } from './settings';
import type { SourcesNode } from './sourcesTree';

const SEVERITY_TITLE: Record<FindingSeverity, string> = { error: 'Errors', warning: 'Warnings', info: 'Notes' };

/**
 * Markdown for the writer: the summary, then each finding at its `path:line`. The markdown preview refuses
 * `file:` links (it renders them as literal text), so the place is written plainly, as a terminal or
 * Ctrl+P (Go to File) takes it.
 */
export function renderHealthReport(report: LintReport, title: string): string {
  const place = (f: Finding) => `\`${f.line ? `${f.path}:${f.line}` : f.path}\``;
  const lines = [`# Campaign health: ${title}`, '', healthSummary(report, title), ''];
  for (const severity of ['error', 'warning', 'info'] as const) {
    const findings = report.findings.filter((f) => f.severity === severity);
    if (findings.length === 0) continue;
    lines.push(`## ${SEVERITY_TITLE[severity]} (${findings.length})`, '');
    for (const f of findings) lines.push(`- ${place(f)} ${f.message.replace(/[\r\n]+/g, ' ')} (${f.code})`);
    lines.push('');
  }
  if (report.findings.length === 0) lines.push('Nothing to report.', '');
  return lines.join('\n');
}

/**
 * "Check Campaign Health": the checks `storyteller lint` runs in a writer's CI, on the live index, with the
 * extension's own embedding model and always-include budget, shown as a report document.
 */
export class HealthCommand extends Disposable {
  constructor(
    private readonly campaigns: CampaignRegistry,
    private readonly knowledge: KnowledgeService,
    private readonly settings: Settings,
    private readonly reports: ReportDocuments,
  ) {
    super();
    this._register(vscode.commands.registerCommand('storyteller.checkHealth', (arg?: SourcesNode | vscode.Uri) => this.check(arg)));
  }

  private async check(arg?: SourcesNode | vscode.Uri): Promise<LintReport | undefined> {
    const index = await campaignTarget(this.campaigns, this.knowledge, arg);
    if (!index?.store) {
      void vscode.window.showInformationMessage(index ? `${index.campaign.title} is still being indexed; try again in a moment.` : 'No campaign here: a campaign is a folder with a campaign.yaml.');
      return undefined;
    }
    await index.idle();
    const { campaign } = index;
    const { embeddingModel, budgets } = this.settings.current;
    const playDb = index.session.playIfAny?.db;
    const report = await indexHealth(campaign, index.store, {
      alwaysIncludeBudget: budgets.alwaysInclude,
      measure: index.session.promptMeasure(),
      embeddingModel: embeddingModel || null,
      ...(playDb ? { playDb } : {}),
    });
    await this.reports.show(`Campaign health: ${campaign.title}`, renderHealthReport(report, campaign.title));
    const summary = healthSummary(report, campaign.title);
    if (report.errors > 0) void vscode.window.showErrorMessage(summary);
    else if (report.warnings > 0) void vscode.window.showWarningMessage(summary);
    else void vscode.window.showInformationMessage(summary);
    return report;
  }
}
