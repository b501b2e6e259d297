import path from 'node:path';
import * as vscode from 'vscode';
import { locate, OUTCOME_WORDS, whyNot, worldInfoItems, worldInfoLines, type CandidateDecision, type WorldInfoRecord } from '../knowledge/retrieval';
import type { PlayStore } from '../story/playStore';
import { branchesOf, type Branch } from '../story/branches';
import { playItemName, sectionLabel } from '../story/contextReport';
import type { Adventure, ContextSection, PromptSnapshot, Turn } from '../story/types';
import type { ResearchRecord } from '../story/types';
import { researchHeadline, researchLines, researchStepWords } from '../story/contextReport';
import { passageName } from '../story/research';
import type { CampaignRegistry } from './campaigns';
import type { KnowledgeService } from './knowledgeService';
import type { PassageNode } from './passagesTree';
import { CLASS_LABEL, sourceUri } from './sourcesTree';
import { TreeProvider } from './treeProvider';
import { shortLines } from './words';

/** Characters a Why Not? row holds in a side bar at its default width. */
const WHY_NOT_ROW_WIDTH = 34;

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
  /** `latest`: the campaign's adventure played last, shown open. */
  | { kind: 'adventure'; playPath: string; campaignTitle: string; adventure: Adventure; latest: boolean }
  | { kind: 'branch'; playPath: string; adventure: Adventure; branch: Branch; number: number }
  | { kind: 'turn'; playPath: string; adventure: Adventure; turn: Turn; onHead: boolean };

/**
 * Adventures view: each campaign's adventures; under each its branches, the one being played first; under
 * a branch its turns as one flat run, so a long session reads as a list and a fork as a new branch.
 */
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
        return (store?.listAdventures(index.campaign.id) ?? []).map((adventure, i) => ({
          kind: 'adventure' as const,
          playPath: index.campaign.playPath,
          campaignTitle: index.campaign.title,
          adventure,
          latest: i === 0,
        }));
      });
    }
    const store = this.readers.get(node.playPath);
    if (!store || node.kind === 'turn') return [];
    const adventure = store.adventure(node.adventure.id);
    if (node.kind === 'adventure') {
      return branchesOf(store.allTurns(adventure.id), adventure.headTurnId).map((branch, i) => ({ kind: 'branch' as const, playPath: node.playPath, adventure, branch, number: i + 1 }));
    }
    const head = new Set(store.lineage(adventure.headTurnId).map((t) => t.id));
    return node.branch.turns.map((turn) => ({ kind: 'turn' as const, playPath: node.playPath, adventure, turn, onHead: head.has(turn.id) }));
  }

  getTreeItem(node: AdventuresNode): vscode.TreeItem {
    if (node.kind === 'adventure') {
      const item = new vscode.TreeItem(node.adventure.title, node.latest ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed);
      item.id = `adventure:${node.adventure.id}`;
      item.description = node.campaignTitle;
      item.iconPath = new vscode.ThemeIcon('book');
      item.contextValue = 'adventure';
      return item;
    }
    if (node.kind === 'branch') {
      const { branch } = node;
      const label = branch.current ? 'Current story' : `Branch ${node.number}: ${oneLine(branch.turns[0]!.action.text, 40)}`;
      const item = new vscode.TreeItem(label, branch.current ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed);
      item.id = `branch:${branch.id}`;
      const count = `${branch.turns.length} turn${branch.turns.length === 1 ? '' : 's'}`;
      const from = branch.forkedAfter ? `after turn ${branch.forkedAfter.depth + 1} (${oneLine(branch.forkedAfter.action.text, 30)})` : 'from the start';
      item.description = `${count} · ${from}`;
      item.tooltip = `${label}\n${count}, ${from}`;
      item.iconPath = new vscode.ThemeIcon(branch.current ? 'debug-stackframe' : 'git-branch');
      item.contextValue = 'branch';
      return item;
    }
    const { turn } = node;
    const item = new vscode.TreeItem(`${turn.depth + 1}. ${oneLine(turn.action.text)}`, vscode.TreeItemCollapsibleState.None);
    item.id = `turn:${turn.id}`;
    item.description = [turn.status !== 'complete' ? turn.status : '', oneLine(turn.narration, 40)].filter(Boolean).join(' · ');
    item.tooltip = `${turn.action.kind}: ${turn.action.text}\n\n${turn.narration}`;
    item.iconPath = new vscode.ThemeIcon(node.onHead ? 'circle-filled' : 'circle-outline');
    item.command = { command: 'storyteller.showProvenance', title: 'Show Provenance', arguments: [node.playPath, turn.id] };
    item.contextValue = 'turn';
    return item;
  }
}

