import path from 'node:path';
import * as vscode from 'vscode';
import { KNOWLEDGE_CLASSES, type ClassOrigin, type KnowledgeClass, type SourceRecord } from '../knowledge/types';
import type { CampaignEntry, CampaignRegistry } from './campaigns';
import type { KnowledgeService } from './knowledgeService';
import { TreeProvider } from './treeProvider';

export type SourcesNode =
  | { kind: 'campaign'; entry: CampaignEntry }
  | { kind: 'class'; root: string; knowledgeClass: KnowledgeClass; sources: SourceRecord[] }
  | { kind: 'source'; root: string; source: SourceRecord };

export const CLASS_LABEL: Record<KnowledgeClass, string> = { canon: 'Canon', reference: 'Reference', inspiration: 'Inspiration' };
const CLASS_ICON: Record<KnowledgeClass, string> = { canon: 'book', reference: 'library', inspiration: 'lightbulb' };

export function describeOrigin(origin: ClassOrigin): string {
  switch (origin.kind) {
    case 'front-matter':
      return 'set in its front matter';
    case 'folder-rule':
      return `from the folder rule for ${origin.folder}/ in campaign.yaml`;
    case 'campaign-default':
      return "the campaign's default_class";
  }
}

export function sourceUri(root: string, source: Pick<SourceRecord, 'path'>): vscode.Uri {
  return vscode.Uri.file(path.join(root, ...source.path.split('/')));
}

/** Sources view: campaign → class → source, with each source's state, flags and problems. */
export class SourcesTree extends TreeProvider<SourcesNode> {
  constructor(
    private readonly campaigns: CampaignRegistry,
    private readonly knowledge: KnowledgeService,
  ) {
    super('storyteller.sources', [campaigns.onDidChange, knowledge.onDidChange, knowledge.onDidChangeState], { showCollapseAll: true });
  }

  async getChildren(node?: SourcesNode): Promise<SourcesNode[]> {
    if (!node) {
      await this.campaigns.ready();
      return this.campaigns.list().map((entry) => ({ kind: 'campaign', entry }));
    }
    if (node.kind === 'campaign') {
      const sources = this.knowledge.get(node.entry.root)?.store?.listSources() ?? [];
      return KNOWLEDGE_CLASSES.map((knowledgeClass) => ({
        kind: 'class' as const,
        root: node.entry.root,
        knowledgeClass,
        sources: sources.filter((s) => s.class === knowledgeClass),
      })).filter((group) => group.sources.length > 0);
    }
    if (node.kind === 'class') {
      return node.sources.map((source) => ({ kind: 'source', root: node.root, source }));
    }
    return [];
  }

  getTreeItem(node: SourcesNode): vscode.TreeItem {
    switch (node.kind) {
      case 'campaign':
        return this.campaignItem(node.entry);
      case 'class': {
        const item = new vscode.TreeItem(CLASS_LABEL[node.knowledgeClass], vscode.TreeItemCollapsibleState.Expanded);
        item.id = `class:${node.root}:${node.knowledgeClass}`;
        item.iconPath = new vscode.ThemeIcon(CLASS_ICON[node.knowledgeClass]);
        item.description = `${node.sources.length} source${node.sources.length === 1 ? '' : 's'}`;
        item.contextValue = 'class';
        return item;
      }
      case 'source':
        return sourceItem(node.root, node.source);
    }
  }

  private campaignItem(entry: CampaignEntry): vscode.TreeItem {
    if (entry.state === 'invalid') {
      const item = new vscode.TreeItem(campaignLocation(entry.root) || path.basename(entry.root), vscode.TreeItemCollapsibleState.None);
      item.iconPath = new vscode.ThemeIcon('error', new vscode.ThemeColor('errorForeground'));
      item.description = 'campaign.yaml is invalid';
      item.tooltip = entry.error;
      return item;
    }
    const index = this.knowledge.get(entry.root);
    const item = new vscode.TreeItem(entry.campaign.title, vscode.TreeItemCollapsibleState.Expanded);
    item.id = `campaign:${entry.root}`;
    item.iconPath = new vscode.ThemeIcon('book');
    const counts = index?.store?.counts();
    const state = index?.state;
    const parts = [campaignLocation(entry.root)];
    if (state?.kind === 'indexing') parts.push(`indexing ${state.done}/${state.total}`);
    else if (state?.kind === 'error') parts.push('index failed');
    else if (counts) parts.push(`${counts.sources} sources · ${counts.passages} passages`);
    else parts.push('waiting to index');
    item.description = parts.filter(Boolean).join(' · ');
    item.tooltip = state?.kind === 'error' ? state.message : `${entry.campaign.title}\n${entry.root}`;
    item.contextValue = 'campaign';
    return item;
  }
}

export function sourceItem(root: string, source: SourceRecord): vscode.TreeItem {
  // Labels, descriptions and tooltips are plain strings: imported text is shown, never rendered.
  const item = new vscode.TreeItem(source.title || source.path, vscode.TreeItemCollapsibleState.None);
  item.id = `source:${root}:${source.id}`;
  item.resourceUri = sourceUri(root, source);
  const errors = source.issues.filter((i) => i.severity === 'error');
  const flags: string[] = [];
  if (!source.enabled) flags.push('disabled');
  if (source.visibility === 'hidden') flags.push('hidden');
  if (source.alwaysInclude) flags.push('always included');
  if (source.lexicalState === 'duplicate') flags.push('duplicate');
  else if (source.lexicalState !== 'ready') flags.push(source.lexicalState);
  if (errors.length > 0) flags.push(`${errors.length} error${errors.length === 1 ? '' : 's'}`);
  item.description = [source.path, ...flags].join(' · ');
  item.iconPath =
    errors.length > 0 || source.lexicalState === 'error'
      ? new vscode.ThemeIcon('error', new vscode.ThemeColor('errorForeground'))
      : !source.enabled
        ? new vscode.ThemeIcon('circle-slash', new vscode.ThemeColor('disabledForeground'))
        : source.lexicalState === 'duplicate'
          ? new vscode.ThemeIcon('copy')
          : source.visibility === 'hidden'
            ? new vscode.ThemeIcon('eye-closed')
            : source.alwaysInclude
              ? new vscode.ThemeIcon('pinned')
              : new vscode.ThemeIcon(source.lexicalState === 'pending' ? 'sync' : 'file');
  item.tooltip = [
    source.title,
    source.path,
    `${CLASS_LABEL[source.class]}: ${describeOrigin(source.classOrigin)}`,
    `${source.enabled ? 'enabled' : 'disabled'} · ${source.visibility === 'hidden' ? 'hidden (narrator only)' : 'visible'}${source.alwaysInclude ? ' · always included' : ''}`,
    `index: ${source.lexicalState}${source.duplicateOf ? ` (same text as ${source.duplicateOf})` : ''} · embeddings: ${source.semanticState}`,
    ...source.issues.map((i) => `${i.severity}${i.line ? ` (line ${i.line})` : ''}: ${i.message}`),
  ].join('\n');
  item.contextValue = source.enabled ? 'source.enabled' : 'source.disabled';
  item.command = { command: 'storyteller.revealPassages', title: 'Reveal Passages', arguments: [{ kind: 'source', root, source }] };
  return item;
}

/** Where a campaign sits in the workspace; empty when it is a workspace folder itself. */
function campaignLocation(root: string): string {
  const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(root));
  return folder && folder.uri.fsPath === root ? '' : vscode.workspace.asRelativePath(root);
}
