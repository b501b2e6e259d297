import assert from 'node:assert/strict';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import type { PlayPanel } from '../../../src/views/playPanel';
import { FakeOllama } from '../../support/fakeOllama';
import { FakeOpenAI } from '../../support/fakeOpenAI';
import { activatedExtension, capture, harnessConfig, settled, waitFor, webviewText, within } from './harness';
import { inPlayDb } from './workspace';

const PANEL_MARKER = 'Preview Context';
const QUICK_INPUT = '.quick-input-widget .quick-input-box input';
const KEY = 'sk-storyteller-test';

/** Captures the workbench until its text satisfies `test` (steps run once, before the first capture). */
async function workbenchShows(name: string, test: (text: string) => boolean, steps: Parameters<typeof capture>[2] = []): Promise<string> {
  let first = true;
  return waitFor(async () => {
    const reply = await capture(name, 300, first ? steps : []);
    first = false;
    return test(reply.workbenchText) && reply.workbenchText;
  }, 20_000, `the workbench to show ${name}`);
}

async function panelShows(name: string, test: (text: string) => boolean, steps: Parameters<typeof capture>[2] = []): Promise<string> {
  let first = true;
  return waitFor(async () => {
    const reply = await capture(name, 300, first ? steps : []);
    first = false;
    const text = webviewText(reply, PANEL_MARKER);
    return test(text) && text;
  }, 20_000, `the play panel to show ${name}`);
}

