import path from 'node:path';
import * as vscode from 'vscode';
import type { CanonConflict, ConflictAnalysis } from '../knowledge/conflicts';
import type { FactStatement } from '../knowledge/conflicts';
import { KNOWLEDGE_CLASSES, alwaysIncludeStanding, isAlwaysIncluded, standingFlags, type ClassOrigin, type KnowledgeClass, type SourceRecord } from '../knowledge/campaign';
import type { CampaignEntry, CampaignRegistry } from './campaigns';
import type { KnowledgeService } from './knowledgeService';
import { plural } from './words';
import { TreeProvider } from './treeProvider';

export type SourcesNode =
  | { kind: 'campaign'; entry: CampaignEntry }
  | { kind: 'class'; root: string; knowledgeClass: KnowledgeClass; sources: SourceRecord[] }
  | { kind: 'source'; root: string; source: SourceRecord; conflicts: readonly CanonConflict[] }
  /** A canon conflict one of whose statements (`here`) is in the source above it. */
  | { kind: 'conflict'; root: string; source: SourceRecord; conflict: CanonConflict; here: FactStatement; there: FactStatement };

/** What the tree needs from conflict detection (ConflictFeatures): the current analysis, and when it changes. */
export interface SourceConflicts {
  analysisOf(root: string): ConflictAnalysis | undefined;
  readonly onDidRefresh: vscode.Event<void>;
}

/** Command that opens a statement at a line (ConflictFeatures registers it). */
const OPEN_STATEMENT_COMMAND = 'storyteller.conflicts.openStatement';

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
    private readonly conflicts: SourceConflicts,
  ) {
    // The conflict analysis follows every index change, so its refresh also covers sources changing.
    super('storyteller.sources', [campaigns.onDidChange, knowledge.onDidChangeState, conflicts.onDidRefresh], { showCollapseAll: true });
  }

  async getChildren(node?: SourcesNode): Promise<SourcesNode[]> {
    if (!node) {
      await this.campaigns.ready();
      return this.campaigns.list().map((entry) => ({ kind: 'campaign', entry }));
    }
    if (node.kind === 'campaign') return this.classNodes(node.entry.root);
    if (node.kind === 'class') return node.sources.map((source) => this.sourceNode(node.root, source));
    if (node.kind === 'source') {
      return node.conflicts.flatMap((conflict) =>
        sidesIn(conflict, node.source.path).map(([here, there]) => ({ kind: 'conflict' as const, root: node.root, source: node.source, conflict, here, there })),
      );
    }
    return [];
  }

  /** Lets `view.reveal` open the tree down to a source or one of its conflicts. */
  getParent(node: SourcesNode): SourcesNode | undefined {
    switch (node.kind) {
      case 'campaign':
        return undefined;
      case 'class': {
        const entry = this.campaigns.list().find((e) => e.root === node.root);
        return entry && { kind: 'campaign', entry };
      }
      case 'source':
        return this.classNodes(node.root).find((c) => c.knowledgeClass === node.source.class);
      case 'conflict':
        return this.sourceNode(node.root, node.source);
    }
  }

  private classNodes(root: string): Extract<SourcesNode, { kind: 'class' }>[] {
    const sources = this.knowledge.get(root)?.store?.listSources() ?? [];
    return KNOWLEDGE_CLASSES.map((knowledgeClass) => ({
      kind: 'class' as const,
      root,
      knowledgeClass,
      sources: sources.filter((s) => s.class === knowledgeClass),
    })).filter((group) => group.sources.length > 0);
  }

  private sourceNode(root: string, source: SourceRecord): Extract<SourcesNode, { kind: 'source' }> {
    // The writer ignored those pairs: they no longer belong in the list of what the source contradicts.
    const conflicts = this.conflicts.analysisOf(root)?.conflictsAt(source.path).filter((c) => c.decision !== 'ignored') ?? [];
    return { kind: 'source', root, source, conflicts };
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
        return sourceItem(node.root, node.source, node.conflicts);
      case 'conflict':
        return conflictItem(node);
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
    else if (counts) parts.push(`${plural(counts.sources, 'source')} · ${plural(counts.passages, 'passage')}`);
    else parts.push('waiting to index');
    item.description = parts.filter(Boolean).join(' · ');
    item.tooltip = state?.kind === 'error' ? state.message : `${entry.campaign.title}\n${entry.root}`;
    item.contextValue = 'campaign';
    return item;
  }
}

/** The conflict's statements in `path` (both, when a file contradicts itself), each with the other side. */
function sidesIn(conflict: CanonConflict, path: string): [FactStatement, FactStatement][] {
  const pairs: [FactStatement, FactStatement][] = [
    [conflict.a, conflict.b],
    [conflict.b, conflict.a],
  ];
  return pairs.filter(([here]) => here.path === path);
}

