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

  /** Shows `markdown` in the report tab, rendered, opening the tab beside the editor only if it is not open yet. */
  async show(title: string, markdown: string): Promise<vscode.TextDocument> {
    this.title = title;
    this.text = markdown;
    this._onDidChange.fire(REPORT_URI);
    const document = await vscode.workspace.openTextDocument(REPORT_URI);
    const open = this.previewTab();
    if (open?.isActive) return document;
    // Behind other tabs it is closed and opened again in front: still one report tab, never a second.
    if (open) await vscode.window.tabGroups.close(open, true);
    await vscode.commands.executeCommand('markdown.showLockedPreviewToSide', REPORT_URI);
    return document;
  }

  /** The markdown preview tab of the report, when one is open in any group. */
  private previewTab(): vscode.Tab | undefined {
    return vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .find((tab) => tab.input instanceof vscode.TabInputWebview && tab.input.viewType.includes('markdown.preview') && tab.label.includes('Storyteller Report'));
  }
}
