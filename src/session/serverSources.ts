import { resolveOllamaHost } from '../models';

/**
 * Where the writer's text goes is the writer's choice. A campaign cloned from elsewhere carries its own
 * workspace settings, and a server named there would receive every turn (the actions, narrator-only canon),
 * so the settings that choose a server are read from the writer's own settings, and from a workspace only
 * once the workspace is trusted and the writer has confirmed the server it names.
 */
export const SERVER_SETTINGS = ['provider', 'embedding.provider', 'ollama.host', 'openaiCompatible.baseUrl'] as const;
export type ServerSetting = (typeof SERVER_SETTINGS)[number];
export type ServerUrlSetting = Extract<ServerSetting, 'ollama.host' | 'openaiCompatible.baseUrl'>;

/** One setting's values where VS Code keeps them, as `WorkspaceConfiguration.inspect()` reports them. */
export interface SettingLayers {
  defaultValue?: unknown;
  /** The writer's user (or remote machine) settings. */
  globalValue?: unknown;
  /** The workspace's: its `.vscode/settings.json`, or the settings of its `.code-workspace` file. */
  workspaceValue?: unknown;
}

/** A server a workspace names, as the writer is asked about it and as a confirmation is remembered. */
export interface WorkspaceServer {
  setting: ServerUrlSetting;
  url: string;
}

export interface ServerSources {
  /** The value each server setting takes (undefined: the default). */
  values: Record<ServerSetting, unknown>;
  /** Servers the workspace names that the writer has not confirmed; meanwhile every server setting is the writer's own. */
  unconfirmed: WorkspaceServer[];
  /** The workspace is not trusted: nothing is sent to any server until it is. */
  untrusted: boolean;
}

export const UNTRUSTED_PROBLEM =
  'this workspace is not trusted, so Storyteller sends nothing to a model server (no turns, research or embeddings) and writes no files until you trust it; indexing, search, lint and conflicts work meanwhile';

/**
 * The server a URL setting's value names, as the client will reach it and as confirmations are kept:
 * an Ollama host resolved as the Ollama CLI does, an API root without trailing slashes. Undefined when
 * the value names no server (not text, or an empty base URL).
 */
export function serverUrlOf(setting: ServerUrlSetting, value: unknown, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (typeof value !== 'string') return undefined;
  if (setting === 'ollama.host') return resolveOllamaHost(value, env);
  return value.trim().replace(/\/+$/, '') || undefined;
}

const PROVIDER_OF: Record<ServerUrlSetting, string> = { 'ollama.host': 'ollama', 'openaiCompatible.baseUrl': 'openai-compatible' };

/**
 * Which value of each server setting is used. The writer's own (else the default) always may be; the
 * workspace's only while the workspace is trusted and every server it would send to is the writer's own
 * or confirmed. A workspace naming a server not yet confirmed changes none of them, not even the provider,
 * so the turn goes where the writer's settings send it, never half to the workspace's choice.
 */
export function decideServerSources(
  layers: Readonly<Record<ServerSetting, SettingLayers>>,
  trust: { trusted: boolean; confirmed: (url: string) => boolean },
  env: NodeJS.ProcessEnv = process.env,
): ServerSources {
  const own = (setting: ServerSetting) => layers[setting].globalValue ?? layers[setting].defaultValue;
  const writers = Object.fromEntries(SERVER_SETTINGS.map((s) => [s, own(s)])) as Record<ServerSetting, unknown>;
  if (!trust.trusted) return { values: writers, unconfirmed: [], untrusted: true };

  const asked = Object.fromEntries(SERVER_SETTINGS.map((s) => [s, layers[s].workspaceValue ?? own(s)])) as Record<ServerSetting, unknown>;
  const providersAsked = [asked.provider, asked['embedding.provider']];
  const unconfirmed: WorkspaceServer[] = [];
  for (const setting of ['ollama.host', 'openaiCompatible.baseUrl'] as const) {
    if (layers[setting].workspaceValue === undefined) continue;
    const url = serverUrlOf(setting, asked[setting], env);
    if (url === serverUrlOf(setting, own(setting), env)) continue;
    // A server no provider would use is not worth a question, and one that is no server (an empty base URL)
    // cannot be asked about: the writer's value stays.
    if (url === undefined || !providersAsked.includes(PROVIDER_OF[setting])) asked[setting] = own(setting);
    else if (!trust.confirmed(url)) unconfirmed.push({ setting, url });
  }
  return { values: unconfirmed.length > 0 ? writers : asked, unconfirmed, untrusted: false };
}