/** `resolved: notes.md supersedes`, `resolved: kept notes.md:8` or `open`, for the tree and the inspector. */
function conflictStatus(conflict: CanonConflict): string {
  if (conflict.supersededBy === null) return 'open';
  const winner = conflict[conflict.supersededBy];
  return conflict.settledBy === 'writer' ? `resolved: kept ${winner.path}:${winner.line}` : `resolved: ${winner.path} supersedes`;
}

/** One line of the inspector: `Sister Mara — Age: "41" (line 8) vs "34" in characters/mara.md:8 · open`. */
function conflictLine(here: FactStatement, there: FactStatement, conflict: CanonConflict): string {
  return `${conflict.entity} — ${conflict.attribute}: "${here.value}" (line ${here.line}) vs "${there.value}" in ${there.path}:${there.line} · ${conflictStatus(conflict)}`;
}

function conflictItem(node: Extract<SourcesNode, { kind: 'conflict' }>): vscode.TreeItem {
  const { conflict, here, there } = node;
  const item = new vscode.TreeItem(`${conflict.entity} — ${conflict.attribute}: "${here.value}" vs "${there.value}"`);
  item.id = `conflict:${node.root}:${node.source.id}:${conflict.key}:${here.line}`;
  const open = conflict.supersededBy === null;
  item.description = `${there.path}:${there.line}${open ? '' : ` · ${conflictStatus(conflict)}`}`;
  item.tooltip = [
    `${conflict.entity} — ${conflict.attribute}`,
    `here (line ${here.line}): ${here.quote}`,
    `${there.sourceTitle} (${there.path}:${there.line}): ${there.quote}`,
    open ? 'open: canon disagrees with itself' : conflictStatus(conflict),
  ].join('\n');
  item.iconPath = open ? new vscode.ThemeIcon('warning', new vscode.ThemeColor('editorWarning.foreground')) : new vscode.ThemeIcon('history');
  item.command = { command: OPEN_STATEMENT_COMMAND, title: 'Open the Other Statement', arguments: [sourceUri(node.root, there).toString(), there.line] };
  item.contextValue = open ? 'conflict.open' : 'conflict.resolved';
  return item;
}

export function sourceItem(root: string, source: SourceRecord, conflicts: readonly CanonConflict[] = []): vscode.TreeItem {
  // Labels, descriptions and tooltips are plain strings: imported text is shown, never rendered.
  const open = conflicts.filter((c) => c.supersededBy === null).length;
  const item = new vscode.TreeItem(source.title || source.path, conflicts.length > 0 ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
  item.id = `source:${root}:${source.id}`;
  item.resourceUri = sourceUri(root, source);
  const errors = source.issues.filter((i) => i.severity === 'error');
  const flags = standingFlags(source);
  if (source.lexicalState === 'duplicate') flags.push('duplicate');
  else if (source.lexicalState !== 'ready') flags.push(source.lexicalState);
  if (errors.length > 0) flags.push(`${errors.length} error${errors.length === 1 ? '' : 's'}`);
  if (open > 0) flags.push(`${open} conflict${open === 1 ? '' : 's'}`);
  item.description = [source.path, ...flags].join(' · ');
  item.iconPath =
    errors.length > 0 || source.lexicalState === 'error'
      ? new vscode.ThemeIcon('error', new vscode.ThemeColor('errorForeground'))
      : !source.enabled
        ? new vscode.ThemeIcon('circle-slash', new vscode.ThemeColor('disabledForeground'))
        : open > 0
          ? new vscode.ThemeIcon('warning', new vscode.ThemeColor('editorWarning.foreground'))
          : source.lexicalState === 'duplicate'
          ? new vscode.ThemeIcon('copy')
          : source.visibility === 'hidden'
            ? new vscode.ThemeIcon('eye-closed')
            : isAlwaysIncluded(source)
              ? new vscode.ThemeIcon('pinned')
              : new vscode.ThemeIcon(source.lexicalState === 'pending' ? 'sync' : 'file');
  item.tooltip = [
    source.title,
    source.path,
    `${CLASS_LABEL[source.class]}: ${describeOrigin(source.classOrigin)}`,
    [source.enabled ? 'enabled' : 'disabled', source.visibility === 'hidden' ? 'hidden (narrator only)' : 'visible', alwaysIncludeStanding(source)].filter(Boolean).join(' · '),
    `index: ${source.lexicalState}${source.duplicateOf ? ` (same text as ${source.duplicateOf})` : ''} · embeddings: ${source.semanticState}`,
    ...source.issues.map((i) => `${i.severity}${i.line ? ` (line ${i.line})` : ''}: ${i.message}`),
    ...(conflicts.length > 0 ? [`canon conflicts (${conflicts.length}):`, ...conflicts.flatMap((c) => sidesIn(c, source.path).map(([here, there]) => `- ${conflictLine(here, there, c)}`))] : []),
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
