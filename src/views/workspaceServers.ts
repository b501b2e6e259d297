import * as vscode from 'vscode';
import type { WorkspaceServer } from '../session';
import { Disposable } from './disposable';
import type { Settings } from './settings';

export const WORKSPACE_SERVER_COMMANDS = {
  confirm: 'storyteller.confirmWorkspaceServers',
  forget: 'storyteller.forgetWorkspaceServers',
} as const;

export const USE_SERVER = 'Use This Server';

/**
 * Asks the writer, in a modal, before a server named by the workspace's settings receives the story; a yes
 * is remembered for this workspace, a no keeps the writer's own server until the writer asks again (Use
 * Model Servers This Workspace Names) or the settings change. Forget Confirmed Workspace Servers takes every
 * yes back.
 */
export class WorkspaceServers extends Disposable {
  /** Servers the writer said no to in this window: not asked about again unprompted. */
  private readonly declined = new Set<string>();
  private asking: Promise<void> | undefined;

  constructor(
    private readonly settings: Settings,
    private readonly log: vscode.LogOutputChannel,
  ) {
    super();
    this._register(settings.onDidChange(() => void this.askPending()));
    this._register(vscode.commands.registerCommand(WORKSPACE_SERVER_COMMANDS.confirm, () => this.askPending(true)));
    this._register(vscode.commands.registerCommand(WORKSPACE_SERVER_COMMANDS.forget, () => this.forget()));
  }

  /** Asks about each server the workspace names and the writer has not confirmed, one modal at a time. */
  askPending(again = false): Promise<void> {
    if (again) this.declined.clear();
    // A modal already open covers the servers it will re-read when it closes.
    this.asking ??= this.askEach().finally(() => (this.asking = undefined));
    return this.asking;
  }

  private async askEach(): Promise<void> {
    for (;;) {
      const server = this.settings.current.unconfirmedServers.find((s) => !this.declined.has(s.url));
      if (!server) return;
      if (await this.ask(server)) await this.settings.confirmServer(server.url);
      else this.declined.add(server.url);
    }
  }

  private async ask(server: WorkspaceServer): Promise<boolean> {
    this.log.warn(`this workspace's settings name storyteller.${server.setting} ${server.url}; the story is not sent there unless you confirm it`);
    const choice = await vscode.window.showWarningMessage(
      `This workspace asks Storyteller to send your story to ${server.url}. Use it?`,
      {
        modal: true,
        detail: `Its settings set storyteller.${server.setting}. That server would receive your actions and the campaign's canon, narrator-only passages included. Until you say yes, Storyteller uses the servers in your own settings. "Storyteller: Forget Confirmed Workspace Model Servers" takes a yes back.`,
      },
      USE_SERVER,
    );
    return choice === USE_SERVER;
  }

  private async forget(): Promise<string[]> {
    const forgotten = this.settings.confirmedServers();
    // Taken back on purpose: asked about again only when the writer asks, not by the re-read forgetting causes.
    for (const url of forgotten) this.declined.add(url);
    await this.settings.forgetServers();
    void vscode.window.showInformationMessage(
      forgotten.length === 0 ? 'No model server was confirmed for this workspace.' : `Forgot ${forgotten.join(', ')}: Storyteller uses the servers in your own settings until you confirm again.`,
    );
    return forgotten;
  }
}
