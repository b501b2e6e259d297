import path from 'node:path';
import * as vscode from 'vscode';
import type { Campaign } from '../knowledge/campaign';
import { replaceFile } from '../knowledge/files';
import { transcriptMarkdown } from '../story';
import type { Adventure, Turn } from '../story';
import { Disposable } from './disposable';
import { plural } from './words';
import type { PlayReaders } from './playTrees';

/**
 * Adventure transcripts as markdown: a read-only document per branch (where Find All References points
 * into play), and "Export Transcript…", which writes a branch to a file the writer chooses.
 */

export const TRANSCRIPT_SCHEME = 'storyteller-transcript';
export const EXPORT_TRANSCRIPT_COMMAND = 'storyteller.exportTranscript';

interface TranscriptCampaign {
  readonly campaign: Pick<Campaign, 'root' | 'title' | 'id' | 'playPath'>;
}

/** An Adventures view node: an adventure (its current branch) or one turn (the branch ending there). */
export interface BranchNode {
  playPath: string;
  adventure: Adventure;
  turn?: Turn;
}

interface BranchRef {
  playPath: string;
  turnId: string;
}

export class TranscriptDocuments extends Disposable implements vscode.TextDocumentContentProvider {
  private readonly _onDidChange = this._register(new vscode.EventEmitter<vscode.Uri>());
  readonly onDidChange = this._onDidChange.event;
  private readonly shown = new Map<string, vscode.Uri>();

  constructor(
    private readonly campaigns: () => readonly TranscriptCampaign[],
    private readonly readers: PlayReaders,
    onDidPlay: vscode.Event<unknown>,
  ) {
    super();
    this._register(vscode.workspace.registerTextDocumentContentProvider(TRANSCRIPT_SCHEME, this));
    // A played turn changes the branch an open transcript shows.
    this._register(onDidPlay(() => this.shown.forEach((uri) => this._onDidChange.fire(uri))));
    this._register(vscode.commands.registerCommand(EXPORT_TRANSCRIPT_COMMAND, (node?: BranchNode, target?: vscode.Uri) => this.export(node, target)));
  }

  /** The transcript document of the branch ending at `turnId`. */
  uriFor(playPath: string, adventure: Adventure, turnId: string): vscode.Uri {
    const name = `${adventure.title.replace(/[\\/:*?"<>|#%]+/g, ' ').trim() || 'Adventure'}.md`;
    const uri = vscode.Uri.from({ scheme: TRANSCRIPT_SCHEME, path: `/${name}`, query: JSON.stringify({ playPath, turnId } satisfies BranchRef) });
    this.shown.set(uri.toString(), uri);
    return uri;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const ref = this.refOf(uri);
    const branch = ref && this.branch(ref.playPath, ref.turnId);
    return branch?.markdown ?? `This transcript is no longer in play data (its adventure or turn was deleted).\n`;
  }

  /** The campaign a transcript document belongs to. */
  campaignRootOf(uri: vscode.Uri): string | undefined {
    const ref = this.refOf(uri);
    return ref && this.campaigns().find((c) => c.campaign.playPath === ref.playPath)?.campaign.root;
  }

  /** Each adventure's current branch, as documents: what Find All References searches in play. */
  headTranscripts(entry: TranscriptCampaign): { uri: vscode.Uri; text: string }[] {
    const store = this.readers.get(entry.campaign.playPath);
    if (!store) return [];
    return store.listAdventures(entry.campaign.id).flatMap((adventure) => {
      const headTurnId = adventure.headTurnId;
      const branch = headTurnId ? this.branch(entry.campaign.playPath, headTurnId) : undefined;
      return branch && headTurnId ? [{ uri: this.uriFor(entry.campaign.playPath, adventure, headTurnId), text: branch.markdown }] : [];
    });
  }

  private refOf(uri: vscode.Uri): BranchRef | undefined {
    try {
      const ref = JSON.parse(uri.query) as Partial<BranchRef>;
      return typeof ref.playPath === 'string' && typeof ref.turnId === 'string' ? { playPath: ref.playPath, turnId: ref.turnId } : undefined;
    } catch {
      return undefined;
    }
  }

  private branch(playPath: string, turnId: string): { adventure: Adventure; turns: Turn[]; markdown: string } | undefined {
    const store = this.readers.get(playPath);
    const turn = store?.getTurn(turnId);
    const adventure = turn && store?.getAdventure(turn.adventureId);
    if (!store || !adventure) return undefined;
    const turns = store.lineage(turnId);
    const campaignTitle = this.campaigns().find((c) => c.campaign.playPath === playPath)?.campaign.title ?? '';
    return { adventure, turns, markdown: transcriptMarkdown(adventure, turns, campaignTitle) };
  }

  /** Writes the branch (a turn's, or an adventure's current one) to `target`, or where the writer chooses. */
  private async export(node: BranchNode | undefined, target: vscode.Uri | undefined): Promise<vscode.Uri | undefined> {
    const picked = node ?? (await this.pickAdventure());
    if (!picked) return undefined;
    const turnId = picked.turn?.id ?? picked.adventure.headTurnId;
    const branch = turnId ? this.branch(picked.playPath, turnId) : undefined;
    if (!branch) {
      void vscode.window.showInformationMessage(`${picked.adventure.title} has no turns yet: there is no transcript to export.`);
      return undefined;
    }
    const campaign = this.campaigns().find((c) => c.campaign.playPath === picked.playPath)?.campaign;
    // Beside the campaign, not inside it: a transcript in the campaign folder would be indexed as knowledge.
    const folder = campaign ? path.dirname(campaign.root) : undefined;
    const fileName = `${branch.adventure.title.replace(/[\\/:*?"<>|#%]+/g, ' ').trim() || 'Adventure'} transcript.md`;
    const uri =
      target ??
      (await vscode.window.showSaveDialog({
        title: `Export the transcript of ${branch.adventure.title} (${plural(branch.turns.length, 'turn')})`,
        defaultUri: folder ? vscode.Uri.file(path.join(folder, fileName)) : undefined,
        filters: { Markdown: ['md'] },
      }));
    if (!uri) return undefined;
    try {
      replaceFile(uri.fsPath, branch.markdown);
    } catch (error) {
      void vscode.window.showErrorMessage(`The transcript could not be written to ${uri.fsPath}: ${(error as Error).message}`);
      return undefined;
    }
    await vscode.window.showTextDocument(uri, { preview: false });
    void vscode.window.showInformationMessage(`Transcript of ${branch.adventure.title} (${plural(branch.turns.length, 'turn')}) written to ${uri.fsPath}.`);
    return uri;
  }

  private async pickAdventure(): Promise<BranchNode | undefined> {
    const items = this.campaigns().flatMap(({ campaign }) =>
      (this.readers.get(campaign.playPath)?.listAdventures(campaign.id) ?? []).map((adventure) => ({
        label: adventure.title,
        description: campaign.title,
        node: { playPath: campaign.playPath, adventure },
      })),
    );
    if (items.length === 0) {
      void vscode.window.showInformationMessage('No adventure has been played yet: there is no transcript to export.');
      return undefined;
    }
    return (await vscode.window.showQuickPick(items, { title: 'Export the transcript of which adventure?' }))?.node;
  }
}
