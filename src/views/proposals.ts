import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { ToolChatClient } from '../models';
import {
  listDiscarded,
  proposeCanonUpdates,
  recordDiscarded,
  restoreDiscarded,
  settleAnswer,
  type CanonProposal,
  type DiscardedProposal,
  type ProposalSet,
  type RefusedProposal,
} from '../story';
import type { Adventure } from '../story';
import type { Db } from '../knowledge/indexing';
import { Disposable } from './disposable';
import type { KnowledgeService } from './knowledgeService';
import type { AdventuresNode } from './playTrees';
import { plural } from './words';
import { trustedFor } from './workspaceTrust';

/**
 * Propose Canon Updates…: the canon edits an adventure's branch implies, as ONE WorkspaceEdit in VS Code's
 * refactor preview, each change labelled with its turn and reason and needing confirmation. Nothing is
 * written until the writer applies it; applied files are saved (a refactoring) and reindexed by the file
 * watcher, the conflicts they settle are cleared, and whatever the writer left out is remembered as
 * discarded so it is not proposed again for the same turns.
 */

export const PROPOSE_COMMAND = 'storyteller.proposeCanonUpdates';
export const DISCARDED_PROPOSALS_COMMAND = 'storyteller.showDiscardedProposals';

type ProposalNode = Extract<AdventuresNode, { kind: 'adventure' | 'turn' }>;

/** A model that drafts through tools, when one is configured; the deterministic rules run without it. */
export type ProposalDrafter = () => { client: ToolChatClient; model: string } | undefined;

export interface ProposalOutcome {
  set: ProposalSet;
  applied: CanonProposal[];
  discarded: CanonProposal[];
}

/** Every refused edit with its reason, as a notification names them (the log has them too, with the drafter's reason). */
function refusedText(refused: readonly RefusedProposal[]): string {
  if (refused.length === 0) return '';
  const each = refused.map((r) => `${r.file || '(no file)'}: ${r.refusal.length > 160 ? `${r.refusal.slice(0, 159)}…` : r.refusal}`);
  return ` ${refused.length} drafted edit${refused.length === 1 ? ' was' : 's were'} refused — ${each.join('; ')}.`;
}

const uriOf = (root: string, relPath: string) => vscode.Uri.file(path.join(root, ...relPath.split('/')));

export class ProposalCommands extends Disposable {
  constructor(
    private readonly knowledge: KnowledgeService,
    private readonly log: vscode.LogOutputChannel,
    private readonly drafter: ProposalDrafter = () => undefined,
  ) {
    super();
    this._register(vscode.commands.registerCommand(PROPOSE_COMMAND, (node?: ProposalNode) => this.propose(node)));
    this._register(vscode.commands.registerCommand(DISCARDED_PROPOSALS_COMMAND, (node?: ProposalNode) => this.showDiscarded(node)));
  }

  /** A file's text as the writer sees it: an open editor's buffer (unsaved edits too), else the disk. */
  private read(root: string): (relPath: string) => string | undefined {
    return (relPath) => {
      const uri = uriOf(root, relPath).toString();
      const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
      if (open) return open.getText();
      try {
        return fs.readFileSync(vscode.Uri.parse(uri).fsPath, 'utf8').replace(/^\uFEFF/, '');
      } catch {
        return undefined;
      }
    };
  }

