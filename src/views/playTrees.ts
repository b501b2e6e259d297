import * as vscode from 'vscode';
import type { CandidateDecision } from '../knowledge/retrieval';
import type { PlayStore } from '../story/playStore';
import type { Adventure, ContextSection, PromptSnapshot, Turn } from '../story/types';
import type { CampaignRegistry } from './campaigns';
import type { KnowledgeService } from './knowledgeService';
import { CLASS_LABEL } from './sourcesTree';
import { TreeProvider } from './treeProvider';

/** The play stores the trees read: each campaign session's own, once its play.db exists. */
export class PlayReaders {
  constructor(private readonly knowledge: KnowledgeService) {}

  get(campaignPlayPath: string): PlayStore | undefined {
    return this.knowledge.list().find((index) => index.campaign.playPath === campaignPlayPath)?.session.playIfAny;
  }
}

const oneLine = (text: string, max = 60): string => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
};

export type AdventuresNode =
  | { kind: 'adventure'; playPath: string; campaignTitle: string; adventure: Adventure }
  | { kind: 'turn'; playPath: string; adventure: Adventure; turn: Turn; onHead: boolean; branches: number };

/** Adventures view: each campaign's adventures, and under each the turns of every branch as a tree. */
export class AdventuresTree extends TreeProvider<AdventuresNode> {
  constructor(
    private readonly campaigns: CampaignRegistry,
    private readonly knowledge: KnowledgeService,
    private readonly readers: PlayReaders,
    onDidPlay: vscode.Event<unknown>,
  ) {
    super('storyteller.adventures', [campaigns.onDidChange, onDidPlay]);
  }

  getChildren(node?: AdventuresNode): AdventuresNode[] {
    if (!node) {
      return this.knowledge.list().flatMap((index) => {
        const store = this.readers.get(index.campaign.playPath);
        return (store?.listAdventures(index.campaign.id) ?? []).map((adventure) => ({
          kind: 'adventure' as const,
          playPath: index.campaign.playPath,
          campaignTitle: index.campaign.title,
          adventure,
        }));
      });
    }
    const store = this.readers.get(node.playPath);
    if (!store) return [];
    const adventure = store.adventure(node.adventure.id);
    const head = new Set(store.lineage(adventure.headTurnId).map((t) => t.id));
    const parentId = node.kind === 'adventure' ? null : node.turn.id;
    return store.children(adventure.id, parentId).map((turn) => ({
      kind: 'turn' as const,
      playPath: node.playPath,
      adventure,
      turn,
      onHead: head.has(turn.id),
      branches: store.children(adventure.id, turn.id).length,
    }));
  }

  getTreeItem(node: AdventuresNode): vscode.TreeItem {
    if (node.kind === 'adventure') {
      const item = new vscode.TreeItem(node.adventure.title, vscode.TreeItemCollapsibleState.Collapsed);
      item.id = `adventure:${node.adventure.id}`;
      item.description = node.campaignTitle;
      item.iconPath = new vscode.ThemeIcon('book');
      item.contextValue = 'adventure';
      return item;
    }
    const { turn } = node;
    const item = new vscode.TreeItem(oneLine(turn.action.text), node.branches > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
    item.id = `turn:${turn.id}`;
    item.description = [turn.status !== 'complete' ? turn.status : '', node.branches > 1 ? `${node.branches} branches` : '', oneLine(turn.narration, 40)].filter(Boolean).join(' · ');
    item.tooltip = `${turn.action.kind}: ${turn.action.text}\n\n${turn.narration}`;
    item.iconPath = new vscode.ThemeIcon(node.onHead ? 'circle-filled' : 'circle-outline');
    item.command = { command: 'storyteller.showProvenance', title: 'Show Provenance', arguments: [node.playPath, turn.id] };
    item.contextValue = 'turn';
    return item;
  }
}

export type ProvenanceNode =
  | { kind: 'section'; section: ContextSection; snapshot: PromptSnapshot }
  | { kind: 'passage'; decision: CandidateDecision }
  | { kind: 'item'; label: string; reason: string }
  | { kind: 'excluded'; decisions: CandidateDecision[] };

/** Turn provenance: what one turn was sent, section by section, which passages were used and which were left out, and why. */
export class ProvenanceTree extends TreeProvider<ProvenanceNode> {
  private snapshot: PromptSnapshot | undefined;