/** Model servers in the real workbench: the preflight in the status bar, the quick picks, pull, the API key. */
describe('model servers', () => {
  let api: StorytellerApi;
  let ollama: FakeOllama;
  let openai: FakeOpenAI;
  /** An adventure of its own, so the turns played here never reach other suites' adventures. */
  let adventureId: string;
  let playPath: string;
  const config = () => vscode.workspace.getConfiguration('storyteller');
  const set = (key: string, value: unknown) => config().update(key, value, vscode.ConfigurationTarget.Global);

  before(async () => {
    api = (await activatedExtension()).exports as StorytellerApi;
    await settled(api.knowledge, 'every campaign index');
    ollama = await FakeOllama.start({ chatModels: ['llama3.2'], pullable: { 'qwen2.5:7b': {} } });
    openai = await FakeOpenAI.start({ chatModels: { 'qwen2.5-7b-instruct': 32768, 'mistral-small': null }, embedModels: { 'bge-small': 48 }, apiKey: KEY });
    const { campaign } = api.knowledge.get(path.resolve(harnessConfig().workspace))!;
    playPath = campaign.playPath;
    adventureId = inPlayDb(playPath, `process.stdout.write(store.createAdventure({ campaignId: process.env.CAMPAIGN, title: 'Behind the abbey gate' }).id);`, { CAMPAIGN: campaign.id });
  });

  after(async () => {
    for (const key of ['provider', 'openaiCompatible.baseUrl', 'ollama.host', 'narrator.model']) await set(key, undefined);
    await api.settings.storeApiKey(openai.baseUrl, undefined);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    inPlayDb(playPath, 'store.deleteAdventure(process.env.ADVENTURE);', { ADVENTURE: adventureId });
    await ollama.close();
    await openai.close();
  });

  it('says in the status bar text, before any turn, that no server answers, then that the model is missing, and pulls it with progress', async () => {
    // Nothing listens on Ollama's default address here: the preflight at start-up says so.
    await waitFor(() => api.servers.state.kind === 'no-server', 20_000, 'the start-up preflight to find no server');
    assert.equal(api.servers.item.text, `$(vm-outline) Ollama ${api.settings.current.ollamaHost.replace('http://', '')} unreachable`);
    await workbenchShows('server-unreachable', (t) => t.includes('unreachable'));

    await set('ollama.host', ollama.url);
    await set('narrator.model', 'qwen2.5:7b');
    await waitFor(() => api.servers.state.kind === 'model-missing', 20_000, 'the preflight to find the model missing');
    const host = ollama.url.replace('http://', '');
    assert.equal(api.servers.item.text, `$(warning) qwen2.5:7b missing on Ollama ${host}`);
    await workbenchShows('server-model-missing', (t) => t.includes(`qwen2.5:7b missing on Ollama ${host}`));

    ollama.pull = { steps: 12, stepDelayMs: 250 };
    const pulled = vscode.commands.executeCommand<string | undefined>('storyteller.pullModel', 'qwen2.5:7b');
    await workbenchShows('server-pull-progress', (t) => t.includes('Pulling qwen2.5:7b onto Ollama') && /pulling 6a0746a1ec1a — \d+%/.test(t));
    assert.equal(await pulled, 'qwen2.5:7b');
    await waitFor(() => api.servers.state.kind === 'ready', 20_000, 'the preflight to find the pulled model');
    assert.equal(api.servers.item.text, `$(vm-active) qwen2.5:7b · Ollama ${host}`);
    await workbenchShows('server-ready-ollama', (t) => t.includes(`qwen2.5:7b · Ollama ${host}`));
  });

  it('offers the fix for an unreachable host in a pick that closes itself once the host answers, never a notification left behind', async () => {
    const host = ollama.url;
    // Port 9 (discard) refuses connections: the host the writer mistyped.
    await set('ollama.host', 'http://127.0.0.1:9');
    await waitFor(() => api.servers.state.kind === 'no-server', 20_000, 'the preflight to find no server');
    const offered = vscode.commands.executeCommand('storyteller.fixModelServer');
    await workbenchShows('server-fix-offered', (t) => t.includes('Cannot reach Ollama at') && t.includes('127.0.0.1:9') && t.includes('Check Again'));
    await set('ollama.host', host);
    await waitFor(() => api.servers.state.kind === 'ready', 20_000, 'the preflight to find the fixed host');
    await within(offered, 20_000, 'the fix pick to close once the server answers');
    await workbenchShows('server-fix-gone', (t) => !t.includes('Cannot reach Ollama') && t.includes(`qwen2.5:7b · Ollama ${host.replace('http://', '')}`));
  });

  it('reports a missing API key in the status bar and the panel, takes the key, lists the models to pick, and plays a streamed turn', async () => {
    await set('narrator.model', 'mistral-small');
    await set('openaiCompatible.baseUrl', openai.baseUrl);
    await set('provider', 'openai-compatible');
    await waitFor(() => api.servers.state.kind === 'no-server' && api.servers.state.failure === 'unauthorized', 20_000, 'the preflight to ask for a key');
    const server = openai.baseUrl.replace('http://', '');
    assert.equal(api.servers.item.text, `$(key) API key needed · OpenAI-compatible ${server}`);

    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    const root = path.resolve(harnessConfig().workspace);
    const panel = (await vscode.commands.executeCommand<PlayPanel>('storyteller.openPlayPanel', { campaignRoot: root, adventureId }))!;
    let text = await panelShows('server-key-missing-panel', (t) => t.includes("wants an API key (401: You didn't provide an API key.)") && t.includes('Fix…'));
    assert.match(text, /narrator mistral-small on the OpenAI-compatible server at http:\/\/127\.0\.0\.1:\d+\/v1/);
    text = await panelShows('server-key-missing-turn', (t) => (t.match(/wants an API key/g) ?? []).length >= 2, [
      { action: 'fill', selector: '#action textarea', text: 'I knock on the abbey gate' },
      { action: 'click', selector: '#do' },
    ]);
    assert.ok(!text.includes(KEY));

    // Fix… in the panel asks for the key, as the status bar item does.
    await workbenchShows('server-api-key-input', (t) => t.includes(`API key for ${openai.baseUrl}`), [{ action: 'click', selector: '#server .fix-server' }]);
    await capture('server-api-key-entered', 300, [
      { action: 'fill', selector: QUICK_INPUT, text: KEY },
      { action: 'press', selector: QUICK_INPUT, key: 'Enter' },
    ]);
    await waitFor(() => api.servers.state.kind === 'ready', 20_000, 'the preflight to pass with the key');
    await panelShows('server-problem-cleared', (t) => !t.includes('Fix…'));

    const picked = vscode.commands.executeCommand<string | undefined>('storyteller.selectNarratorModel');
    text = await workbenchShows('server-quick-pick-narrator', (t) => t.includes('qwen2.5-7b-instruct') && t.includes('context 32,768 tokens'));
    assert.match(text, /Select Narrator Model — the OpenAI-compatible server at/);
    assert.match(text, /mistral-small/);
    await capture('server-quick-pick-chosen', 300, [
      { action: 'fill', selector: QUICK_INPUT, text: 'qwen2.5-7b' },
      { action: 'press', selector: QUICK_INPUT, key: 'Enter' },
    ]);
    assert.equal(await picked, 'qwen2.5-7b-instruct');
    assert.equal(api.settings.current.narratorModel, 'qwen2.5-7b-instruct');
    await panelShows('server-header-follows-model', (t) => t.includes('narrator qwen2.5-7b-instruct on the OpenAI-compatible server'));
    await workbenchShows('server-ready-openai', (t) => t.includes(`qwen2.5-7b-instruct · OpenAI-compatible ${server}`));

    // Research is on auto, the default: a new model on an OpenAI-compatible server is offered the tools first.
    openai.queue(
      { toolCalls: [{ name: 'finish', arguments: JSON.stringify({ keep: [], reason: 'the gate needs nothing looked up' }) }] },
      { chunks: ['The gate ', 'opens onto ', 'a cloister of fog.'], chunkDelayMs: 80, promptTokens: 1500 },
    );
    text = await panelShows('server-openai-turn-streamed', (t) => t.includes('a cloister of fog.'), [
      { action: 'fill', selector: '#action textarea', text: 'I knock again, louder' },
      { action: 'click', selector: '#do' },
    ]);
    const [research, request] = openai.requestsTo('/v1/chat/completions').slice(-2);
    assert.ok((research!.body as { tools?: unknown[] }).tools?.length, 'the first turn on auto offered the research tools');
    assert.equal((request!.body as { tools?: unknown[] }).tools, undefined, 'the narration is asked without them');
    assert.equal(request!.authorization, `Bearer ${KEY}`);
    assert.equal((request!.body as { model: string }).model, 'qwen2.5-7b-instruct');
    assert.ok(!text.includes(KEY));
    const head = panel.allTurns().find((t) => t.narration === 'The gate opens onto a cloister of fog.');
    assert.equal(head?.promptEvalCount, 1500, "the server's usage count was kept with the turn");
    assert.ok(!JSON.stringify(config()).includes(KEY), 'the key is not in the settings');
  });

  it('lists the embedding models of the server to pick, with "none" for lexical only', async () => {
    const picked = vscode.commands.executeCommand<string | undefined>('storyteller.selectEmbeddingModel');
    const text = await workbenchShows('server-quick-pick-embedding', (t) => t.includes('bge-small') && t.includes('No embedding model'));
    assert.match(text, /Select Embedding Model/);
    await capture('server-quick-pick-embedding-closed', 300, [{ action: 'press', selector: QUICK_INPUT, key: 'Escape' }]);
    assert.equal(await picked, undefined, 'Escape changes nothing');
    assert.equal(api.settings.current.embeddingModel, '');
  });
});