/** A decision's reason without the outcome it restates (records played before #13 say "not relevant: …"), never empty. */
export function plainReason(decision: Pick<CandidateDecision, 'outcome' | 'reason'>): string {
  const reason = decision.reason.replace(/^not relevant:\s*/, '').trim();
  if (reason) return reason;
  return decision.outcome === 'not-relevant' ? 'no word of the turn matched it' : OUTCOME_WORDS[decision.outcome];
}

/** The core's "why not" answer ("over-budget: …") with its outcome in words. */
function plainAnswer(answer: string): string {
  const [, outcome, rest] = /^([a-z-]+): (.*)$/s.exec(answer) ?? [];
  return outcome && outcome in OUTCOME_WORDS ? `${OUTCOME_WORDS[outcome as CandidateDecision['outcome']]}: ${plainReason({ outcome: outcome as CandidateDecision['outcome'], reason: rest! })}` : answer;
}

export type ProvenanceNode =
  | { kind: 'section'; section: ContextSection; snapshot: PromptSnapshot }
  | { kind: 'passage'; decision: CandidateDecision }
  | { kind: 'item'; label: string; reason: string }
  | { kind: 'excluded'; decisions: CandidateDecision[] }
  | { kind: 'worldInfo'; record: WorldInfoRecord }
  | { kind: 'whyNot'; question: string; answer: string }
  | { kind: 'whyNotLine'; line: string; answer: string }
  | { kind: 'research'; record: ResearchRecord };

/** Turn provenance: what one turn was sent, section by section, which passages were used and which were left out, and why. */
export class ProvenanceTree extends TreeProvider<ProvenanceNode> {
  private shown: { playPath: string; turn: Turn | undefined; snapshot: PromptSnapshot } | undefined;
  private answer: Extract<ProvenanceNode, { kind: 'whyNot' }> | undefined;

  constructor(
    private readonly readers: PlayReaders,
    private readonly knowledge: KnowledgeService,
  ) {
    super('storyteller.provenance', []);
  }

  /** The snapshot shown, for "why not?". */
  get current(): PromptSnapshot | undefined {
    return this.shown?.snapshot;
  }

  show(playPath: string, turnId: string): boolean {
    const store = this.readers.get(playPath);
    const snapshot = store?.getSnapshot(turnId);
    const turn = store?.getTurn(turnId);
    this.shown = snapshot ? { playPath, turn, snapshot } : undefined;
    this.answer = undefined;
    const name = turn ? `Turn ${turn.depth + 1}: ${oneLine(turn.action.text, 40)}` : 'this turn';
    this.view.description = snapshot ? `${name} · ${snapshot.totalTokens} tokens · ${snapshot.model ?? 'no model'}` : `no prompt was sent for ${name}`;
    this.refresh();
    return snapshot !== undefined;
  }

  /**
   * "Why not?" for a passage, answered for the turn shown: the answer goes at the top of this view, where
   * it stays readable (and in its hover), and the view is brought forward.
   */
  async whyNot(clicked?: PassageNode): Promise<string | undefined> {
    const snapshot = this.current;
    const node = clicked ?? (snapshot && this.shown ? await this.pickPassage(this.shown.playPath, snapshot) : undefined);
    const store = node && this.knowledge.get(node.root)?.store;
    if (!snapshot || !store || !node) {
      if (!snapshot) void vscode.window.showInformationMessage('Select a turn in the Adventures view first: "why not?" answers for that turn.');
      return undefined;
    }
    const answer = plainAnswer(whyNot(store, snapshot.retrieval, node.passage.id));
    const trail = node.passage.headingPath.filter((h) => h !== node.source.title);
    this.answer = { kind: 'whyNot', question: `Why not ${[node.source.title, ...trail].join(' › ')}?`, answer };
    this.refresh();
    await vscode.commands.executeCommand('storyteller.provenance.focus');
    return answer;
  }

