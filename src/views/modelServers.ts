import * as vscode from 'vscode';
import { checkServer, describeBackend, listModels, ModelServerError, NarratorError, pullOllamaModel, type ModelBackend, type ServerFailureKind, type ServerModel, type ToolSupportMemory } from '../models';
import { Disposable } from './disposable';
import { trustedFor } from './workspaceTrust';
import type { Settings } from './settings';
import type { ResearchRecord } from '../story/types';
import { RESEARCH_MODE, researchHeadline } from '../story/contextReport';

/** What the preflight found about the narrator's server and model. */
export type ServerState =
  | { kind: 'checking' }
  | { kind: 'ready'; contextLength: number | null }
  | { kind: 'misconfigured'; message: string }
  | { kind: 'untrusted'; message: string }
  | { kind: 'no-server'; failure: ServerFailureKind; message: string }
  | { kind: 'model-missing'; message: string };

/** While something is wrong, the server is asked again this often, so a server started later is noticed. */
const RECHECK_MS = 30_000;

const shortUrl = (url: string) => url.replace(/^https?:\/\//, '');
/** Messages from the core start in lower case to read inside a sentence; shown alone, they start a sentence. */
const sentence = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

interface ModelItem extends vscode.QuickPickItem {
  choice: { model: string } | { pull: true } | { none: true };
}

/**
 * The narrator's model server as the writer sees it: a preflight before the first turn (at start-up, on
 * every settings change, and again while something is wrong), a status bar item that says which server and
 * model or what is wrong, and the commands that fix it: Select Narrator/Embedding Model, Pull Model, Set API Key.
 */
export class ModelServers extends Disposable {
  readonly item = this._register(vscode.window.createStatusBarItem('storyteller.server', vscode.StatusBarAlignment.Left, 49));
  private readonly _onDidChange = this._register(new vscode.EventEmitter<ServerState>());
  readonly onDidChange = this._onDidChange.event;
  state: ServerState = { kind: 'checking' };
  private generation = 0;
  private recheck: NodeJS.Timeout | undefined;
  /** How the last turn's research ran (tools, JSON fallback, lexical); absent while research is off or no turn ran. */
  private research: ResearchRecord | undefined;

  constructor(
    private readonly settings: Settings,
    private readonly log: vscode.LogOutputChannel,
  ) {
    super();
    this.item.name = 'Storyteller Model Server';
    this._register(
      settings.onDidChange(() => {
        // How research ran was the last turn's, on the model and server the settings named then.
        this.research = undefined;
        void this.check();
      }),
    );
    this._register({ dispose: () => clearTimeout(this.recheck) });
    const commands: [string, (...args: never[]) => unknown][] = [
      ['storyteller.selectNarratorModel', () => this.selectModel('narrator')],
      ['storyteller.selectEmbeddingModel', () => this.selectModel('embedding')],
      ['storyteller.pullModel', (model?: string) => this.pullModel(model)],
      ['storyteller.setApiKey', () => this.setApiKey()],
      ['storyteller.fixModelServer', () => this.offerFix()],
    ];
    for (const [id, run] of commands) this._register(vscode.commands.registerCommand(id, run));
    this.render();
  }

  /** Asks the server whether it answers and has the narrator model; the newest check wins. */
  async check(): Promise<ServerState> {
    const mine = ++this.generation;
    clearTimeout(this.recheck);
    this.setState({ kind: 'checking' });
    await this.settings.keysLoaded;
    const { narratorBackend, narratorModel, backendProblem, untrusted } = this.settings.current;
    let state: ServerState;
    if (untrusted) {
      state = { kind: 'untrusted', message: backendProblem ?? 'this workspace is not trusted' };
    } else if (!narratorBackend) {
      state = { kind: 'misconfigured', message: backendProblem ?? 'no model server is configured' };
    } else {
      const found = await checkServer(narratorBackend, narratorModel);
      state = found.kind === 'ready' ? { kind: 'ready', contextLength: found.contextLength } : found.kind === 'no-server' ? { kind: 'no-server', failure: found.failure, message: found.message } : { kind: 'model-missing', message: found.message };
    }
    if (mine !== this.generation) return this.state;
    // Nothing to ask again: trust is granted by the writer, and a grant re-reads the settings.
    if (state.kind !== 'ready' && state.kind !== 'untrusted') {
      this.log.warn(`model server: ${state.message}`);
      this.recheck = setTimeout(() => void this.check(), RECHECK_MS);
    }
    this.setState(state);
    return state;
  }

  /**
   * After a turn: a failure that is about the server is checked again, so the status bar tells the same story;
   * and the status bar and the panel's header say how the turn's research ran.
   */
  afterTurn(error: Error | null, research: ResearchRecord | undefined): void {
    // Said once: the turn that learned it; later turns' tooltips give the reason research was left out.
    if (research?.learned) void vscode.window.showInformationMessage(`${sentence(research.learned)} ("Forget Model Tool Support" asks again).`);
    if (research !== this.research) {
      this.research = research;
      this.setState(this.state);
    }
    const aboutServer = error instanceof NarratorError && ['server-down', 'model-missing', 'unauthorized'].includes(error.kind);
    if (aboutServer || (error === null && this.state.kind !== 'ready')) void this.check();
  }

  /** Keeps what research on auto learns of models' tools in `memory`, and offers the command that forgets it. */
  useToolSupport(memory: ToolSupportMemory): void {
    this._register(
      vscode.commands.registerCommand('storyteller.forgetToolSupport', () => {
        const forgotten = memory.forget();
        void vscode.window.showInformationMessage(
          forgotten.length === 0 ? 'Research had learned nothing of any model\'s tools.' : `Research on auto will offer tools again to ${forgotten.join(', ')}.`,
        );
        return forgotten;
      }),
    );
  }

  /** One line for the play panel's header: the narrator, its server, and what is wrong when something is. */
  describe(): { text: string; problem: string | null } {
    const { narratorBackend, narratorModel } = this.settings.current;
    const where = narratorBackend ? describeBackend(narratorBackend) : 'no server';
    const text = `narrator ${narratorModel} on ${where}${this.research ? ` · research: ${RESEARCH_MODE[this.research.ran]}` : ''}`;
    const state = this.state;
    return { text, problem: state.kind === 'ready' || state.kind === 'checking' ? null : sentence(state.message) };
  }

  private setState(state: ServerState): void {
    this.state = state;
    this.render();
    this._onDidChange.fire(state);
  }

  private render(): void {
    const { narratorBackend, narratorModel } = this.settings.current;
    const server = narratorBackend ? `${narratorBackend.provider === 'ollama' ? 'Ollama' : 'OpenAI-compatible'} ${shortUrl(narratorBackend.baseUrl)}` : 'no server';
    const state = this.state;
    const [text, tooltip] =
      state.kind === 'checking'
        ? [`$(sync~spin) ${narratorModel} · checking ${server}`, `Checking ${server}…`]
        : state.kind === 'ready'
          ? [`$(vm-active) ${narratorModel} · ${server}`, `Narrator ${narratorModel} on ${server}${state.contextLength ? ` (context ${state.contextLength.toLocaleString('en')} tokens)` : ''}. Click to choose another model.`]
          : state.kind === 'untrusted'
            ? ['$(shield) Storyteller waits for workspace trust', `${sentence(state.message)}. Click to manage workspace trust.`]
            : state.kind === 'misconfigured'
            ? ['$(warning) Model server not set', `${sentence(state.message)}. Click to fix.`]
            : state.kind === 'model-missing'
              ? [`$(warning) ${narratorModel} missing on ${server}`, `${sentence(state.message)}. Click to ${narratorBackend?.provider === 'ollama' ? 'pull it or ' : ''}choose another model.`]
              : state.failure === 'unauthorized'
                ? [`$(key) API key needed · ${server}`, `${sentence(state.message)}. Click to set the key.`]
                : [`$(vm-outline) ${server} unreachable`, `${sentence(state.message)}. Click for what to do.`];
    const research = this.research && state.kind === 'ready' ? this.research : undefined;
    const unconfirmed = this.settings.current.unconfirmedServers.map((s) => s.url);
    const workspaceAsks = unconfirmed.length > 0 ? `\nThis workspace's settings name ${unconfirmed.join(', ')}, not used until you confirm: "Storyteller: Use Model Servers This Workspace Names".` : '';
    this.item.text = research ? `${text} · research: ${RESEARCH_MODE[research.ran]}` : text;
    this.item.tooltip = `${research ? `${tooltip}\nLast turn's ${researchHeadline(research)}: ${research.reason}.` : tooltip}${workspaceAsks}`;
    this.item.command = 'storyteller.fixModelServer';
    this.item.backgroundColor = state.kind === 'ready' || state.kind === 'checking' ? undefined : new vscode.ThemeColor('statusBarItem.warningBackground');
    this.item.show();
  }

  /** The fix for what the preflight found, offered in words with buttons. */
  async offerFix(): Promise<void> {
    const state = this.state.kind === 'checking' ? await this.check() : this.state;
    // A newer check is still running: its result will be shown and offered instead.
    if (state.kind === 'checking') return;
    if (state.kind === 'ready') {
      await this.selectModel('narrator');
      return;
    }
    if (state.kind === 'untrusted') {
      await vscode.commands.executeCommand('workbench.trust.manage');
      return;
    }
    if (state.kind === 'no-server' && state.failure === 'unauthorized') {
      await this.setApiKey();
      return;
    }
    const choice = await this.askFix();
    if (choice === 'Select Narrator Model') await this.selectModel('narrator');
    else if (choice === 'Open Settings') await vscode.commands.executeCommand('workbench.action.openSettings', this.state.kind === 'misconfigured' ? 'storyteller.openaiCompatible.baseUrl' : 'storyteller.provider');
    else if (choice === 'Set API Key') await this.setApiKey();
    else if (choice) await this.pullModel(this.settings.current.narratorModel);
  }

  /** The fixes offered for what is wrong. */
  private fixesFor(state: ServerState): string[] {
    const { narratorBackend, narratorModel } = this.settings.current;
    switch (state.kind) {
      case 'misconfigured':
        return ['Open Settings'];
      case 'model-missing':
        return [...(narratorBackend?.provider === 'ollama' ? [`Pull ${narratorModel}`] : []), 'Select Narrator Model'];
      case 'no-server':
        return state.failure === 'unauthorized' ? ['Set API Key'] : ['Check Again', 'Open Settings'];
      default:
        return [];
    }
  }

  /**
   * What is wrong and the fixes, as a quick pick that follows the server: a notification would stay on
   * screen saying "Cannot reach Ollama" after the host was fixed, and no API can take it back. Check Again
   * asks the server with the pick open; the pick closes itself once the server answers with the model.
   */
  private askFix(): Promise<string | undefined> {
    const pick = vscode.window.createQuickPick<vscode.QuickPickItem>();
    pick.placeholder = 'What to do';
    const follow = (state: ServerState) => {
      pick.busy = state.kind === 'checking';
      if (state.kind === 'ready') pick.hide();
      else if (state.kind !== 'checking') {
        pick.title = sentence(state.message);
        pick.items = this.fixesFor(state).map((label) => ({ label }));
      }
    };
    follow(this.state);
    const subscription = this.onDidChange(follow);
    pick.show();
    return new Promise((resolve) => {
      pick.onDidAccept(() => {
        const label = pick.selectedItems[0]?.label;
        if (label === 'Check Again') {
          void this.check();
          return;
        }
        resolve(label);
        pick.hide();
      });
      pick.onDidHide(() => {
        subscription.dispose();
        pick.dispose();
        resolve(undefined);
      });
    });
  }

  /**
   * A quick pick of the server's models, with the context length where the server says it; picking one
   * sets `storyteller.narrator.model` or `storyteller.embedding.model`. Returns the model chosen.
   */
  async selectModel(kind: 'narrator' | 'embedding'): Promise<string | undefined> {
    await this.settings.keysLoaded;
    const current = this.settings.current;
    const backend = kind === 'narrator' ? current.narratorBackend : current.embeddingBackend;
    if (!backend) {
      void vscode.window.showWarningMessage(current.backendProblem ?? 'no model server is configured', 'Open Settings').then((c) => c && vscode.commands.executeCommand('workbench.action.openSettings', 'storyteller.provider'));
      return undefined;
    }
    const selected = kind === 'narrator' ? current.narratorModel : current.embeddingModel;
    let picked: ModelItem | undefined;
    try {
      picked = await this.pickModel(backend, selected, kind);
    } catch (error) {
      const message = sentence((error as Error).message);
      const fix = error instanceof ModelServerError && error.kind === 'unauthorized' ? 'Set API Key' : 'Open Settings';
      const choice = await vscode.window.showErrorMessage(message, fix);
      if (choice === 'Set API Key') await this.setApiKey();
      else if (choice) await vscode.commands.executeCommand('workbench.action.openSettings', 'storyteller.provider');
      return undefined;
    }
    if (!picked) return undefined;
    const choice = picked.choice;
    if ('pull' in choice) return (await this.pullModel()) ?? undefined;
    const model = 'none' in choice ? '' : choice.model;
    await this.update(kind === 'narrator' ? 'narrator.model' : 'embedding.model', model);
    return model;
  }

  /** The quick pick itself: busy while the server answers, then the current model highlighted so Enter keeps it. */
  private pickModel(backend: ModelBackend, selected: string, kind: 'narrator' | 'embedding'): Promise<ModelItem | undefined> {
    const pick = vscode.window.createQuickPick<ModelItem>();
    pick.title = `Select ${kind === 'narrator' ? 'Narrator' : 'Embedding'} Model — ${describeBackend(backend)}`;
    pick.placeholder = kind === 'narrator' ? 'The model that narrates' : 'The model that embeds passages for semantic retrieval';
    pick.matchOnDescription = true;
    pick.busy = true;
    pick.show();
    return new Promise<ModelItem | undefined>((resolve, reject) => {
      let settled = false;
      const finish = (item: ModelItem | undefined, error?: Error) => {
        if (settled) return;
        settled = true;
        pick.dispose();
        if (error) reject(error);
        else resolve(item);
      };
      pick.onDidAccept(() => finish(pick.selectedItems[0] ?? pick.activeItems[0]));
      pick.onDidHide(() => finish(undefined));
      listModels(backend).then(
        (models) => {
          pick.items = this.modelItems(backend, models, selected, kind);
          const current = pick.items.find((item) => 'model' in item.choice && item.choice.model === selected);
          if (current) pick.activeItems = [current];
          pick.busy = false;
        },
        (error: Error) => finish(undefined, error),
      );
    });
  }

  private modelItems(backend: ModelBackend, models: ServerModel[], selected: string, kind: 'narrator' | 'embedding'): ModelItem[] {
    const items: ModelItem[] = models.map((m) => ({
      label: m.id === selected ? `$(check) ${m.id}` : m.id,
      description: [m.contextLength ? `context ${m.contextLength.toLocaleString('en')} tokens` : '', m.id === selected ? 'current' : ''].filter(Boolean).join(' · '),
      choice: { model: m.id },
    }));
    if (kind === 'embedding') items.push({ label: '$(circle-slash) No embedding model', description: 'lexical retrieval only', choice: { none: true }, alwaysShow: true });
    if (backend.provider === 'ollama') items.push({ label: '$(cloud-download) Pull a model onto Ollama…', choice: { pull: true }, alwaysShow: true });
    return items;
  }

  /** Writes a setting where the writer keeps it: the workspace when it is set there, else the user settings. */
  private async update(key: string, value: string): Promise<void> {
    const config = vscode.workspace.getConfiguration('storyteller');
    const inspected = config.inspect(key);
    const target = inspected?.workspaceValue !== undefined ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
    await config.update(key, value, target);
  }

  /**
   * Pulls a model onto the Ollama server with progress and cancel, offered when the narrator model is
   * missing. Returns the model when it arrived.
   */
  async pullModel(model?: string): Promise<string | undefined> {
    if (!trustedFor('Pull Model')) return undefined;
    const backend = this.settings.current.narratorBackend;
    if (backend?.provider !== 'ollama') {
      void vscode.window.showInformationMessage(`Pulling models is an Ollama command; on ${backend ? describeBackend(backend) : 'this server'} load the model on the server itself.`);
      return undefined;
    }
    const name = (
      model ??
      (await vscode.window.showInputBox({ title: `Pull a model onto ${describeBackend(backend)}`, value: this.settings.current.narratorModel, prompt: 'A model name from the Ollama library, e.g. llama3.1:8b or nomic-embed-text' }))
    )?.trim();
    if (!name) return undefined;
    try {
      await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Pulling ${name} onto ${describeBackend(backend)}`, cancellable: true }, async (progress, token) => {
        const controller = new AbortController();
        const subscription = token.onCancellationRequested(() => controller.abort());
        let shown = 0;
        try {
          await pullOllamaModel(
            backend.baseUrl,
            name,
            (p) => {
              const percent = p.fraction === null ? null : Math.round(p.fraction * 100);
              // The bar only moves forward; a new layer can lower the overall fraction for a moment.
              const increment = percent !== null && percent > shown ? percent - shown : 0;
              shown += increment;
              progress.report({ message: percent === null ? p.status : `${p.status} — ${percent}%`, increment });
            },
            controller.signal,
          );
        } finally {
          subscription.dispose();
        }
      });
    } catch (error) {
      const message = (error as Error).message;
      this.log.warn(message);
      if (error instanceof ModelServerError && error.kind === 'cancelled') void vscode.window.showInformationMessage(message);
      else void vscode.window.showErrorMessage(message);
      return undefined;
    }
    void vscode.window.showInformationMessage(`${name} is now on ${describeBackend(backend)}.`);
    void this.check();
    return name;
  }

  /** Asks for the OpenAI-compatible server's API key and keeps it in SecretStorage; an empty answer removes it. */
  async setApiKey(): Promise<boolean> {
    const baseUrl = this.settings.keyedBaseUrl();
    if (!baseUrl) {
      const choice = await vscode.window.showInformationMessage('API keys are for OpenAI-compatible servers: set storyteller.provider to openai-compatible first.', 'Open Settings');
      if (choice) await vscode.commands.executeCommand('workbench.action.openSettings', 'storyteller.provider');
      return false;
    }
    const key = await vscode.window.showInputBox({
      title: `API key for ${baseUrl}`,
      prompt: "Kept in VS Code's secret storage, never in settings, logs or exports. Leave empty to remove the key.",
      password: true,
      ignoreFocusOut: true,
    });
    if (key === undefined) return false;
    await this.settings.storeApiKey(baseUrl, key.trim() || undefined);
    void this.check();
    return true;
  }
}
