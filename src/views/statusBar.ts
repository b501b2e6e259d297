import * as vscode from 'vscode';
import { describeSemanticIndex } from '../knowledge/retrieval';
import { Disposable } from './disposable';
import type { KnowledgeService } from './knowledgeService';
import type { Settings } from './settings';

export type OllamaState = { kind: 'unknown' } | { kind: 'online'; version: string } | { kind: 'offline'; reason: string };

/** Asks the Ollama server for its version: cheap, and the only call every Ollama answers. */
export async function probeOllama(host: string, timeoutMs = 2000): Promise<OllamaState> {
  try {
    const response = await fetch(`${host}/api/version`, { signal: AbortSignal.timeout(timeoutMs) });
    if (!response.ok) return { kind: 'offline', reason: `${host} answered ${response.status}` };
    const body = (await response.json()) as { version?: unknown };
    return { kind: 'online', version: typeof body.version === 'string' ? body.version : 'unknown version' };
  } catch (error) {
    return { kind: 'offline', reason: `${host} unreachable (${(error as Error).message})` };
  }
}

/** One status bar item: index state, passage count, and whether the narrator's Ollama answers. */
export class StatusBar extends Disposable {
  readonly item = this._register(vscode.window.createStatusBarItem('storyteller.status', vscode.StatusBarAlignment.Left, 50));
  ollama: OllamaState = { kind: 'unknown' };

  constructor(
    private readonly knowledge: KnowledgeService,
    private readonly settings: Settings,
  ) {
    super();
    this.item.name = 'Storyteller';
    this.item.command = 'storyteller.reindexCampaign';
    this._register(knowledge.onDidChange(() => this.render()));
    this._register(knowledge.onDidChangeState(() => this.render()));
    this._register(settings.onDidChange(() => void this.checkOllama()));
    this.render();
  }

  async checkOllama(): Promise<void> {
    this.ollama = await probeOllama(this.settings.current.ollamaHost);
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
      lines.push(`${index.campaign.title}: ${state.kind === 'error' ? state.message : `${counts?.sources ?? 0} sources, ${counts?.passages ?? 0} passages (${state.kind})`}`);
      if (index.lastSemantic) lines.push(`  ${describeSemanticIndex(index.lastSemantic)}`);
    }
    const ollama =
      this.ollama.kind === 'online' ? `Ollama ${this.ollama.version} at ${this.settings.current.ollamaHost}` : this.ollama.kind === 'offline' ? `Ollama offline: ${this.ollama.reason}` : 'Ollama: not checked yet';
    const ollamaIcon = this.ollama.kind === 'online' ? '$(vm-active)' : '$(vm-outline)';
    const indexText = indexing ? `$(sync~spin) Indexing ${indexing.done}/${indexing.total}` : failed > 0 ? '$(error) Index failed' : `$(book) ${passages} passages`;
    this.item.text = `${indexText} ${ollamaIcon}`;
    this.item.tooltip = [...lines, ollama, 'Click to reindex'].join('\n');
    this.item.show();
  }
}
