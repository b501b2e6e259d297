import Database from 'better-sqlite3';
import * as vscode from 'vscode';
import { assertFts5 } from './knowledge/sqlite';
import { CampaignRegistry } from './views/campaigns';
import { Disposable } from './views/disposable';
import { SourcesTree } from './views/sourcesTree';

/** What the extension hands to other extensions and to the integration suite. */
export interface StorytellerApi {
  readonly campaigns: CampaignRegistry;
  /** Null when SQLite works with FTS5; otherwise the message the user was shown. */
  readonly sqliteProblem: string | null;
}

/** Opens an in-memory database once: a broken native module or a build without FTS5 is named at start-up. */
function checkSqlite(): string | null {
  try {
    // The native binary loads here, so a missing or mismatched one becomes a message, not a failed activation.
    const db = new Database(':memory:');
    try {
      assertFts5(db);
    } finally {
      db.close();
    }
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

class StorytellerExtension extends Disposable implements StorytellerApi {
  readonly log = this._register(vscode.window.createOutputChannel('Adventure Storyteller', { log: true }));
  readonly campaigns = this._register(new CampaignRegistry(this.log));
  readonly sqliteProblem = checkSqlite();

  constructor() {
    super();
    if (this.sqliteProblem) {
      this.log.error(this.sqliteProblem);
      void vscode.window.showErrorMessage(`Adventure Storyteller cannot index campaigns: ${this.sqliteProblem}`);
    }
    this._register(new SourcesTree(this.campaigns));
    this._register(vscode.commands.registerCommand('storyteller.showLog', () => this.log.show()));
    // Discovery reads the workspace; it runs after activation returns.
    setImmediate(() => void this.campaigns.ready());
  }
}

export function activate(context: vscode.ExtensionContext): StorytellerApi {
  const extension = new StorytellerExtension();
  context.subscriptions.push(extension);
  return extension;
}

export function deactivate(): void {}
