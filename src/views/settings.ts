import * as vscode from 'vscode';
import { z } from 'zod';
import { resolveOllamaHost } from '../models';
import { decideServerSources, DEFAULTS, resolveServers, SERVER_SETTINGS, UNTRUSTED_PROBLEM, type ServerSources, type StorytellerSettings as CoreSettings, type WorkspaceServer } from '../session';
import { Disposable } from './disposable';

const SECTION = 'storyteller';

/**
 * The extension's settings as the code uses them. Each key matches a `storyteller.*` setting contributed
 * in package.json (where the descriptions and defaults live); a value that fails validation is named to
 * the writer and its default used instead, so one typo never breaks the rest.
 */
const SETTINGS = {
  provider: z.enum(['ollama', 'openai-compatible']),
  'ollama.host': z.string().trim(),
  'openaiCompatible.baseUrl': z.string().trim(),
  'embedding.provider': z.enum(['narrator', 'ollama', 'openai-compatible']),
  'narrator.model': z.string().trim().min(1, 'must name a model, e.g. llama3.1:8b'),
  'embedding.model': z.string().trim(),
  'context.length': z.number().int().min(512, 'must be at least 512 tokens'),
  'context.budgets': z
    .object({
      alwaysInclude: z.number().int().min(0),
      canon: z.number().int().min(0),
      reference: z.number().int().min(0),
      inspiration: z.number().int().min(0),
    })
    .strict(),
  'index.sizeCapBytes': z.number().int().positive('must be a positive number of bytes'),
  'memory.cadence': z.number().int().min(1, 'must be at least 1 turn'),
  'narrator.maxReplyTokens': z.number().int().min(16, 'must be at least 16 tokens'),
  research: z.enum(['auto', 'on', 'off']),
  'narrator.contextWindow': z.number().int().min(0, 'must be 0 (what the server reports) or a number of tokens'),
} as const;

type SettingKey = keyof typeof SETTINGS;
type RawSettings = { [K in SettingKey]: z.infer<(typeof SETTINGS)[K]> };

/** The defaults of each setting: the shared defaults module, which package.json's contributed defaults match. */
const DEFAULT_OF: RawSettings = {
  provider: DEFAULTS.provider,
  'ollama.host': DEFAULTS.ollamaHost,
  'openaiCompatible.baseUrl': DEFAULTS.openaiCompatibleBaseUrl,
  'embedding.provider': DEFAULTS.embeddingProvider,
  'narrator.model': DEFAULTS.narratorModel,
  'embedding.model': DEFAULTS.embeddingModel,
  'context.length': DEFAULTS.contextLength,
  'context.budgets': { ...DEFAULTS.budgets },
  'index.sizeCapBytes': DEFAULTS.sizeCapBytes,
  'memory.cadence': DEFAULTS.memoryCadence,
  'narrator.maxReplyTokens': DEFAULTS.maxReplyTokens,
  research: DEFAULTS.research,
  'narrator.contextWindow': DEFAULTS.researchContextWindow,
};

export interface StorytellerSettings extends CoreSettings {
  /** Messages for the settings that were rejected, e.g. "storyteller.context.length must be at least 512 tokens". */
  problems: string[];
  /** Servers this workspace names that the writer has not confirmed: the writer's own are used meanwhile. */
  unconfirmedServers: WorkspaceServer[];
  /** The workspace is not trusted: no server is named, so nothing is sent. */
  untrusted: boolean;
}

/** Where the servers a workspace named and the writer confirmed are remembered, in that workspace's state. */
const CONFIRMED_SERVERS = 'storyteller.confirmedServers';

/** Where SecretStorage keeps the key of one OpenAI-compatible server: a key belongs to the server it was given for. */
export function apiKeySecretId(baseUrl: string): string {
  return `storyteller.apiKey:${baseUrl}`;
}

/** `apiKeys`: keys read from SecretStorage, by base URL; `sources`: the server settings' values, decided from where each came. */
function readSettings(config: vscode.WorkspaceConfiguration, apiKeys: ReadonlyMap<string, string>, sources: ServerSources): StorytellerSettings {
  const problems: string[] = [];
  const value = <K extends SettingKey>(key: K): RawSettings[K] => {
    const raw = key in sources.values ? (sources.values[key as keyof ServerSources['values']] ?? DEFAULT_OF[key]) : config.get(key);
    const parsed = SETTINGS[key].safeParse(raw);
    if (parsed.success) return parsed.data as RawSettings[K];
    problems.push(`${SECTION}.${key} ${parsed.error.issues[0]?.message ?? 'is invalid'}; using the default`);
    return DEFAULT_OF[key];
  };
  const ollamaHost = resolveOllamaHost(value('ollama.host'));
  const servers = resolveServers({
    provider: value('provider'),
    ollamaHost,
    openaiCompatibleBaseUrl: value('openaiCompatible.baseUrl'),
    embeddingProvider: value('embedding.provider'),
    apiKeys,
  });
  return {
    ollamaHost,
    ...(sources.untrusted
      ? { narratorBackend: null, embeddingBackend: null, backendProblem: UNTRUSTED_PROBLEM }
      : { ...servers, backendProblem: servers.backendProblem && `${SECTION}.openaiCompatible.baseUrl: ${servers.backendProblem}` }),
    narratorModel: value('narrator.model'),
    embeddingModel: value('embedding.model'),
    contextLength: value('context.length'),
    budgets: value('context.budgets'),
    sizeCapBytes: value('index.sizeCapBytes'),
    memoryCadence: value('memory.cadence'),
    maxReplyTokens: value('narrator.maxReplyTokens'),
    research: value('research'),
    researchContextWindow: value('narrator.contextWindow'),
    problems,
    unconfirmedServers: sources.unconfirmed,
    untrusted: sources.untrusted,
  };
}