/**
 * A cloned campaign's workspace settings name a server of their own (a rogue that records what it is sent):
 * the story goes to the writer's server until the writer confirms the workspace's, and home again once forgotten.
 */
describe('a model server named by the workspace settings', () => {
  let api: StorytellerApi;
  let home: FakeOpenAI;
  let rogue: FakeOpenAI;
  let adventureId: string;
  let playPath: string;
  const config = () => vscode.workspace.getConfiguration('storyteller');
  const USER_SETTINGS = ['provider', 'openaiCompatible.baseUrl', 'narrator.model', 'research'] as const;
  const ASKED = (url: string) => `This workspace asks Storyteller to send your story to ${url}. Use it?`;
  const DIALOG_BUTTON = (label: string) => `.monaco-dialog-box .monaco-button:has-text("${label}")`;
  const turnsTo = (server: FakeOpenAI) => server.requestsTo('/v1/chat/completions').length;

  before(async () => {
    api = (await activatedExtension()).exports as StorytellerApi;
    await settled(api.knowledge, 'every campaign index');
    home = await FakeOpenAI.start({ chatModels: { 'abbey-narrator': 8192 } });
    rogue = await FakeOpenAI.start({ chatModels: { 'abbey-narrator': 8192 } });
    const { campaign } = api.knowledge.get(path.resolve(harnessConfig().workspace))!;
    playPath = campaign.playPath;
    adventureId = inPlayDb(playPath, `process.stdout.write(store.createAdventure({ campaignId: process.env.CAMPAIGN, title: 'A stranger at the gate' }).id);`, { CAMPAIGN: campaign.id });
    const user = { provider: 'openai-compatible', 'openaiCompatible.baseUrl': home.baseUrl, 'narrator.model': 'abbey-narrator', research: 'off' };
    // Research off: one request per turn, so each server's count is the turns it was sent.
    for (const key of USER_SETTINGS) await config().update(key, user[key], vscode.ConfigurationTarget.Global);
    await waitFor(() => api.servers.state.kind === 'ready' && api.settings.current.narratorBackend?.baseUrl === home.baseUrl, 20_000, "the preflight to find the writer's server");
  });

  after(async () => {
    await config().update('openaiCompatible.baseUrl', undefined, vscode.ConfigurationTarget.Workspace);
    await api.settings.forgetServers();
    for (const key of USER_SETTINGS) await config().update(key, undefined, vscode.ConfigurationTarget.Global);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    inPlayDb(playPath, 'store.deleteAdventure(process.env.ADVENTURE);', { ADVENTURE: adventureId });
    await home.close();
    await rogue.close();
  });

  async function playTurn(name: string, action: string, narration: string): Promise<void> {
    await panelShows(name, (t) => t.includes(narration), [
      { action: 'fill', selector: '#action textarea', text: action },
      { action: 'click', selector: '#do' },
    ]);
  }

  it("sends no turn to it until the writer confirms it, the writer's server meanwhile; once confirmed it gets the turns, and Forget sends them home", async () => {
    // As a cloned campaign's settings would: written into this window's workspace settings, not the writer's.
    await config().update('openaiCompatible.baseUrl', rogue.baseUrl, vscode.ConfigurationTarget.Workspace);
    await workbenchShows('workspace-server-asked', (t) => t.includes(ASKED(rogue.baseUrl)));
    assert.equal(api.settings.current.narratorBackend?.baseUrl, home.baseUrl, 'the question is asked before the server is used');
    await capture('workspace-server-declined', 300, [{ action: 'click', selector: DIALOG_BUTTON('Cancel') }]);
    await workbenchShows('workspace-server-dialog-closed', (t) => !t.includes(ASKED(rogue.baseUrl)));

    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await vscode.commands.executeCommand('storyteller.openPlayPanel', { campaignRoot: path.resolve(harnessConfig().workspace), adventureId });
    home.queue({ chunks: ['A lantern swings ', 'behind the grille.'] });
    await playTurn('workspace-server-turn-home', 'I ring the bell at the gate', 'A lantern swings behind the grille.');
    assert.equal(turnsTo(home), 1);
    assert.deepEqual(
      rogue.requests.map((r) => r.path),
      [],
      'the workspace server got nothing: no turn, no model list, no preflight',
    );

    const asked = vscode.commands.executeCommand('storyteller.confirmWorkspaceServers');
    await workbenchShows('workspace-server-asked-again', (t) => t.includes(ASKED(rogue.baseUrl)));
    await capture('workspace-server-confirmed', 300, [{ action: 'click', selector: DIALOG_BUTTON('Use This Server') }]);
    await within(asked, 20_000, 'the confirmation to be taken');
    await waitFor(() => api.settings.current.narratorBackend?.baseUrl === rogue.baseUrl, 20_000, "the confirmed workspace server to be used");
    rogue.queue({ chunks: ['A voice answers ', 'from the dark.'] });
    await playTurn('workspace-server-turn-confirmed', 'I give my name', 'A voice answers from the dark.');
    assert.equal(turnsTo(rogue), 1);
    assert.equal(turnsTo(home), 1);

    await vscode.commands.executeCommand('storyteller.forgetWorkspaceServers');
    await waitFor(() => api.settings.current.narratorBackend?.baseUrl === home.baseUrl, 20_000, "the writer's server to be used again");
    home.queue({ chunks: ['The grille ', 'slams shut.'] });
    await playTurn('workspace-server-turn-forgotten', 'I wait', 'The grille slams shut.');
    assert.equal(turnsTo(home), 2);
    assert.equal(turnsTo(rogue), 1, 'nothing more went to the forgotten server');
  });
});
