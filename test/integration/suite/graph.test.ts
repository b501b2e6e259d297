import assert from 'node:assert/strict';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import type { GraphPanel } from '../../../src/views/graphPanel';
import { activatedExtension, capture, harnessConfig, settled, waitFor, webviewText } from './harness';

const GRAPH_MARKER = 'Campaign graph:';

describe('the campaign graph', () => {
  let api: StorytellerApi;
  let root: string;
  let panel: GraphPanel;

  before(async () => {
    api = (await activatedExtension()).exports as StorytellerApi;
    root = path.resolve(harnessConfig().workspace);
    await settled(api.knowledge, 'every campaign index');
  });

  after(async () => {
    await vscode.workspace.getConfiguration('workbench').update('colorTheme', undefined, vscode.ConfigurationTarget.Global);
  });

  it('draws the example campaign: its entities as nodes, joined where one names another, under a strict content security policy', async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    panel = (await vscode.commands.executeCommand<GraphPanel>('storyteller.openCampaignGraph', { campaignRoot: root }))!;
    assert.ok(panel, 'the command returns the panel');
    const html = panel.panel.webview.html;
    assert.match(html, /default-src 'none'/);
    assert.match(html, /script-src 'nonce-[^']+'/);
    assert.match(html, /dist\/graph\.js/, 'the graph loads its own script, not the play panel\'s');
    const graph = panel.graph();
    const mara = graph.nodes.find((n) => n.label === 'Sister Mara' || n.label === 'Mara');
    assert.ok(mara, `Mara is an entity: ${graph.nodes.map((n) => n.label).join(', ')}`);
    assert.ok(graph.edges.some((e) => e.to === mara.id), 'another entity\'s page names Mara');
    const reply = await waitFor(async () => {
      const seen = await capture('campaign-graph', 500, [], [`.node[data-id="${mara.id}"]`]);
      return webviewText(seen, GRAPH_MARKER).includes(mara.label) && seen.located[`.node[data-id="${mara.id}"]`] ? seen : undefined;
    }, 30_000, 'the graph to draw Mara');
    const text = webviewText(reply, GRAPH_MARKER);
    assert.match(text, new RegExp(`${graph.nodes.length} of ${graph.nodes.length} entities, ${graph.edges.length} links`));
  });

  it('opens the file at the entity\'s heading when its node is clicked', async () => {
    const mara = panel.graph().nodes.find((n) => n.path === 'characters/mara.md')!;
    const definition = api.language.modelOf(root)!.entity(mara.id)!.definitions[0]!;
    await capture('campaign-graph-click', 300, [{ action: 'click', selector: `.node[data-id="${mara.id}"] circle` }]);
    const editor = await waitFor(
      () => vscode.window.visibleTextEditors.find((e) => e.document.uri.fsPath === path.join(root, 'characters', 'mara.md')),
      15_000,
      'mara.md to open beside the graph',
    );
    assert.equal(editor.selection.active.line, definition.line, 'at the entity\'s heading');
  });

  it('filters by text and kind, and focuses an entity with its neighbours', async () => {
    const graph = panel.graph();
    const total = graph.nodes.length;
    const mara = graph.nodes.find((n) => n.path === 'characters/mara.md')!;
    const abbey = graph.nodes.filter((n) => n.label.toLowerCase().includes('abbey') || n.path.toLowerCase().includes('abbey'));
    let text = webviewText(await capture('campaign-graph-filter', 300, [{ action: 'fill', selector: '#filter-text', text: 'abbey' }]), GRAPH_MARKER);
    assert.match(text, new RegExp(`${abbey.length} of ${total} entities`), 'the text filter keeps what names or holds "abbey"');
    assert.ok(!text.includes(mara.label), 'and lists nothing else');

    const characters = graph.nodes.filter((n) => n.kind === 'character').length;
    text = webviewText(
      await capture('campaign-graph-kinds', 300, [
        { action: 'fill', selector: '#filter-text', text: '' },
        { action: 'click', selector: 'input[data-kind="character"]' },
      ]),
      GRAPH_MARKER,
    );
    assert.match(text, new RegExp(`${total - characters} of ${total} entities`), 'unticking a kind hides its entities');

    text = webviewText(
      await capture('campaign-graph-focus', 300, [
        { action: 'click', selector: 'input[data-kind="character"]' },
        { action: 'click', selector: `#entity-list button.focus[aria-label="Focus ${mara.label} with its neighbours"]` },
      ]),
      GRAPH_MARKER,
    );
    const near = new Set([mara.id, ...graph.edges.filter((e) => e.from === mara.id || e.to === mara.id).flatMap((e) => [e.from, e.to])]);
    assert.match(text, new RegExp(`Focused on ${mara.label}`));
    assert.match(text, new RegExp(`${near.size} of ${total} entities`), 'Mara and the entities one step from her');
    text = webviewText(await capture('campaign-graph-all', 300, [{ action: 'click', selector: '#clear-focus' }]), GRAPH_MARKER);
    assert.match(text, new RegExp(`${total} of ${total} entities`), 'Show all ends the focus');
  });

  for (const [theme, kind] of [
    ['Default Light Modern', vscode.ColorThemeKind.Light],
    ['Default Dark Modern', vscode.ColorThemeKind.Dark],
    ['Default High Contrast', vscode.ColorThemeKind.HighContrast],
  ] as const) {
    it(`is drawn in the ${theme} theme`, async () => {
      await vscode.workspace.getConfiguration('workbench').update('colorTheme', theme, vscode.ConfigurationTarget.Global);
      await waitFor(() => vscode.window.activeColorTheme.kind === kind, 10_000, `the ${theme} theme`);
      panel.panel.reveal();
      const slug = theme.toLowerCase().replace(/\s+/g, '-');
      const reply = await capture(`campaign-graph-${slug}`, 800);
      assert.match(webviewText(reply, GRAPH_MARKER), /entities/);
    });
  }
});