  /** From the palette: the turn's candidate passages, those left out first, to ask about one. */
  private async pickPassage(playPath: string, snapshot: PromptSnapshot): Promise<PassageNode | undefined> {
    // play.db sits in the campaign's data folder: <campaign>/.storyteller/play.db.
    const root = path.dirname(path.dirname(playPath));
    const store = this.knowledge.get(root)?.store;
    if (!store) return undefined;
    const candidates = [...snapshot.retrieval.candidates].sort((a, b) => Number(a.outcome === 'selected') - Number(b.outcome === 'selected'));
    const picked = await vscode.window.showQuickPick(
      candidates.map((d) => ({ label: [d.sourceTitle, ...(d.headingPath[0] === d.sourceTitle ? d.headingPath.slice(1) : d.headingPath)].join(' › '), description: `${locate(d)} · ${OUTCOME_WORDS[d.outcome]}`, decision: d })),
      { title: 'Why not? Choose a passage of the campaign', placeHolder: 'Passages this turn considered; those left out first' },
    );
    const source = picked && store.getSourceByPath(picked.decision.sourcePath);
    const passage = picked && store.getPassage(picked.decision.passageId);
    return source && passage ? { root, source, passage } : undefined;
  }

  /** A title for something a section used that is not a retrieved passage: a turn, a memory, the summary. */
  private describeItem(id: string): string {
    return playItemName(this.shown && this.readers.get(this.shown.playPath), this.shown?.turn?.adventureId, id);
  }

  /**
   * A click on a passage opens its file at the passage's first line. Turns recorded before decisions kept
   * their lines find it in the index; a passage since edited away opens its file at the top.
   */
  private openAt(decision: CandidateDecision): vscode.Command | undefined {
    if (!this.shown) return undefined;
    // play.db sits in the campaign's data folder: <campaign>/.storyteller/play.db.
    const root = path.dirname(path.dirname(this.shown.playPath));
    const line = decision.startLine ?? this.knowledge.get(root)?.store?.getPassage(decision.passageId)?.startLine ?? 1;
    const at = new vscode.Range(line - 1, 0, line - 1, 0);
    return { command: 'vscode.open', title: 'Open Passage', arguments: [sourceUri(root, { path: decision.sourcePath }), { selection: at, preview: true }] };
  }

  getChildren(node?: ProvenanceNode): ProvenanceNode[] {
    const snapshot = this.current;
    if (!snapshot) return [];
    const decisions = new Map(snapshot.retrieval.candidates.map((c) => [c.passageId, c]));
    if (node?.kind === 'whyNot') return node.answer.split(/(?<=[.;:])\s+/).flatMap((sentence) => shortLines(sentence, WHY_NOT_ROW_WIDTH)).map((line) => ({ kind: 'whyNotLine' as const, line, answer: node.answer }));
    if (!node) {
      const excluded = snapshot.retrieval.candidates.filter((c) => c.outcome !== 'selected');
      return [
        ...(this.answer ? [this.answer] : []),
        ...(snapshot.research ? [{ kind: 'research' as const, record: snapshot.research }] : []),
        ...snapshot.sections.map((section) => ({ kind: 'section' as const, section, snapshot })),
        ...(excluded.length > 0 ? [{ kind: 'excluded' as const, decisions: excluded }] : []),
        ...(snapshot.retrieval.worldInfo ? [{ kind: 'worldInfo' as const, record: snapshot.retrieval.worldInfo }] : []),
      ];
    }
    if (node.kind === 'worldInfo') return worldInfoItems(node.record).items.map((i): ProvenanceNode => ({ kind: 'item', label: i.label, reason: i.detail }));
    if (node.kind === 'section') {
      const used = node.section.itemIds.map((id): ProvenanceNode => {
        const decision = decisions.get(id);
        return decision ? { kind: 'passage', decision } : { kind: 'item', label: this.describeItem(id), reason: 'used' };
      });
      const leftOut = node.section.leftOut.map((l): ProvenanceNode => {
        const decision = decisions.get(l.id);
        return decision ? { kind: 'passage', decision: { ...decision, reason: l.reason } } : { kind: 'item', label: this.describeItem(l.id), reason: `left out: ${l.reason}` };
      });
      // World Info among the recent turns: not one of the section's items, still sent in it, at its depth.
      const placed = (node.section.worldInfo ?? [])
        .filter((w) => !node.section.itemIds.includes(w.id))
        .flatMap((w): ProvenanceNode[] => {
          const decision = decisions.get(w.id);
          return decision ? [{ kind: 'passage', decision: { ...decision, reason: `World Info, ${w.where}` } }] : [];
        });
      return [...used, ...placed, ...leftOut];
    }
    if (node.kind === 'excluded') return node.decisions.map((decision) => ({ kind: 'passage', decision }));
    if (node.kind === 'research') {
      const r = node.record;
      const named = (id: string) => {
        const d = decisions.get(id);
        return d ? passageName(d) : (r.names?.[id] ?? id);
      };
      return [
        { kind: 'item', label: 'Why', reason: r.reason },
        ...r.steps.map((step): ProvenanceNode => ({ kind: 'item', label: `${step.round}. ${oneLine(researchStepWords(step, named), 60)}`, reason: `${step.outcome === 'refused' ? 'refused: ' : ''}${step.said}` })),
        ...r.kept.map((k): ProvenanceNode => ({ kind: 'item', label: `Kept ${named(k.id)}`, reason: k.reason || 'no reason given' })),
        ...r.refused.map((x): ProvenanceNode => ({ kind: 'item', label: `Refused ${oneLine(named(x.id), 60)}`, reason: x.reason })),
        ...r.limits.map((limit): ProvenanceNode => ({ kind: 'item', label: 'Limit reached', reason: limit })),
      ];
    }
    return [];
  }

