import assert from 'node:assert/strict';
import { resolveOllamaHost } from '../../src/models';
import { decideServerSources, resolveServers, SERVER_SETTINGS, type ServerSetting, type SettingLayers } from '../../src/session';

const DEFAULTS: Record<ServerSetting, unknown> = { provider: 'ollama', 'embedding.provider': 'narrator', 'ollama.host': '', 'openaiCompatible.baseUrl': '' };
const HOME = 'http://127.0.0.1:8080/v1';
const ROGUE = 'http://203.0.113.9:8000/v1';

/** The settings as `inspect()` reports them: the writer's user settings and a cloned campaign's workspace settings. */
function layers(user: Partial<Record<ServerSetting, unknown>>, workspace: Partial<Record<ServerSetting, unknown>>): Record<ServerSetting, SettingLayers> {
  return Object.fromEntries(SERVER_SETTINGS.map((s) => [s, { defaultValue: DEFAULTS[s], globalValue: user[s], workspaceValue: workspace[s] }])) as Record<ServerSetting, SettingLayers>;
}

const trusted = (...confirmed: string[]) => ({ trusted: true, confirmed: (url: string) => confirmed.includes(url) });

/** Where a turn and an embedding would be sent with these values, as the extension resolves them. */
function destinations(values: Record<ServerSetting, unknown>): { narrator: string | undefined; embedder: string | undefined } {
  const servers = resolveServers({
    provider: values.provider as 'ollama',
    ollamaHost: resolveOllamaHost(values['ollama.host'] as string, {}),
    openaiCompatibleBaseUrl: values['openaiCompatible.baseUrl'] as string,
    embeddingProvider: values['embedding.provider'] as 'narrator',
    apiKeys: new Map(),
  });
  return { narrator: servers.narratorBackend?.baseUrl, embedder: servers.embeddingBackend?.baseUrl };
}

describe('which settings choose the model server: the writer, or a workspace the writer confirmed', () => {
  const user = { provider: 'openai-compatible', 'openaiCompatible.baseUrl': HOME };

  it('sends turns to the writer\'s server while a workspace names another one not yet confirmed, and names it to be asked about', () => {
    const decided = decideServerSources(layers(user, { 'openaiCompatible.baseUrl': ROGUE }), trusted(), {});
    assert.deepEqual(destinations(decided.values), { narrator: HOME, embedder: HOME });
    assert.deepEqual(decided.unconfirmed, [{ setting: 'openaiCompatible.baseUrl', url: ROGUE }]);
  });

  it('uses the workspace\'s server once the writer confirmed it, in that trusted workspace', () => {
    const decided = decideServerSources(layers(user, { 'openaiCompatible.baseUrl': `${ROGUE}/` }), trusted(ROGUE), {});
    assert.deepEqual(destinations(decided.values), { narrator: ROGUE, embedder: ROGUE });
    assert.deepEqual(decided.unconfirmed, []);
  });

  it('takes nothing from an untrusted workspace, confirmed or not, and says that nothing may be sent', () => {
    const decided = decideServerSources(layers(user, { 'openaiCompatible.baseUrl': ROGUE, provider: 'ollama' }), { trusted: false, confirmed: () => true }, {});
    assert.equal(decided.untrusted, true);
    assert.deepEqual(destinations(decided.values), { narrator: HOME, embedder: HOME });
  });

  it('does not let a workspace switch the provider towards its own unconfirmed server: the writer\'s Ollama keeps the turn', () => {
    const decided = decideServerSources(layers({ 'ollama.host': 'gpu-box' }, { provider: 'openai-compatible', 'openaiCompatible.baseUrl': ROGUE }), trusted(), {});
    assert.deepEqual(destinations(decided.values), { narrator: 'http://gpu-box:11434', embedder: 'http://gpu-box:11434' });
    assert.deepEqual(decided.unconfirmed, [{ setting: 'openaiCompatible.baseUrl', url: ROGUE }]);
  });

  it('asks about a workspace\'s Ollama host the embedding model would use, resolved as the client reaches it', () => {
    const decided = decideServerSources(layers(user, { 'embedding.provider': 'ollama', 'ollama.host': 'evil-box' }), trusted(), {});
    assert.deepEqual(decided.unconfirmed, [{ setting: 'ollama.host', url: 'http://evil-box:11434' }]);
    assert.deepEqual(destinations(decided.values), { narrator: HOME, embedder: HOME });
    const confirmed = decideServerSources(layers(user, { 'embedding.provider': 'ollama', 'ollama.host': 'evil-box' }), trusted('http://evil-box:11434'), {});
    assert.deepEqual(destinations(confirmed.values), { narrator: HOME, embedder: 'http://evil-box:11434' });
  });

  it('treats an empty Ollama host in a workspace as the local server it means, which is not the writer\'s remote one', () => {
    const decided = decideServerSources(layers({ 'ollama.host': 'gpu-box' }, { 'ollama.host': '' }), trusted(), {});
    assert.deepEqual(decided.unconfirmed, [{ setting: 'ollama.host', url: 'http://127.0.0.1:11434' }]);
    assert.equal(destinations(decided.values).narrator, 'http://gpu-box:11434');
  });

  it('lets a trusted workspace choose among the writer\'s own servers, or name the writer\'s server again, without a question', () => {
    const switched = decideServerSources(layers({ 'openaiCompatible.baseUrl': HOME, 'ollama.host': 'gpu-box' }, { provider: 'openai-compatible' }), trusted(), {});
    assert.deepEqual(switched.unconfirmed, []);
    assert.equal(destinations(switched.values).narrator, HOME);
    const same = decideServerSources(layers(user, { 'openaiCompatible.baseUrl': `  ${HOME}//` }), trusted(), {});
    assert.deepEqual(same.unconfirmed, []);
    assert.equal(destinations(same.values).narrator, HOME);
  });

  it('keeps the writer\'s value for a workspace server no provider uses, and for an empty base URL, without asking', () => {
    const unused = decideServerSources(layers(user, { 'ollama.host': 'evil-box' }), trusted(), {});
    assert.deepEqual(unused.unconfirmed, []);
    assert.equal(unused.values['ollama.host'], '', 'the default, not the workspace\'s host');
    const emptied = decideServerSources(layers(user, { 'openaiCompatible.baseUrl': '' }), trusted(), {});
    assert.deepEqual(emptied.unconfirmed, []);
    assert.equal(destinations(emptied.values).narrator, HOME);
  });
});
