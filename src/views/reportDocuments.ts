import * as vscode from 'vscode';
import { Disposable } from './disposable';

export const REPORT_SCHEME = 'storyteller-report';

/**
 * Read-only documents the extension writes for the writer to read (context previews, import reports):
 * VS Code shows them as ordinary editors without a file on disk, so nothing can be saved over a source.
 * The name's extension picks the language (`.md` is markdown); showing a name again replaces its text.
 */
export class ReportDocuments extends Disposable implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly _onDidChange = this._register(new vscode.EventEmitter<vscode.Uri>());
  readonly onDidChange = this._onDidChange.event;

  constructor() {
    super();
    this._register(vscode.workspace.registerTextDocumentContentProvider(REPORT_SCHEME, this));
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.path) ?? '';
  }

  /** Opens (or refreshes) the report `name` beside the current editor (or in the editor area when none is open) and returns its document. */
  async show(name: string, text: string): Promise<vscode.TextDocument> {
    const uri = vscode.Uri.from({ scheme: REPORT_SCHEME, path: `/${name}` });
    this.texts.set(uri.path, text);
    this._onDidChange.fire(uri);
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(document, { viewColumn: vscode.window.activeTextEditor ? vscode.ViewColumn.Beside : vscode.ViewColumn.Active, preview: true });
    return document;
  }
}