  getTreeItem(node: ProvenanceNode): vscode.TreeItem {
    switch (node.kind) {
      case 'whyNot': {
        // The answer is its rows below the question: a description is cut off at the view's width.
        const item = new vscode.TreeItem(node.question, vscode.TreeItemCollapsibleState.Expanded);
        item.tooltip = new vscode.MarkdownString().appendText(`${node.question}\n\n${node.answer}`);
        item.iconPath = new vscode.ThemeIcon('question');
        return item;
      }
      case 'section': {
        const s = node.section;
        // A short label the side bar never cuts; what the prompt's heading adds goes in the description and tooltip.
        const { label, note } = sectionLabel(s);
        const item = new vscode.TreeItem(label, s.itemIds.length + s.leftOut.length + (s.worldInfo?.length ?? 0) > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
        const superseded = s.superseded?.length ?? 0;
        const cost = `${s.tokens}${s.budget === null ? '' : ` / ${s.budget}`} tokens${s.leftOut.length > 0 ? ` · ${s.leftOut.length} left out` : ''}${superseded > 0 ? ` · ${superseded} canon line${superseded === 1 ? '' : 's'} superseded in play` : ''}`;
        item.description = note ? `${cost} · ${note}` : cost;
        item.tooltip = `${s.title}\n${cost}\n\n${s.text}`;
        item.iconPath = new vscode.ThemeIcon(s.stable ? 'lock' : 'symbol-event');
        return item;
      }
      case 'research': {
        const item = new vscode.TreeItem('Research', vscode.TreeItemCollapsibleState.Expanded);
        item.description = researchHeadline(node.record).replace(/^research: /, '');
        item.tooltip = researchLines(node.record).join('\n');
        item.iconPath = new vscode.ThemeIcon('search');
        return item;
      }
      case 'excluded': {
        const item = new vscode.TreeItem('Candidates left out', vscode.TreeItemCollapsibleState.Collapsed);
        item.description = `${node.decisions.length}`;
        item.iconPath = new vscode.ThemeIcon('filter');
        return item;
      }
      case 'worldInfo': {
        // Open: why each entry fired or was held back is what a writer comes here to read.
        const item = new vscode.TreeItem('SillyTavern World Info', vscode.TreeItemCollapsibleState.Expanded);
        item.description = worldInfoItems(node.record).heading.replace(/^World Info /, '');
        item.tooltip = worldInfoLines(node.record).join('\n');
        item.iconPath = new vscode.ThemeIcon('book');
        return item;
      }
      case 'whyNotLine': {
        // One short row of the answer; the hover holds all of it.
        const item = new vscode.TreeItem(node.line);
        item.tooltip = node.answer;
        return item;
      }
      case 'item': {
        const item = new vscode.TreeItem(node.label);
        item.description = node.reason;
        item.tooltip = `${node.label}\n${node.reason}`;
        return item;
      }
      case 'passage': {
        const d = node.decision;
        const headings = d.headingPath[0] === d.sourceTitle ? d.headingPath.slice(1) : d.headingPath;
        const item = new vscode.TreeItem([d.sourceTitle, ...headings].join(' › '));
        const relevance = d.score === null ? '' : ` · relevance ${d.score.toFixed(2)}`;
        item.description = `${CLASS_LABEL[d.class]} · ${OUTCOME_WORDS[d.outcome]}${relevance}`;
        item.tooltip = `${locate(d)}\n${OUTCOME_WORDS[d.outcome]}: ${plainReason(d)}`;
        item.iconPath = new vscode.ThemeIcon(d.outcome === 'selected' ? 'pass' : 'circle-slash');
        item.command = this.openAt(d);
        item.contextValue = 'provenancePassage';
        return item;
      }
    }
  }
}
