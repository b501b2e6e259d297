import assert from 'node:assert/strict';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import type { PlayPanel } from '../../../src/views/playPanel';
import { FakeOllama } from '../../support/fakeOllama';
import { offersTool } from '../../support/fakeModelServer';
import { activatedExtension, capture, harnessConfig, settled, waitFor, webviewText } from './harness';

const PANEL_MARKER = 'Preview Context';

/**
 * Research in the real workbench: a tool-capable model on a scripted loopback Ollama searches, asks for a
 * passage it was never shown, and keeps one it was; the panel, Turn Provenance and the status bar show it.
 */
describe('research before narration', () => {
  let api: StorytellerApi;
  let fake: FakeOllama;
  let root: string;

  before(async () => {
    api = (await activatedExtension()).exports as StorytellerApi;
    root = path.resolve(harnessConfig().workspace);
    await settled(api.knowledge, 'every campaign index');
    fake = await FakeOllama.start({ chatModels: ['llama3.2'], capabilities: ['completion', 'tools'], contextLength: 8192 });
    const config = vscode.workspace.getConfiguration('storyteller');
    await config.update('ollama.host', fake.url, vscode.ConfigurationTarget.Global);
    await config.update('narrator.model', 'llama3.2', vscode.ConfigurationTarget.Global);
    await waitFor(() => api.settings.current.ollamaHost === fake.url && api.servers.state.kind === 'ready', 15_000, 'the scripted server to be the ready narrator');
  });

  after(async () => {
    const config = vscode.workspace.getConfiguration('storyteller');
    await config.update('ollama.host', undefined, vscode.ConfigurationTarget.Global);
    await config.update('narrator.model', undefined, vscode.ConfigurationTarget.Global);
    await fake.close();
  });

  it("shows the model's searches, what it kept and what was refused in the panel, Turn Provenance and the status bar", async () => {
    const store = api.knowledge.get(root)!.store!;
    const abbey = store.listPassages(store.getSourceByPath('places/old-abbey.md')!.id)[0]!;
    fake.queue(
      { toolCalls: [{ name: 'search', arguments: { query: 'abbey crypt door' } }, { name: 'read', arguments: { id: 'westhaven:never-shown.md#0' } }] },
      { toolCalls: [{ name: 'finish', arguments: { keep: [abbey.id], reason: 'the crypt lies under the abbey' } }] },
      { chunks: ['Cold air rises ', 'from the crypt stairs.'] },
    );
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    const panel = (await vscode.commands.executeCommand<PlayPanel>('storyteller.openPlayPanel', { campaignRoot: root }))!;
    assert.ok(panel);
    await waitFor(async () => webviewText(await capture('research-panel-open', 300), PANEL_MARKER).length > 0 && true, 20_000, 'the play panel');
    await capture('research-turn', 300, [
      { action: 'fill', selector: '#action textarea', text: 'I search for the way down to the crypt' },
      { action: 'click', selector: '#do' },
    ]);
    await waitFor(() => fake.requestsTo('/api/chat').length >= 3 && true, 30_000, 'two research rounds and the narration');
    const chats = fake.requestsTo('/api/chat').map((r) => r.body as { tools?: unknown[]; messages: { role: string; content: string }[] });
    assert.ok(chats[0]!.tools && chats[1]!.tools, 'research asked with tools');
    assert.equal(chats[2]!.tools, undefined, 'the narration is asked without them');
    assert.match(chats[2]!.messages.map((m) => m.content).join('\n'), /Old Abbey/, 'the kept passage reached the narration prompt');

    // The panel's context region lists the steps.
    const seen = await capture('research-context-region', 100, [], ['#context-region[open]']);
    if (!seen.located['#context-region[open]']) await capture('research-context-opened', 100, [{ action: 'click', selector: '#context-region .collapsible-header' }]);
    const text = await waitFor(async () => {
      const t = webviewText(await capture('research-steps-in-panel', 300), PANEL_MARKER);
      return t.includes('research: native tool calls') && t.includes('crypt stairs') && t;
    }, 20_000, 'the research steps in the panel');
    assert.match(text, /searched “abbey crypt door”/);
    assert.match(text, /1\. searched “abbey crypt door” → \d+ passages? found \[The Old Abbey[;\]]/, 'what the search showed, by name');
    assert.doesNotMatch(text, /\{"(query|id|keep)"/, 'the model\'s calls in words, not raw tool JSON');
    assert.match(text, /1\. read .*→ REFUSED: passage westhaven:never-shown\.md#0 was never shown to you; search for it first/);
    assert.match(text, /kept The Old Abbey: the crypt lies under the abbey/);
    assert.match(text, /narrator llama3\.2 on .* · research: tools/, 'the panel header says research ran with tools');

    // Turn Provenance: the research node first among the sections, its steps as rows.
    const research = api.provenance.getChildren().find((n) => n.kind === 'research');
    assert.ok(research, 'Turn Provenance shows the research');
    assert.match(String(api.provenance.getTreeItem(research).description), /^native tool calls · searched “abbey crypt door” · kept 1 · refused 1$/);
    const rows = api.provenance.getChildren(research).map((n) => `${String(api.provenance.getTreeItem(n).label)} — ${String(api.provenance.getTreeItem(n).description)}`);
    assert.deepEqual(rows.slice(0, 2), ['Why — the model researched with native tool calls', '1. searched “abbey crypt door” — ' + rows[1]!.split(' — ')[1]]);
    assert.ok(rows.some((r) => /^1\. read .* — refused: passage westhaven:never-shown\.md#0 was never shown to you/.test(r)), rows.join('\n'));
    assert.ok(rows.some((r) => /^Kept The Old Abbey.* — the crypt lies under the abbey$/.test(r)), rows.join('\n'));

    // The status bar says which mode ran.
    assert.match(api.servers.item.text, /llama3\.2 · Ollama .* · research: tools$/);
    await vscode.commands.executeCommand('storyteller.adventures.focus');
    const workbench = await waitFor(async () => {
      const reply = await capture('research-provenance-and-status-bar', 500);
      return reply.workbenchText.includes('Research') && reply.workbenchText.includes('research: tools') && reply;
    }, 20_000, 'Turn Provenance and the status bar on screen');
    assert.match(workbench.workbenchText, /native tool calls/);
  });

  it('Preview Context with Research shows what the model searched and kept, and plays no turn', async () => {
    const index = api.knowledge.get(root)!;
    const store = index.store!;
    const abbey = store.listPassages(store.getSourceByPath('places/old-abbey.md')!.id)[0]!;
    const turnsBefore = index.session.play.listAdventures(index.campaign.id).map((a) => index.session.play.allTurns(a.id).length);
    const chatsBefore = fake.requestsTo('/api/chat').length;
    fake.queue(
      { toolCalls: [{ name: 'search', arguments: { query: 'abbey bells' } }] },
      { toolCalls: [{ name: 'finish', arguments: { keep: [abbey.id], reason: 'the bells hang in the abbey' } }] },
    );
    const report = await vscode.commands.executeCommand<vscode.TextDocument>('storyteller.previewContextWithResearch', { campaignRoot: root, action: 'I listen for the abbey bells' });
    assert.ok(report, 'a report opened');
    const text = report.getText();
    assert.match(text, /## Research/);
    assert.match(text, /searched “abbey bells”/, 'the search the model made is listed');
    assert.match(text, /Old Abbey/, 'the kept passage is in the context');
    const chats = fake.requestsTo('/api/chat').slice(chatsBefore);
    assert.equal(chats.length, 2, 'two research rounds and no narration');
    assert.ok(chats.every((r) => (r.body as { tools?: unknown[] }).tools), 'each asked with tools');
    const turnsAfter = index.session.play.listAdventures(index.campaign.id).map((a) => index.session.play.allTurns(a.id).length);
    assert.deepEqual(turnsAfter, turnsBefore, 'no turn was played');
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  it('Evaluate Research on This Campaign opens the table for the narrator model as an untitled markdown document', async () => {
    const chatsBefore = fake.requestsTo('/api/chat').length;
    // The starter eval.yaml: six questions and two off-topic ones, the model keeping nothing on each; then three
    // played exchanges, which the fake's default prose answers by proposing nothing.
    fake.queue(...Array.from({ length: 8 }, () => ({ toolCalls: [{ name: 'finish', arguments: { keep: [] } }] })));
    const document = await vscode.commands.executeCommand<vscode.TextDocument | undefined>('storyteller.evaluateResearch', undefined, { campaignRoot: root });
    assert.ok(document, 'a report opened');
    assert.ok(document.isUntitled && document.languageId === 'markdown', 'an untitled markdown document the writer can keep');
    const text = document.getText();
    assert.match(text, /^# Research evaluation: llama3\.2 on /);
    assert.match(text, /\| llama3\.2 \(research\) \|.*\|\s+2\/2 \|\s+0\/8 \|\s+8\/0\/0 \|/, 'the row of the narrator model the settings name');
    assert.ok(text.split('\n').some((l) => l.startsWith("| today's selection")));
    assert.match(text, /\| llama3\.2 \(proposals\) \|\s+0\/2 \|\s+0 \|\s+1\/1 \|/, 'the canon proposals row: nothing proposed, rightly on the exchange that expects nothing');
    const chats = fake
      .requestsTo('/api/chat')
      .slice(chatsBefore)
      .filter((r) => offersTool(r, 'finish'));
    assert.equal(chats.length, 8, 'one research request per question');
    assert.ok(chats.every((r) => (r.body as { model: string; tools?: unknown[] }).model === 'llama3.2' && (r.body as { tools?: unknown[] }).tools));
    assert.equal(vscode.window.activeTextEditor?.document, document, 'shown to the writer');
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
  });
});
