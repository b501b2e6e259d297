import * as vscode from 'vscode';
import type { PassageRecord, SourceRecord } from '../knowledge/campaign';
import { passageLabel } from '../knowledge/indexing';
import type { KnowledgeService } from './knowledgeService';
import { sourceUri } from './sourcesTree';
import { TreeProvider } from './treeProvider';

export interface PassageNode {
  root: string;
  source: SourceRecord;
  passage: PassageRecord;
}

const PREVIEW_CHARS = 400;

/** Passages view: the passages of the source selected in the Sources view, in file order. */
export class PassagesTree extends TreeProvider<PassageNode> {
  private selected: { root: string; sourceId: string } | undefined;

  constructor(private readonly knowledge: KnowledgeService) {
    super('storyteller.passages', [knowledge.onDidChange]);
  }

  /** Shows the passages of one source. */
  select(root: string, sourceId: string): void {
    this.selected = { root, sourceId };
    this.refresh();
  }

  getChildren(node?: PassageNode): PassageNode[] {
    if (node || !this.selected) return [];
    const store = this.knowledge.get(this.selected.root)?.store;
    const source = store?.getSource(this.selected.sourceId);
    if (!store || !source) return [];
    this.view.description = source.title;
    const root = this.selected.root;
    return store.listPassages(source.id).map((passage) => ({ root, source, passage }));
  }

  getTreeItem({ root, source, passage }: PassageNode): vscode.TreeItem {
    const item = new vscode.TreeItem(passageLabel(passage), vscode.TreeItemCollapsibleState.None);
    item.id = `passage:${root}:${passage.id}`;
    item.iconPath = new vscode.ThemeIcon('symbol-text');
    item.description = `${passage.tokenCount} tokens · lines ${passage.startLine}–${passage.endLine}`;
    const text = passage.text.length > PREVIEW_CHARS ? `${passage.text.slice(0, PREVIEW_CHARS)}…` : passage.text;
    const tooltip = [`${source.path}:${passage.startLine}-${passage.endLine}`, '', text];
    if (passage.headingPath.length > 0) tooltip.unshift(passage.headingPath.join(' › '));
    item.tooltip = tooltip.join('\n');
    item.command = { command: 'storyteller.openPassage', title: 'Open Passage', arguments: [{ root, source, passage }] };
    item.contextValue = 'passage';
    return item;
  }
}

/** Opens the passage's file with its line range selected. */
export async function openPassage({ root, source, passage }: PassageNode): Promise<vscode.TextEditor> {
  const document = await vscode.workspace.openTextDocument(sourceUri(root, source));
  const endLine = Math.min(passage.endLine, document.lineCount) - 1;
  const selection = new vscode.Selection(passage.startLine - 1, 0, endLine, document.lineAt(endLine).text.length);
  const editor = await vscode.window.showTextDocument(document, { selection, preview: true });
  editor.revealRange(selection, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  return editor;
}
