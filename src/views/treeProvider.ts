import * as vscode from 'vscode';
import { Disposable } from './disposable';

/** A tree view whose provider re-reads its model whenever one of the given model events fires. */
export abstract class TreeProvider<T> extends Disposable implements vscode.TreeDataProvider<T> {
  private readonly _onDidChangeTreeData = this._register(new vscode.EventEmitter<T | undefined>());
  readonly onDidChangeTreeData = this._onDidChangeTreeData.event;
  readonly view: vscode.TreeView<T>;

  constructor(viewId: string, refreshOn: vscode.Event<unknown>[], options: Omit<vscode.TreeViewOptions<T>, 'treeDataProvider'> = {}) {
    super();
    this.view = this._register(vscode.window.createTreeView(viewId, { ...options, treeDataProvider: this }));
    for (const event of refreshOn) this._register(event(() => this.refresh()));
  }

  refresh(): void {
    this._onDidChangeTreeData.fire(undefined);
  }

  abstract getChildren(node?: T): vscode.ProviderResult<T[]>;
  abstract getTreeItem(node: T): vscode.TreeItem;
}
