import * as vscode from 'vscode';
import { Disposable } from './disposable';

export const REPORT_SCHEME = 'storyteller-report';

/** The one report document: every report replaces the last, so the writer reads them in one tab. */
export const REPORT_URI = vscode.Uri.from({ scheme: REPORT_SCHEME, path: '/Storyteller Report.md' });

/**
 * The read-only report the extension writes for the writer to read (context previews, campaign health,
 * import reports), shown rendered in the markdown preview. There is one: a new report replaces the last
 * in the same tab instead of opening another editor column. The document has no file on disk, so nothing
 * can be saved over a source.
 */
export class ReportDocuments extends Disposable implements vscode.TextDocumentContentProvider {
  private text = '';
  private title: string | undefined;
  private readonly _onDidChange = this._register(new vscode.EventEmitter<vscode.Uri>());
  readonly onDidChange = this._onDidChange.event;

  constructor() {
    super();
    this._register(vscode.workspace.registerTextDocumentContentProvider(REPORT_SCHEME, this));
  }

  provideTextDocumentContent(): string {
    return this.text;
  }

  /** What the report tab shows now (its first heading), if a report was shown. */
  get current(): { title: string; document: vscode.TextDocument } | undefined {
    const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === REPORT_URI.toString());
    return this.title !== undefined && document ? { title: this.title, document } : undefined;
  }

  /** Shows `markdown` in the report tab, rendered: the tab opens beside the editor, or is replaced in place. */
  async show(title: string, markdown: string): Promise<vscode.TextDocument> {
    this.title = title;
    this.text = markdown;
    const document = await this.documentWith(markdown);
    // The preview is opened afresh on the new text (a virtual document's preview does not always follow
    // a change); the old one goes first, so there is still only one report tab.
    const open = this.previewTab();
    if (open) await vscode.window.tabGroups.close(open, true);
    await vscode.commands.executeCommand('markdown.showLockedPreviewToSide', REPORT_URI);
    return document;
  }

  /** The report document once it holds `markdown`: an open one is updated by VS Code a moment after the change event. */
  private async documentWith(markdown: string): Promise<vscode.TextDocument> {
    let subscription: vscode.Disposable | undefined;
    const updated = new Promise<void>((resolve) => {
      subscription = vscode.workspace.onDidChangeTextDocument((event) => {
        if (event.document.uri.toString() === REPORT_URI.toString() && event.document.getText() === markdown) resolve();
      });
    });
    try {
      this._onDidChange.fire(REPORT_URI);
      const document = await vscode.workspace.openTextDocument(REPORT_URI);
      if (document.getText() !== markdown) await updated;
      return document;
    } finally {
      subscription?.dispose();
    }
  }

  /** The markdown preview tab of the report, when one is open in any group. */
  private previewTab(): vscode.Tab | undefined {
    return vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .find((tab) => tab.input instanceof vscode.TabInputWebview && tab.input.viewType.includes('markdown.preview') && tab.label.includes('Storyteller Report'));
  }
}
