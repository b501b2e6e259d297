import path from 'node:path';
import * as vscode from 'vscode';
import { CAMPAIGN_FILE, CampaignError, loadCampaign, pathInside, type Campaign } from '../knowledge/campaign';
import { Disposable } from './disposable';

/** A campaign folder found in the workspace: loaded, or with the reason its campaign.yaml is unusable. */
export type CampaignEntry =
  | { root: string; state: 'loaded'; campaign: Campaign }
  | { root: string; state: 'invalid'; error: string };

/**
 * The campaign folders of the workspace, found without blocking activation and kept current as
 * campaign.yaml files appear, change or go.
 */
export class CampaignRegistry extends Disposable {
  private readonly _onDidChange = this._register(new vscode.EventEmitter<void>());
  readonly onDidChange = this._onDidChange.event;
  private entries = new Map<string, CampaignEntry>();
  private discovery: Promise<void> | undefined;

  constructor(private readonly log: vscode.LogOutputChannel) {
    super();
    const watcher = this._register(vscode.workspace.createFileSystemWatcher(`**/${CAMPAIGN_FILE}`));
    this._register(watcher.onDidCreate((uri) => this.reload(path.dirname(uri.fsPath))));
    this._register(watcher.onDidChange((uri) => this.reload(path.dirname(uri.fsPath))));
    this._register(watcher.onDidDelete((uri) => this.forget(path.dirname(uri.fsPath))));
    this._register(vscode.workspace.onDidChangeWorkspaceFolders(() => void this.rediscover()));
  }

  /** Resolves once the first discovery has finished; starts it if nobody has. */
  ready(): Promise<void> {
    this.discovery ??= this.rediscover();
    return this.discovery;
  }

  list(): CampaignEntry[] {
    return [...this.entries.values()].sort((a, b) => a.root.localeCompare(b.root));
  }

  get(root: string): CampaignEntry | undefined {
    return this.entries.get(path.resolve(root));
  }

  /** The loaded campaign that contains `file`, if any. */
  campaignOf(file: string): Campaign | undefined {
    for (const entry of this.entries.values()) {
      if (entry.state !== 'loaded') continue;
      if (pathInside(entry.root, file) !== undefined) return entry.campaign;
    }
    return undefined;
  }

  private async rediscover(): Promise<void> {
    const files = await vscode.workspace.findFiles(`**/${CAMPAIGN_FILE}`, '{**/node_modules/**,**/.git/**}');
    const roots = new Set(files.filter((uri) => uri.scheme === 'file').map((uri) => path.dirname(uri.fsPath)));
    // Campaigns do not nest: a campaign.yaml inside another campaign is that campaign's data.
    const outermost = [...roots].filter((root) => ![...roots].some((other) => other !== root && pathInside(other, root) !== undefined));
    const next = new Map<string, CampaignEntry>();
    for (const root of outermost) next.set(path.resolve(root), this.load(root));
    this.entries = next;
    this._onDidChange.fire();
  }

  private load(root: string): CampaignEntry {
    try {
      const campaign = loadCampaign(root);
      this.log.info(`campaign ${campaign.id} (${campaign.title}) at ${root}`);
      return { root: path.resolve(root), state: 'loaded', campaign };
    } catch (error) {
      const message = error instanceof CampaignError ? error.message : String(error);
      this.log.error(message);
      return { root: path.resolve(root), state: 'invalid', error: message };
    }
  }

  private reload(root: string): void {
    this.entries.set(path.resolve(root), this.load(root));
    this._onDidChange.fire();
  }

  private forget(root: string): void {
    if (this.entries.delete(path.resolve(root))) this._onDidChange.fire();
  }
}
