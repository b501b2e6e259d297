import path from 'node:path';
import * as vscode from 'vscode';
import type { CampaignEntry, CampaignRegistry } from './campaigns';
import { Disposable } from './disposable';

type SourcesNode = { kind: 'campaign'; entry: CampaignEntry };

/** Sources view: campaign → class → source. */
export class SourcesTree extends Disposable implements vscode.TreeDataProvider<SourcesNode> {
  private readonly _onDidChangeTreeData = this._register(new vscode.EventEmitter<SourcesNode | undefined>());
  readonly onDidChangeTreeData = this._onDidChangeTreeData.event;

  constructor(private readonly campaigns: CampaignRegistry) {
    super();
    this._register(vscode.window.createTreeView('storyteller.sources', { treeDataProvider: this, showCollapseAll: true }));
    this._register(campaigns.onDidChange(() => this._onDidChangeTreeData.fire(undefined)));
  }

  async getChildren(node?: SourcesNode): Promise<SourcesNode[]> {
    if (node) return [];
    await this.campaigns.ready();
    return this.campaigns.list().map((entry) => ({ kind: 'campaign', entry }));
  }

  getTreeItem(node: SourcesNode): vscode.TreeItem {
    const { entry } = node;
    if (entry.state === 'invalid') {
      const item = new vscode.TreeItem(campaignLocation(entry.root) || path.basename(entry.root), vscode.TreeItemCollapsibleState.None);
      item.iconPath = new vscode.ThemeIcon('error', new vscode.ThemeColor('errorForeground'));
      item.description = 'campaign.yaml is invalid';
      item.tooltip = entry.error;
      return item;
    }
    const item = new vscode.TreeItem(entry.campaign.title, vscode.TreeItemCollapsibleState.Expanded);
    item.id = `campaign:${entry.root}`;
    item.iconPath = new vscode.ThemeIcon('book');
    item.description = campaignLocation(entry.root);
    item.contextValue = 'campaign';
    return item;
  }
}

/** Where a campaign sits in the workspace; empty when it is a workspace folder itself. */
function campaignLocation(root: string): string {
  const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(root));
  return folder && folder.uri.fsPath === root ? '' : vscode.workspace.asRelativePath(root);
}