  async propose(node?: ProposalNode): Promise<ProposalOutcome | undefined> {
    if (!trustedFor('Propose Canon Updates')) return undefined;
    const picked = node ?? (await this.pickAdventure());
    if (!picked) return undefined;
    const index = this.knowledge.list().find((i) => i.campaign.playPath === picked.playPath);
    const play = index?.session.playIfAny;
    if (!index || !play) return undefined;
    const campaign = index.campaign;
    const adventure = play.adventure(picked.adventure.id);
    const read = this.read(campaign.root);
    const drafter = this.drafter();
    const abort = new AbortController();
    let set: ProposalSet;
    try {
      set = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `Reading ${adventure.title} for canon changes${drafter ? ` (${drafter.model} drafts)` : ''}…`, cancellable: true },
        (_progress, token) => {
          token.onCancellationRequested(() => abort.abort());
          return proposeCanonUpdates(
            { campaign, store: index.session.store, play, adventure, ...(picked.kind === 'turn' ? { turnId: picked.turn.id } : {}) },
            { read, signal: abort.signal, ...(drafter ? { client: drafter.client, model: drafter.model } : {}) },
          );
        },
      );
    } catch (error) {
      if (!abort.signal.aborted) throw error;
      void vscode.window.showInformationMessage(`Propose Canon Updates cancelled: nothing was proposed from ${adventure.title}.`);
      return undefined;
    }
    this.log.info(`Propose Canon Updates (${adventure.title}): ${set.proposals.length} proposed — ${set.drafting}`);
    for (const r of set.refused) this.log.warn(`refused proposal for ${r.file || '(no file)'}: ${r.refusal}${r.reason ? ` — ${r.reason}` : ''}`);
    const drafting = ` Drafting: ${set.drafting}.`;
    if (set.proposals.length === 0) {
      const before = set.discardedBefore > 0 ? ` (${plural(set.discardedBefore, 'proposal')} you discarded before ${set.discardedBefore === 1 ? 'is' : 'are'} left out)` : '';
      const show = 'Show Discarded';
      void vscode.window.showInformationMessage(`The canon already agrees with ${adventure.title}: nothing to propose${before}.${drafting}${refusedText(set.refused)}`, ...(set.discardedBefore > 0 ? [show] : [])).then((answer) => {
        if (answer === show) void this.showDiscarded();
      });
      return { set, applied: [], discarded: [] };
    }
    // Shown while the preview is open: what was refused is not in it, and the writer should know why.
    if (set.refused.length > 0) void vscode.window.showWarningMessage(`Propose Canon Updates for ${adventure.title}:${refusedText(set.refused)}`);
    const edit = await this.workspaceEdit(campaign.root, campaign.playPath, set.proposals);
    // A buffer with the writer's own unsaved edits stays theirs to save.
    const dirtyBefore = new Set(vscode.workspace.textDocuments.filter((d) => d.isDirty).map((d) => d.uri.toString()));
    const answered = await vscode.workspace.applyEdit(edit, { isRefactoring: true });
    if (!answered) {
      // Discard in the preview, or nothing ticked: a misclick must not lose them, so discarding is asked for.
      this.offerDiscard(play.db, campaign.id, adventure, set.proposals, drafting);
      return { set, applied: [], discarded: [] };
    }
    // What the writer kept is what the files now hold: what they unticked is refused, and remembered as discarded.
    const { applied, discarded } = settleAnswer(play.db, campaign.id, adventure.id, set.proposals, read);
    const files = [...new Set(applied.map((p) => p.file))];
    // A refactoring saves what it changed (files.refactoring.autoSave); when that is off, the writer's yes still reaches the disk and the index.
    for (const file of files) {
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uriOf(campaign.root, file).toString());
      if (doc?.isDirty && !dirtyBefore.has(doc.uri.toString())) await doc.save();
    }
    const summary = `Applied ${applied.length} canon edit${applied.length === 1 ? '' : 's'} from ${adventure.title} to ${files.join(', ')}.`;
    if (discarded.length === 0) {
      void vscode.window.showInformationMessage(`${summary}${drafting}`);
    } else {
      const undo = 'Undo Discard';
      void vscode.window.showInformationMessage(`${summary} ${plural(discarded.length, 'edit')} you unticked ${discarded.length === 1 ? 'is' : 'are'} discarded: not proposed again for the same turns.${drafting}`, undo).then((answer) => {
        if (answer === undo) this.restore(play.db, campaign.id, adventure, discarded);
      });
    }
    return { set, applied, discarded };
  }

  /** After nothing was applied: the proposals stay, and the writer may discard them on purpose. */
  private offerDiscard(playDb: Db, campaignId: string, adventure: Adventure, proposals: readonly CanonProposal[], drafting: string): void {
    const discard = 'Discard Them';
    void vscode.window
      .showInformationMessage(`Nothing was written from ${adventure.title}: the ${plural(proposals.length, 'proposal')} will be proposed again next time. Discard ${proposals.length === 1 ? 'it' : 'them'} for good instead?${drafting}`, discard)
      .then((answer) => {
        if (answer !== discard) return;
        recordDiscarded(playDb, campaignId, adventure.id, proposals);
        const undo = 'Undo Discard';
        void vscode.window.showInformationMessage(`Discarded ${plural(proposals.length, 'canon proposal')} from ${adventure.title}: not proposed again for the same turns (Discarded Canon Proposals… lists them).`, undo).then((again) => {
          if (again === undo) this.restore(playDb, campaignId, adventure, proposals);
        });
      });
  }

  private restore(playDb: Db, campaignId: string, adventure: Adventure, proposals: readonly Pick<CanonProposal, 'key'>[]): void {
    const restored = restoreDiscarded(playDb, campaignId, proposals.map((p) => ({ adventureId: adventure.id, key: p.key })));
    void vscode.window.showInformationMessage(`${plural(restored, 'discarded proposal')} from ${adventure.title} will be proposed again.`);
  }

  /** Lists the discarded proposals of an adventure (every open campaign's without one); the ones the writer picks are proposed again. */
  async showDiscarded(node?: ProposalNode): Promise<DiscardedProposal[]> {
    const items = this.knowledge.list().flatMap((index) => {
      const play = index.session.playIfAny;
      if (!play || (node && index.campaign.playPath !== node.playPath)) return [];
      const titles = new Map(play.listAdventures(index.campaign.id).map((a) => [a.id, a.title]));
      return listDiscarded(play.db, index.campaign.id, node?.adventure.id).map((discard) => ({
        label: `${titles.get(discard.adventureId) ?? 'A deleted adventure'}: ${discard.reason}`,
        description: discard.file,
        detail: `${index.campaign.title} · discarded ${new Date(discard.at).toLocaleString()}`,
        discard,
        playDb: play.db,
        campaignId: index.campaign.id,
      }));
    });
    if (items.length === 0) {
      void vscode.window.showInformationMessage(`No canon proposal${node ? ` from ${node.adventure.title}` : ''} has been discarded: there is nothing to bring back.`);
      return [];
    }
    const picked = await vscode.window.showQuickPick(items, { title: 'Discarded canon proposals: tick the ones to propose again', canPickMany: true, matchOnDescription: true, matchOnDetail: true });
    if (!picked || picked.length === 0) return [];
    for (const item of picked) restoreDiscarded(item.playDb, item.campaignId, [item.discard]);
    void vscode.window.showInformationMessage(`${plural(picked.length, 'discarded proposal')} will be proposed again: run Propose Canon Updates… on ${picked.length === 1 ? 'its adventure' : 'their adventures'}.`);
    return picked.map((item) => item.discard);
  }

  /** One edit for every proposal, each entry labelled with its turn and reason and needing the writer's confirmation. */
  private async workspaceEdit(root: string, playPath: string, proposals: readonly CanonProposal[]): Promise<vscode.WorkspaceEdit> {
    const edit = new vscode.WorkspaceEdit();
    // The preview opens only for an entry that needs confirmation, and it shows such entries unticked. This one
    // creates a file that exists, with ignoreIfExists: the preview leaves it out and it never writes, so the
    // proposals themselves are offered ticked and the writer unticks what they refuse.
    edit.createFile(vscode.Uri.file(playPath), { ignoreIfExists: true }, { label: 'Review the proposed canon edits', needsConfirmation: true });
    // Grouped by file: each file's changes together, in the order they stand in it.
    const byFile = new Map<string, CanonProposal[]>();
    for (const p of proposals) byFile.set(p.file, [...(byFile.get(p.file) ?? []), p]);
    for (const [file, list] of byFile) {
      const uri = uriOf(root, file);
      // The document the edit applies to: its buffer is what the proposals were checked against.
      const doc = list.some((p) => p.oldText !== '') ? await vscode.workspace.openTextDocument(uri) : undefined;
      for (const p of list) {
        const turns = p.turns.length > 0 ? `Turn ${p.turns.map((t) => t.number).join(', ')}` : 'Settled conflict';
        const metadata: vscode.WorkspaceEditEntryMetadata = { label: `${turns}: ${p.reason}`, description: [...(p.origin === 'model' ? ['drafted by the model'] : []), ...(p.dropped ? [`front matter left out: ${p.dropped.fields.join(', ')} — ${p.dropped.reason}`] : []), ...p.evidence].join(' · '), needsConfirmation: false };
        if (p.oldText === '') {
          edit.createFile(uri, { overwrite: false, ignoreIfExists: false, contents: Buffer.from(p.newText, 'utf8') }, metadata);
          continue;
        }
        const at = doc!.getText().indexOf(p.oldText);
        edit.replace(uri, new vscode.Range(doc!.positionAt(at), doc!.positionAt(at + p.oldText.length)), p.newText, metadata);
      }
    }
    return edit;
  }

  private async pickAdventure(): Promise<ProposalNode | undefined> {
    const items = this.knowledge.list().flatMap((index) =>
      (index.session.playIfAny?.listAdventures(index.campaign.id) ?? []).map((adventure: Adventure) => ({
        label: adventure.title,
        description: index.campaign.title,
        node: { kind: 'adventure' as const, playPath: index.campaign.playPath, campaignTitle: index.campaign.title, adventure, latest: false },
      })),
    );
    if (items.length === 0) {
      void vscode.window.showInformationMessage('No adventure has been played yet: there is nothing to propose to the canon.');
      return undefined;
    }
    return (await vscode.window.showQuickPick(items, { title: 'Propose canon updates from which adventure?' }))?.node;
  }
}
