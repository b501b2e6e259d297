// The smoke suite: the VSIX `npm run package` made, installed by code-server's --install-extension into a
// fresh extensions folder, doing what a writer does first. A file the VSIX lacks, a bundle that reaches for
// the checkout, or a native module that does not load fails here, not on a writer's machine.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import type { AdventureMapPanel } from '../../../src/views/adventureMapPanel';
import type { GraphPanel } from '../../../src/views/graphPanel';
import type { PlayPanel } from '../../../src/views/playPanel';
import { writeSrdCopy } from '../../support/corpora';
import { FakeOllama } from '../../support/fakeOllama';
import { EXTENSION_ID, activatedExtension, capture, harnessConfig, settled, waitFor, webviewText } from '../suite/harness';

describe('the installed VSIX', function () {
  this.timeout(120_000);
  let api: StorytellerApi;
  let root: string;
  let fake: FakeOllama;
  let panel: PlayPanel;

  before(async () => {
    api = (await activatedExtension()).exports as StorytellerApi;
    root = path.resolve(harnessConfig().workspace);
  });

  after(async () => {
    await vscode.workspace.getConfiguration('storyteller').update('ollama.host', undefined, vscode.ConfigurationTarget.Global);
    await vscode.workspace.getConfiguration('storyteller').update('narrator.model', undefined, vscode.ConfigurationTarget.Global);
    await fake?.close();
  });

  it('activates on the campaign folder from the packaged copy, with its SQLite binary loaded', () => {
    const extension = vscode.extensions.getExtension(EXTENSION_ID)!;
    const manifest = extension.packageJSON as Record<string, unknown>;
    assert.equal(manifest.scripts, undefined, "the VSIX's manifest, not the checkout's");
    assert.equal(fs.existsSync(path.join(extension.extensionPath, 'src')), false, 'no sources shipped');
    assert.deepEqual(fs.readdirSync(path.join(extension.extensionPath, 'dist')).filter((f) => f.endsWith('.map')), [], 'no source maps shipped');
    assert.equal(fs.readdirSync(path.join(extension.extensionPath, 'node_modules', 'better-sqlite3', 'prebuilds')).length, 1, "this platform's binary only");
    assert.equal(api.sqliteProblem, null);
  });

  it('indexes the campaign and finds a passage from the search box', async () => {
    await settled(api.knowledge, 'every campaign index');
    await vscode.commands.executeCommand('storyteller.search', 'night watch captain');
    const reply = await waitFor(async () => {
      const seen = await capture('smoke-search');
      return seen.workbenchText.includes('Canon · canon.md:9') && seen;
    }, 20_000, 'search results in the quick pick');
    assert.match(reply.workbenchText, /Captain Ilse Varra/);
    await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
  });

  it('plays a turn in the play panel with a scripted model', async () => {
    fake = await FakeOllama.start({ chatModels: ['llama3.2'], contextLength: 8192 });
    const config = vscode.workspace.getConfiguration('storyteller');
    await config.update('ollama.host', fake.url, vscode.ConfigurationTarget.Global);
    await config.update('narrator.model', 'llama3.2', vscode.ConfigurationTarget.Global);
    await waitFor(() => api.settings.current.ollamaHost === fake.url, 10_000, 'the Ollama host setting');
    panel = (await vscode.commands.executeCommand<PlayPanel>('storyteller.openPlayPanel', { campaignRoot: root }))!;
    fake.queue({ chunks: ['The abbey gate ', 'creaks open; ', 'Sister Mara waits inside.'] });
    let first = true;
    await waitFor(async () => {
      const steps = first ? [{ action: 'fill' as const, selector: '#action textarea', text: 'I knock on the gate of the Old Abbey' }, { action: 'click' as const, selector: '#do' }] : [];
      first = false;
      return webviewText(await capture('smoke-play-turn', 300, steps), 'Preview Context').includes('Sister Mara waits inside.');
    }, 30_000, 'the narration in the play panel');
    const prompt = JSON.stringify(fake.requestsTo('/api/chat')[0]?.body);
    assert.match(prompt, /Old Abbey stands on a hill/, "the campaign's canon reached the model");
  });

  it('opens the Campaign Graph and the Adventure Map of the turn just played', async () => {
    const graph = (await vscode.commands.executeCommand<GraphPanel>('storyteller.openCampaignGraph', { campaignRoot: root }))!;
    await waitFor(async () => webviewText(await capture('smoke-campaign-graph', 500), 'Campaign graph:').includes('Mara'), 30_000, 'the graph to draw Mara');
    graph.panel.dispose();
    const map = (await vscode.commands.executeCommand<AdventureMapPanel>('storyteller.openAdventureMap', { campaignRoot: root, adventureId: panel.adventureId }))!;
    await waitFor(async () => webviewText(await capture('smoke-adventure-map', 500), 'Adventure map:').includes('I knock on the gate of the Old Abbey'), 30_000, 'the map to draw the turn');
    map.panel.dispose();
  });

  /**
   * The numbers go to artifacts/smoke/activation-cost.json (docs/benchmarks.md#activation-cost); they are
   * not asserted, a loaded machine moves them. VS Code's own activation time (loading the bundle and
   * activate()) is read from its Running Extensions editor; the memory is the extension host's, the suite's
   * own small share included, after the SRD's 1,029 files have indexed into the campaign.
   */
  it('records its activation cost, and indexes the SRD copied into the campaign', async function () {
    this.timeout(600_000);
    await vscode.commands.executeCommand('workbench.action.showRuntimeExtensions');
    const activation = await waitFor(async () => {
      const seen = await capture('smoke-running-extensions', 500);
      const found = /Adventure Storyteller\n[\d.]+\n[^\n]*\n((?:Startup )?Activation): (\d+)ms/.exec(seen.workbenchText);
      return found ? { event: found[1]!, ms: Number(found[2]) } : undefined;
    }, 30_000, "the Running Extensions editor to show the extension's activation time");
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    const before = process.memoryUsage();
    const files = writeSrdCopy(path.join(root, 'srd'), 0);
    const index = api.knowledge.get(root)!;
    await waitFor(() => (index.store?.listSources().filter((s) => s.path.startsWith('srd/')).length ?? 0) >= files, 540_000, `the ${files} SRD files to be indexed`);
    await settled(index, "the SRD's index");
    const after = process.memoryUsage();
    const mb = (bytes: number) => Math.round(bytes / 1048576);
    const cost = { activation, srdFiles: files, extensionHostMb: { before: { rss: mb(before.rss), heapUsed: mb(before.heapUsed) }, afterSrd: { rss: mb(after.rss), heapUsed: mb(after.heapUsed) } }, loadAverage: os.loadavg() };
    fs.writeFileSync(path.join(harnessConfig().artifactsDir, 'activation-cost.json'), JSON.stringify(cost, null, 2));
    assert.ok(activation.ms > 0);
  });

  it("copies the example campaign shipped inside the VSIX, as the walkthrough's first step does", async () => {
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'smoke-example-'));
    try {
      const copy = await vscode.commands.executeCommand<vscode.Uri>('storyteller.openExampleCampaign', { parent: vscode.Uri.file(scratch), then: 'none' });
      assert.match(fs.readFileSync(path.join(copy.fsPath, 'campaign.yaml'), 'utf8'), /The Westhaven Campaign/);
      assert.ok(fs.existsSync(path.join(copy.fsPath, 'characters', 'mara.md')));
    } finally {
      fs.rmSync(scratch, { recursive: true, force: true });
    }
  });
});