  constructor(private readonly readers: PlayReaders) {
    super('storyteller.provenance', []);
  }

  /** The snapshot shown, for "why not?". */
  get current(): PromptSnapshot | undefined {
    return this.snapshot;
  }

  show(playPath: string, turnId: string): boolean {
    this.snapshot = this.readers.get(playPath)?.getSnapshot(turnId);
    this.view.description = this.snapshot ? `${this.snapshot.totalTokens} tokens · ${this.snapshot.model ?? 'no model'}` : 'no prompt was sent for this turn';
    this.refresh();
    return this.snapshot !== undefined;
  }

  getChildren(node?: ProvenanceNode): ProvenanceNode[] {
    const snapshot = this.snapshot;
    if (!snapshot) return [];
    const decisions = new Map(snapshot.retrieval.candidates.map((c) => [c.passageId, c]));
    if (!node) {
      const excluded = snapshot.retrieval.candidates.filter((c) => c.outcome !== 'selected');
      return [
        ...snapshot.sections.map((section) => ({ kind: 'section' as const, section, snapshot })),
        ...(excluded.length > 0 ? [{ kind: 'excluded' as const, decisions: excluded }] : []),
      ];
    }
    if (node.kind === 'section') {
      const used = node.section.itemIds.map((id): ProvenanceNode => {
        const decision = decisions.get(id);
        return decision ? { kind: 'passage', decision } : { kind: 'item', label: id, reason: 'used' };
      });
      const leftOut = node.section.leftOut.map((l): ProvenanceNode => {
        const decision = decisions.get(l.id);
        return decision ? { kind: 'passage', decision: { ...decision, reason: l.reason } } : { kind: 'item', label: l.id, reason: `left out: ${l.reason}` };
      });
      return [...used, ...leftOut];
    }
    if (node.kind === 'excluded') return node.decisions.map((decision) => ({ kind: 'passage', decision }));
    return [];
  }

  getTreeItem(node: ProvenanceNode): vscode.TreeItem {
    switch (node.kind) {
      case 'section': {
        const s = node.section;
        const item = new vscode.TreeItem(s.title, s.itemIds.length + s.leftOut.length > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
        const superseded = s.superseded?.length ?? 0;
        item.description = `${s.tokens}${s.budget === null ? '' : ` / ${s.budget}`} tokens${s.leftOut.length > 0 ? ` · ${s.leftOut.length} left out` : ''}${superseded > 0 ? ` · ${superseded} canon line${superseded === 1 ? '' : 's'} superseded in play` : ''}`;
        item.tooltip = s.text;
        item.iconPath = new vscode.ThemeIcon(s.stable ? 'lock' : 'symbol-event');
        return item;
      }
      case 'excluded': {
        const item = new vscode.TreeItem('Candidates left out', vscode.TreeItemCollapsibleState.Collapsed);
        item.description = `${node.decisions.length}`;
        item.iconPath = new vscode.ThemeIcon('filter');
        return item;
      }
      case 'item': {
        const item = new vscode.TreeItem(node.label);
        item.description = node.reason;
        return item;
      }
      case 'passage': {
        const d = node.decision;
        const trail = d.headingPath.length > 0 ? ` › ${d.headingPath.join(' › ')}` : '';
        const item = new vscode.TreeItem(`${d.sourceTitle}${trail}`);
        const score = d.score === null ? 'not admitted' : `score ${d.score.toFixed(2)}`;
        item.description = `${CLASS_LABEL[d.class]} · ${score} · ${d.outcome}`;
        item.tooltip = `${d.sourcePath}\n${d.outcome}: ${d.reason}`;
        item.iconPath = new vscode.ThemeIcon(d.outcome === 'selected' ? 'pass' : 'circle-slash');
        item.contextValue = 'provenancePassage';
        return item;
      }
    }
  }
}
