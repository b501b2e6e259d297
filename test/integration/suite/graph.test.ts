import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import { CONFLICT_COMMANDS, type ConsistencyCheckSummary } from '../../../src/views/conflicts';
import { GRAPH_VIEW_TYPE, type GraphPanel } from '../../../src/views/graphPanel';
import { FakeOllama } from '../../support/fakeOllama';
import { corpusPath } from '../../support/corpora';
import { activatedExtension, capture, harnessConfig, settled, waitFor, webviewText } from './harness';
import { closeCampaignFolder, openCampaignFolder } from './workspace';

const GRAPH_MARKER = 'Campaign graph:';
const THEMES = [
  ['Default Light Modern', vscode.ColorThemeKind.Light],
  ['Default Dark Modern', vscode.ColorThemeKind.Dark],
  ['Default High Contrast', vscode.ColorThemeKind.HighContrast],
] as const;

/** Switches the workbench to `theme`, brings `panel` forward and screenshots it as `name-<theme>`. */
async function inTheme(panel: GraphPanel, theme: (typeof THEMES)[number], name: string, marker: string): Promise<void> {
  await vscode.workspace.getConfiguration('workbench').update('colorTheme', theme[0], vscode.ConfigurationTarget.Global);
  await waitFor(() => vscode.window.activeColorTheme.kind === theme[1], 20_000, `the ${theme[0]} theme`);
  panel.panel.reveal();
  const reply = await capture(`${name}-${theme[0].toLowerCase().replace(/\s+/g, '-')}`, 800);
  assert.match(webviewText(reply, marker), /entities/);
}

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
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
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
    const entities = graph.nodes.filter((n) => n.class === 'canon').length;
    assert.match(text, new RegExp(`${entities} of ${entities} entities, .*${graph.edges.length} links`));
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

  it('filters by text, kind and class, and focuses an entity with its neighbours', async () => {
    const graph = panel.graph();
    const total = graph.nodes.filter((n) => n.class === 'canon').length;
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
      await capture('campaign-graph-classes', 300, [
        { action: 'click', selector: 'input[data-kind="character"]' },
        { action: 'click', selector: 'input[data-class="canon"]' },
      ]),
      GRAPH_MARKER,
    );
    assert.match(text, new RegExp(`0 of ${total} entities`), 'unticking Canon hides every entity');

    text = webviewText(
      await capture('campaign-graph-focus', 300, [
        { action: 'click', selector: 'input[data-class="canon"]' },
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

  it("draws the model's suggested conflict as a dotted edge apart from canon's own, and drops it once dismissed", async () => {
    const fake = await FakeOllama.start({ chatModels: ['llama3.2'] });
    const config = vscode.workspace.getConfiguration('storyteller');
    // Every pair of passages is asked; only the pair holding both quotes can keep the suggestion (quotes are checked verbatim).
    const explanation = 'one page has her alone able to read the crypt door, the other alone able to open it';
    fake.defaultReply = {
      chunks: [JSON.stringify({ conflicts: [{ entity: 'Mara', quote_a: 'Mara holds the only key.', quote_b: 'She is the only person in Westhaven who can read the old script', explanation }] })],
    };
    let key: string | undefined;
    try {
      await config.update('ollama.host', fake.url, vscode.ConfigurationTarget.Global);
      await config.update('narrator.model', 'llama3.2', vscode.ConfigurationTarget.Global);
      await waitFor(() => api.settings.current.ollamaHost === fake.url, 20_000, 'the Ollama host setting');
      const summary = await vscode.commands.executeCommand<ConsistencyCheckSummary>('storyteller.checkCanonConsistency', { campaignRoot: root });
      assert.equal(summary.suggestions.length, 1, 'one pair holds both quotes');
      key = summary.suggestions[0]!.key;
      const graph = await waitFor(() => (panel.graph().suggestions.length > 0 ? panel.graph() : undefined), 20_000, 'the graph to take the suggestion');
      const [suggested] = graph.suggestions;
      const label = (id: string) => graph.nodes.find((n) => n.id === id)?.label;
      assert.deepEqual([label(suggested!.from), label(suggested!.to)], ['Sister Mara', 'The Old Abbey'], 'between the entities whose pages hold the quotes');
      const text = await waitFor(async () => {
        const seen = await capture('campaign-graph-suggestion', 300, [], ['.suggestion']);
        const shown = webviewText(seen, GRAPH_MARKER);
        return seen.located['.suggestion'] && shown.includes('1 suggested conflict') ? shown : undefined;
      }, 30_000, 'the dotted edge and the count');
      assert.ok(
        text.includes(`? the model suggests a conflict with The Old Abbey: Mara — ${explanation}: "She is the only person in Westhaven who can read the old script" in characters/mara.md:13 vs "Mara holds the only key." in places/old-abbey.md:14`),
        'listed under Mara with both quotes, each at its own line',
      );

      await vscode.commands.executeCommand(CONFLICT_COMMANDS.decideSuggestion, root, key, 'dismissed');
      await waitFor(async () => !webviewText(await capture('campaign-graph-suggestion-dismissed', 300), GRAPH_MARKER).includes('suggested conflict'), 30_000, 'the dismissed suggestion to leave the graph');
      assert.deepEqual(panel.graph().suggestions, []);
    } finally {
      // The dismissal is the writer's decision, kept in the play store: cleared, so no later test inherits it.
      if (key) await vscode.commands.executeCommand(CONFLICT_COMMANDS.unignore, root, key);
      await config.update('ollama.host', undefined, vscode.ConfigurationTarget.Global);
      await config.update('narrator.model', undefined, vscode.ConfigurationTarget.Global);
      await fake.close();
    }
  });

  for (const theme of THEMES) it(`is drawn in the ${theme[0]} theme`, () => inTheme(panel, theme, 'campaign-graph', GRAPH_MARKER));

  describe('on the SRD, a thousand entities in a campaign of their own', () => {
    const MARKER = 'Campaign graph: SRD';
    let srd: string;
    let graphPanel: GraphPanel;

    before(async function () {
      this.timeout(240_000);
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      srd = path.join(path.dirname(root), 'srd-graph');
      fs.cpSync(corpusPath('dnd-srd-5.1'), srd, { recursive: true });
      fs.writeFileSync(path.join(srd, 'campaign.yaml'), 'id: srd-graph\ntitle: SRD\ndefault_class: canon\n');
      await openCampaignFolder(api, srd, 900);
      graphPanel = (await vscode.commands.executeCommand<GraphPanel>('storyteller.openCampaignGraph', { campaignRoot: srd }))!;
      await waitFor(() => graphPanel.graph().nodes.length > 900, 120_000, 'the SRD entity model');
    });

    after(async function () {
      this.timeout(60_000);
      graphPanel?.panel.dispose();
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      await closeCampaignFolder(api, srd);
    });

    it('opens on its most connected entities and a node per kind, its list naming counts and the top neighbours', async () => {
      const graph = graphPanel.graph();
      assert.ok(['Spells', 'Monsters'].every((kind) => graph.nodes.some((n) => n.kind === kind)), 'kinds from the SRD\'s folders');
      // The least mentioned monster is folded in the overview, and drawn once Monsters is opened.
      const monster = graph.nodes.filter((n) => n.kind === 'Monsters' && /^[\w ()-]+$/.test(n.id)).sort((a, b) => a.mentions - b.mentions)[0]!;
      const drawnMonster = `.node[data-id="${monster.id}"]`;
      const reply = await waitFor(async () => {
        const seen = await capture('campaign-graph-srd-overview', 800, [], ['.node.group[data-id="group:Monsters"]', drawnMonster]);
        return /40 drawn \(the most connected\), \d+ folded by kind/.test(webviewText(seen, MARKER)) && seen.located['.node.group[data-id="group:Monsters"]'] ? seen : undefined;
      }, 60_000, 'the overview');
      const text = webviewText(reply, MARKER);
      assert.match(text, /Monsters · \d+ entities folded, the most connected: [^·]+ and \d+ more/, 'a folded kind is listed with its count');
      assert.match(text, /\d+ links: (?:[^,]+, ){7}[^,]+ and \d+ more/, 'an entity lists its eight most-mentioned neighbours and counts the rest');
      assert.ok(!reply.located[drawnMonster], `${monster.label} is folded at first`);
      const shown = await capture('campaign-graph-srd-monsters', 800, [{ action: 'click', selector: 'button[aria-label$="of Monsters folded in the overview"]' }], [drawnMonster]);
      const after = webviewText(shown, MARKER);
      assert.doesNotMatch(after, /Monsters · \d+ entities folded/, 'Monsters opened');
      assert.match(after, /\d+ drawn \(the most connected and the kinds opened\)/);
      assert.ok(shown.located[drawnMonster], `${monster.label} is drawn`);
    });
  });

  describe('on the Torys setting bible, in a campaign of its own', () => {
    const DAYS_END = 'world/tumulted-sea/andal/days-end';
    const MARKER = 'Campaign graph: Torys';
    let torys: string;
    let graphPanel: GraphPanel;

    before(async function () {
      this.timeout(180_000);
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      torys = path.join(path.dirname(root), 'torys-graph');
      fs.cpSync(corpusPath('torys'), torys, { recursive: true });
      fs.writeFileSync(path.join(torys, 'campaign.yaml'), 'id: torys-graph\ntitle: Torys\ndefault_class: canon\n');
      // A writer's edits: two pages giving Ahahbu two ages, an old census a new one supersedes, and a reference note naming her.
      fs.appendFileSync(path.join(torys, DAYS_END, 'ahahbu.md'), '\n## Quick facts\n\n- **Age:** 52\n');
      fs.appendFileSync(path.join(torys, DAYS_END, 'index.md'), '\n## Notable residents\n\n| Name | Role | Age |\n|---|---|---|\n| Ahahbu | healer | 61 |\n');
      fs.mkdirSync(path.join(torys, 'notes'));
      fs.writeFileSync(path.join(torys, 'notes', 'old-census.md'), '---\ntitle: Old Census of Andal\n---\n# Old Census of Andal\n\nCounted before the walls were rebuilt.\n');
      fs.writeFileSync(path.join(torys, 'notes', 'census.md'), '---\ntitle: Census of Andal\nsupersedes: [notes/old-census.md]\n---\n# Census of Andal\n\nCounted after the walls were rebuilt.\n');
      fs.writeFileSync(path.join(torys, 'notes', 'herbalism.md'), '---\ntitle: Herbalism of the Eclipse Lands\nclass: reference\n---\n# Herbs\n\nAhahbu would know which fungi heal and which kill.\n\nIce storms ruin the harvest.\n');
      await openCampaignFolder(api, torys, 60);
      graphPanel = (await vscode.commands.executeCommand<GraphPanel>('storyteller.openCampaignGraph', { campaignRoot: torys }))!;
      await waitFor(() => graphPanel.graph().conflicts.length > 0, 60_000, "the conflict analysis to see Ahahbu's two ages");
    });

    after(async function () {
      this.timeout(60_000);
      graphPanel?.panel.dispose();
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      await closeCampaignFolder(api, torys);
    });

    it("draws a red dashed edge between Ahahbu and Day's End, whose pages give her two ages, told in full on focus", async () => {
      const graph = graphPanel.graph();
      const ahahbu = graph.nodes.find((n) => n.label === 'Ahahbu')!;
      const daysEnd = graph.nodes.find((n) => n.path === `${DAYS_END}/index.md`)!;
      const conflict = graph.conflicts.find((c) => c.entity === 'Ahahbu');
      assert.ok(conflict, `a conflict about Ahahbu: ${JSON.stringify(graph.conflicts)}`);
      assert.deepEqual([conflict.from, conflict.to].sort(), [ahahbu.id, daysEnd.id].sort(), "between Ahahbu and the page of Day's End");
      const reply = await waitFor(async () => {
        const seen = await capture('campaign-graph-torys-conflict', 500, [{ action: 'press', selector: 'line.conflict', key: 'Shift' }]);
        return /Canon conflict: Ahahbu — Age/.test(webviewText(seen, MARKER)) && seen;
      }, 30_000, 'the conflict told beside the graph when its edge has the focus');
      const text = webviewText(reply, MARKER);
      assert.match(text, new RegExp(`"52" in ${DAYS_END}/ahahbu\\.md:\\d+ vs "61" in ${DAYS_END}/index\\.md:\\d+`), 'both sides, each with its file');
      assert.match(text, /1 canon conflict/);
      assert.match(text, /⚠ conflicts with Day.s End: Ahahbu — Age/, 'and the list says it too');
    });

    it('fades the entity only a superseded page defines, and says so in the list', async () => {
      const old = graphPanel.graph().nodes.find((n) => n.label === 'Old Census of Andal')!;
      assert.deepEqual(old.supersededBy, ['notes/census.md']);
      assert.deepEqual(graphPanel.graph().nodes.find((n) => n.label === 'Census of Andal')!.supersededBy, [], 'what supersedes it stands');
      const reply = await capture('campaign-graph-torys-superseded', 300, [{ action: 'fill', selector: '#filter-text', text: 'census' }], [`.node.superseded[data-id="${old.id}"]`]);
      assert.ok(reply.located[`.node.superseded[data-id="${old.id}"]`], 'drawn faded');
      assert.match(webviewText(reply, MARKER), /only in superseded notes\/old-census\.md \(by notes\/census\.md\)/);
    });

    it('draws the reference note naming Ahahbu as a file beside canon, and the class filter hides it', async () => {
      const graph = graphPanel.graph();
      const note = graph.nodes.find((n) => n.path === 'notes/herbalism.md')!;
      assert.equal(note.class, 'reference');
      const ahahbu = graph.nodes.find((n) => n.label === 'Ahahbu')!;
      assert.ok(graph.edges.some((e) => e.from === note.id && e.to === ahahbu.id && e.count === 1), 'joined to Ahahbu');
      // "Ice storms" opens a sentence: the everyday word, not the dragon Ice, so a weak mention only.
      const ice = graph.nodes.find((n) => n.label === 'Ice')!;
      assert.deepEqual(graph.edges.filter((e) => e.from === note.id && e.to === ice.id).map((e) => [e.count, e.weak]), [[0, 1]]);
      const files = graph.nodes.filter((n) => n.class !== 'canon').length;
      let reply = await capture('campaign-graph-torys-reference', 300, [{ action: 'fill', selector: '#filter-text', text: '' }], [`.node.class-reference[data-id="${note.id}"] rect`]);
      assert.ok(reply.located[`.node.class-reference[data-id="${note.id}"] rect`], 'a square, not a circle');
      assert.match(webviewText(reply, MARKER), new RegExp(`${files} of ${files} reference and inspiration files`));
      const weak = await capture('campaign-graph-torys-weak', 300, [{ action: 'fill', selector: '#filter-text', text: 'herbalism' }]);
      assert.match(webviewText(weak, MARKER), /reference file · names canon 1 time · 1 weak mention/, 'the list says which mentions are weak');
      await capture('campaign-graph-torys-weak-cleared', 300, [{ action: 'fill', selector: '#filter-text', text: '' }]);
      reply = await capture('campaign-graph-torys-no-reference', 300, [{ action: 'click', selector: 'input[data-class="reference"]' }]);
      assert.doesNotMatch(webviewText(reply, MARKER), /Herbalism of the Eclipse Lands/, 'unticking Reference hides it');
      await capture('campaign-graph-torys-reference-back', 300, [{ action: 'click', selector: 'input[data-class="reference"]' }]);
    });

    it("opens Ahahbu's page at its title when her node is clicked", async () => {
      const ahahbu = graphPanel.graph().nodes.find((n) => n.label === 'Ahahbu')!;
      const definition = api.language.modelOf(torys)!.entity(ahahbu.id)!.definitions[0]!;
      await capture('campaign-graph-torys-click', 300, [{ action: 'click', selector: `.node[data-id="${ahahbu.id}"] circle` }]);
      const editor = await waitFor(
        () => vscode.window.visibleTextEditors.find((e) => e.document.uri.fsPath === path.join(torys, ...ahahbu.path.split('/'))),
        15_000,
        'ahahbu.md to open beside the graph',
      );
      assert.equal(editor.selection.active.line, definition.line, 'at the line that names her');
      // Her page closes; the graph stays for the theme screenshots.
      const tab = vscode.window.tabGroups.all.flatMap((g) => g.tabs).find((t) => t.input instanceof vscode.TabInputText && t.input.uri.fsPath === editor.document.uri.fsPath);
      if (tab) await vscode.window.tabGroups.close(tab);
    });

    it('reopens on the picture it had, with an entity written while it was closed settling beside what it names', async () => {
      const ahahbu = graphPanel.graph().nodes.find((n) => n.label === 'Ahahbu')!;
      const where = (reply: Awaited<ReturnType<typeof capture>>) =>
        reply.frames.find((f) => f.text.includes(MARKER))?.html.match(new RegExp(`transform="(translate\\([^)]*\\))"[^>]*data-id="${ahahbu.id}"`))?.[1];
      const before = where(await capture('campaign-graph-torys-before-reopen', 300));
      assert.ok(before, "Ahahbu's node is drawn");
      graphPanel.panel.dispose();
      fs.writeFileSync(path.join(torys, 'notes', 'tessel.md'), '---\ntitle: Tessel\n---\n# Tessel\n\nTessel learns which fungi heal from [[Ahahbu]].\n');
      await waitFor(() => api.language.modelOf(torys)?.resolveName('Tessel'), 60_000, 'Tessel in the entity model');
      graphPanel = (await vscode.commands.executeCommand<GraphPanel>('storyteller.openCampaignGraph', { campaignRoot: torys }))!;
      const reply = await waitFor(async () => {
        const seen = await capture('campaign-graph-torys-reopened', 300);
        return webviewText(seen, MARKER).includes('Tessel') && seen;
      }, 30_000, 'the reopened graph to draw Tessel');
      assert.equal(where(reply), before, 'Ahahbu is where the writer saw her before');
    });

    it('comes back after the window reloads, on the layout its webview saved', async () => {
      const ahahbu = graphPanel.graph().nodes.find((n) => n.label === 'Ahahbu')!;
      graphPanel.panel.dispose();
      // What VS Code hands the serializer after a reload: a bare panel and the state the webview saved.
      const restored = vscode.window.createWebviewPanel(GRAPH_VIEW_TYPE, 'Graph', vscode.ViewColumn.Active, { enableScripts: true });
      graphPanel = (await api.graphs.restore(restored, { campaignRoot: torys, placed: [[ahahbu.id, 40, 30]] }))!;
      assert.equal(graphPanel?.panel, restored, 'the restored panel is the one VS Code brought back');
      await waitFor(async () => {
        const seen = await capture('campaign-graph-torys-restored', 300);
        const drawn = new RegExp(`transform="translate\\(40 30\\)"[^>]*data-id="${ahahbu.id}"`);
        return seen.frames.some((f) => f.text.includes(MARKER) && f.text.includes('Tessel') && drawn.test(f.html)) && seen;
      }, 30_000, 'the restored graph to draw Ahahbu where its saved layout put her');

      // A panel whose campaign is gone, whose state is not a graph's, or whose graph is already open is closed, not left blank.
      for (const state of [{ campaignRoot: path.join(torys, 'no-such-campaign'), placed: [] }, { placed: 'nonsense' }, { campaignRoot: torys, placed: [] }]) {
        const stray = vscode.window.createWebviewPanel(GRAPH_VIEW_TYPE, 'Graph', vscode.ViewColumn.Active, { enableScripts: true });
        let closed = false;
        stray.onDidDispose(() => (closed = true));
        assert.equal(await api.graphs.restore(stray, state), undefined, `nothing restored from ${JSON.stringify(state)}`);
        assert.ok(closed, `the panel for ${JSON.stringify(state)} is closed`);
      }
      assert.equal(api.graphs.get(torys), graphPanel, 'the open graph stays');
    });

    for (const theme of THEMES) it(`is drawn in the ${theme[0]} theme`, () => inTheme(graphPanel, theme, 'campaign-graph-torys', MARKER));
  });
});