export class Settings extends Disposable {
  private readonly _onDidChange = this._register(new vscode.EventEmitter<StorytellerSettings>());
  readonly onDidChange = this._onDidChange.event;
  current: StorytellerSettings;

  /** API keys read from SecretStorage, by base URL: kept in memory only, so reading settings stays synchronous. */
  private readonly apiKeys = new Map<string, string>();
  private secrets: vscode.SecretStorage | undefined;
  private workspaceState: vscode.Memento | undefined;
  /** Settles once the key of the configured server has been read from SecretStorage. */
  keysLoaded: Promise<void> = Promise.resolve();

  constructor(private readonly log: vscode.LogOutputChannel) {
    super();
    this.current = this.read();
    this._register(
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration(SECTION)) this.reread();
      }),
    );
    // Trust decides which settings may name a server, and whether any may be sent to.
    this._register(vscode.workspace.onDidGrantWorkspaceTrust(() => this.reread()));
  }

  /** Reads the settings again and then the API keys of the servers they now name. */
  private reread(warn = true): void {
    this.refresh(warn);
    this.keysLoaded = this.loadKey();
  }

  /** Where confirmed workspace servers are remembered (the extension context's workspace state); until then none is. */
  useWorkspaceState(state: vscode.Memento): void {
    this.workspaceState = state;
    this.refresh(false);
  }

  /** The servers this workspace names that the writer confirmed for it. */
  confirmedServers(): string[] {
    return this.workspaceState?.get<string[]>(CONFIRMED_SERVERS) ?? [];
  }

  /** The writer agreed that this workspace's server may receive the story: remembered for this workspace. */
  async confirmServer(url: string): Promise<void> {
    if (!this.workspaceState) throw new Error('servers cannot be confirmed before the extension has started');
    await this.workspaceState.update(CONFIRMED_SERVERS, [...new Set([...this.confirmedServers(), url])]);
    this.reread(false);
  }

  /** Forgets every server confirmed for this workspace: the writer's own servers are used again. */
  async forgetServers(): Promise<void> {
    await this.workspaceState?.update(CONFIRMED_SERVERS, undefined);
    this.reread(false);
  }

  /** Where API keys live (the extension context's SecretStorage); until then no server gets a key. */
  useSecrets(secrets: vscode.SecretStorage): void {
    this.secrets = secrets;
    this._register(
      secrets.onDidChange((event) => {
        if (event.key.startsWith('storyteller.apiKey:')) this.keysLoaded = this.loadKey();
      }),
    );
    this.keysLoaded = this.loadKey();
  }

  /** The base URL an API key is asked for: the narrator's OpenAI-compatible server, else the embedder's. */
  keyedBaseUrl(): string | undefined {
    const { narratorBackend, embeddingBackend } = this.current;
    return [narratorBackend, embeddingBackend].find((b) => b?.provider === 'openai-compatible')?.baseUrl;
  }

  async storeApiKey(baseUrl: string, key: string | undefined): Promise<void> {
    if (!this.secrets) throw new Error('API keys cannot be stored before the extension has started');
    if (key) await this.secrets.store(apiKeySecretId(baseUrl), key);
    else await this.secrets.delete(apiKeySecretId(baseUrl));
    await this.loadKey();
  }

  private async loadKey(): Promise<void> {
    if (!this.secrets) return;
    const baseUrls = new Set([this.current.narratorBackend, this.current.embeddingBackend].filter((b) => b?.provider === 'openai-compatible').map((b) => b!.baseUrl));
    let changed = false;
    for (const baseUrl of baseUrls) {
      const key = await this.secrets.get(apiKeySecretId(baseUrl));
      if (key === this.apiKeys.get(baseUrl)) continue;
      changed = true;
      if (key) this.apiKeys.set(baseUrl, key);
      else this.apiKeys.delete(baseUrl);
    }
    if (changed) this.refresh(false);
  }

  private refresh(warn = true): void {
    this.current = this.read(warn);
    this._onDidChange.fire(this.current);
  }

  private read(warn = true): StorytellerSettings {
    const config = vscode.workspace.getConfiguration(SECTION);
    const confirmed = new Set(this.confirmedServers());
    // inspect(), not get(): whether a server may be used depends on whose settings named it.
    const layers = Object.fromEntries(SERVER_SETTINGS.map((key) => [key, config.inspect(key) ?? {}])) as Parameters<typeof decideServerSources>[0];
    const sources = decideServerSources(layers, { trusted: vscode.workspace.isTrusted, confirmed: (url) => confirmed.has(url) });
    const settings = readSettings(config, this.apiKeys, sources);
    if (!warn) return settings;
    if (settings.backendProblem) this.log.warn(settings.backendProblem);
    for (const problem of settings.problems) {
      this.log.warn(problem);
      void vscode.window.showWarningMessage(problem, 'Open Settings').then((choice) => {
        if (choice) void vscode.commands.executeCommand('workbench.action.openSettings', SECTION);
      });
    }
    return settings;
  }
}
