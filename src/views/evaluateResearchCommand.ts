import path from 'node:path';
import * as vscode from 'vscode';
import { EvalSetError, renderEvalMarkdown } from '../story/evaluation';
import type { CampaignRegistry } from './campaigns';
import { campaignTarget } from './commands';
import { Disposable } from './disposable';
import type { KnowledgeService } from './knowledgeService';
import type { Settings } from './settings';
import type { SourcesNode } from './sourcesTree';
import { trustedFor } from './workspaceTrust';

/**
 * "Evaluate Research on This Campaign": what `storyteller eval` measures, for the narrator model the settings
 * name, through the campaign's session, opened as an untitled markdown document the writer can keep to
 * compare with the next model's.
 */
export class EvaluateResearchCommand extends Disposable {
  constructor(
    private readonly campaigns: CampaignRegistry,
    private readonly knowledge: KnowledgeService,
    private readonly settings: Settings,
  ) {
    super();
    this._register(
      vscode.commands.registerCommand('storyteller.evaluateResearch', (arg?: SourcesNode | vscode.Uri, options?: { campaignRoot?: string; setFile?: string }) => this.evaluate(arg, options)),
    );
  }

  private async evaluate(arg?: SourcesNode | vscode.Uri, options: { campaignRoot?: string; setFile?: string } = {}): Promise<vscode.TextDocument | undefined> {
    if (!trustedFor('Evaluate Research')) return undefined;
    const index = options.campaignRoot ? this.knowledge.get(path.resolve(options.campaignRoot)) : await campaignTarget(this.campaigns, this.knowledge, arg);
    if (!index?.store) {
      void vscode.window.showInformationMessage(index ? `${index.campaign.title} is still being indexed; try again in a moment.` : 'No campaign here: a campaign is a folder with a campaign.yaml.');
      return undefined;
    }
    await index.idle();
    const { title } = index.campaign;
    const model = this.settings.current.narratorModel;
    try {
      const report = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `${model} is researching ${title}'s questions and proposing on its played exchanges (eval.yaml)…`, cancellable: true }, (_, token) => {
        const cancel = new AbortController();
        token.onCancellationRequested(() => cancel.abort());
        return index.session.evaluateResearch({ ...(options.setFile ? { setFile: options.setFile } : {}), signal: cancel.signal });
      });
      const document = await vscode.workspace.openTextDocument({ language: 'markdown', content: renderEvalMarkdown(report, `${model} on ${title}`) });
      await vscode.window.showTextDocument(document, { preview: false });
      return document;
    } catch (error) {
      if (error instanceof Error && error.name === 'AbortError') return undefined;
      const hint = error instanceof EvalSetError ? ' (the example campaign has a starter eval.yaml to copy)' : '';
      void vscode.window.showErrorMessage(`Evaluate Research on ${title}: ${(error as Error).message}${hint}`);
      return undefined;
    }
  }
}
