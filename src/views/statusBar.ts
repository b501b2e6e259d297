import * as vscode from 'vscode';
import { describeSemanticIndex } from '../knowledge/retrieval';
import { Disposable } from './disposable';
import type { KnowledgeService } from './knowledgeService';
import { plural } from './words';

/** The index's status bar item: index state and passage count (the model server has its own item, ModelServers). */
export class StatusBar extends Disposable {
  readonly item = this._register(vscode.window.createStatusBarItem('storyteller.status', vscode.StatusBarAlignment.Left, 50));

  constructor(private readonly knowledge: KnowledgeService) {
    super();
    this.item.name = 'Storyteller';
    this.item.command = 'storyteller.reindexCampaign';
    this._register(knowledge.onDidChange(() => this.render()));
    this._register(knowledge.onDidChangeState(() => this.render()));
    this.render();
  }

  private render(): void {
    const indexes = this.knowledge.list();
    if (indexes.length === 0) {
      this.item.hide();
      return;
    }
    let passages = 0;
    let indexing: { done: number; total: number } | undefined;
    let failed = 0;
    const lines: string[] = [];
    for (const index of indexes) {
      const counts = index.store?.counts();
      passages += counts?.passages ?? 0;
      const state = index.state;
      if (state.kind === 'indexing') indexing = { done: (indexing?.done ?? 0) + state.done, total: (indexing?.total ?? 0) + state.total };
      if (state.kind === 'error') failed++;
      lines.push(`${index.campaign.title}: ${state.kind === 'error' ? state.message : `${plural(counts?.sources ?? 0, 'source')}, ${plural(counts?.passages ?? 0, 'passage')} (${state.kind})`}`);
      if (index.lastSemantic) lines.push(`  ${describeSemanticIndex(index.lastSemantic)}`);
    }
    const indexText = indexing ? `$(sync~spin) Indexing ${indexing.done}/${indexing.total}` : failed > 0 ? '$(error) Index failed' : `$(book) ${plural(passages, 'passage')}`;
    this.item.text = indexText;
    this.item.tooltip = [...lines, 'Click to reindex'].join('\n');
    this.item.show();
  }
}
