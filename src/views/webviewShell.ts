import crypto from 'node:crypto';
import * as vscode from 'vscode';

/** One of the extension's own pages: its stylesheet in media/, its script bundle in dist/. */
export interface WebviewPage {
  title: string;
  style: string;
  script: string;
}

/**
 * Loads a page into a panel: scripts on, only the extension's dist/ and media/ readable, and a content
 * security policy that allows nothing remote and no script without this load's nonce, so campaign or model
 * text that reaches the page can never become markup that runs or fetches.
 */
export function hostPage(panel: vscode.WebviewPanel, extensionUri: vscode.Uri, page: WebviewPage): void {
  const { webview } = panel;
  panel.iconPath = vscode.Uri.joinPath(extensionUri, 'media', 'storyteller.svg');
  webview.options = { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist'), vscode.Uri.joinPath(extensionUri, 'media')] };
  const nonce = crypto.randomBytes(16).toString('base64');
  const asset = (...segments: string[]) => webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, ...segments)).toString();
  const csp = ["default-src 'none'", `script-src 'nonce-${nonce}'`, `style-src ${webview.cspSource}`, `font-src ${webview.cspSource}`, `img-src ${webview.cspSource}`].join('; ');
  webview.html = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${asset('media', page.style)}">
<title>${page.title}</title>
</head>
<body>
<main id="app"></main>
<script nonce="${nonce}" src="${asset('dist', page.script)}"></script>
</body>
</html>`;
}

/**
 * A picture's panels, one per key (a campaign, an adventure): opening it again brings the open one forward.
 * Each is forgotten when closed, and all are closed with the extension.
 */
export class KeyedPanels<T extends vscode.Disposable & { readonly panel: vscode.WebviewPanel }> implements vscode.Disposable {
  private readonly open = new Map<string, T>();

  get(key: string): T | undefined {
    return this.open.get(key);
  }

  list(): T[] {
    return [...this.open.values()];
  }

  /** The open panel for `key`, revealed; else the one `create` makes. */
  revealOrCreate(key: string, create: () => T): T {
    const open = this.open.get(key);
    if (open) {
      open.panel.reveal();
      return open;
    }
    const made = create();
    this.open.set(key, made);
    made.panel.onDidDispose(() => this.open.delete(key));
    return made;
  }

  /**
   * A panel VS Code brought back after a window reload, under `key` (undefined: what it showed is gone). It
   * is closed instead of left blank when there is nothing to show or the key's panel is already open.
   */
  adopt(key: string | undefined, panel: vscode.WebviewPanel, create: () => T): T | undefined {
    if (key === undefined || this.open.has(key)) {
      panel.dispose();
      return undefined;
    }
    return this.revealOrCreate(key, create);
  }

  dispose(): void {
    for (const panel of this.list()) panel.dispose();
  }
}
