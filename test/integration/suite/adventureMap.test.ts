import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import type { Turn } from '../../../src/story/types';
import { MAP_VIEW_TYPE, type AdventureMapPanel } from '../../../src/views/adventureMapPanel';
import type { CampaignIndex } from '../../../src/views/campaignIndex';
import type { PlayPanel } from '../../../src/views/playPanel';
import type { AdventuresNode } from '../../../src/views/playTrees';
import { EXAMPLE_CAMPAIGN } from '../../support/corpora';
import { activatedExtension, capture, harnessConfig, settled, THEMES, useTheme, waitFor, webviewText } from './harness';

const MAP_MARKER = 'Adventure map:';
const PANEL_MARKER = 'Preview Context';

/**
 * The Adventure Map in the real workbench, on a campaign and an adventure of its own (a copy of the example
 * beside the workspace, removed afterwards), so no other suite file sees its turns or its panels.
 */
describe('the adventure map', function () {
  this.timeout(180_000);
  let api: StorytellerApi;
  let mapped: string;
  let index: CampaignIndex;
  let map: AdventureMapPanel;
  const turns: Record<'gate' | 'inside' | 'bells' | 'bellsAgain' | 'river', Turn> = {} as never;
  let adventureId: string;

  const adventureNode = () =>
    api.adventures.getChildren().find((n): n is Extract<AdventuresNode, { kind: 'adventure' }> => n.kind === 'adventure' && n.adventure.id === adventureId);
  const headId = () => index.session.play.adventure(adventureId).headTurnId;
  const places = () => new Map(map.map()!.nodes.map((n) => [n.id, `${n.row},${n.column}`]));
  const playPanel = () => api.play.list().find((p) => p.adventureId === adventureId);

  /** Captures until the map's page satisfies `test`, doing `steps` once first; returns its frame's text. */
  async function mapShows(name: string, test: (text: string, html: string) => boolean, steps: Parameters<typeof capture>[2] = []): Promise<string> {
    let first = true;
    return waitFor(async () => {
      const reply = await capture(name, 300, first ? steps : []);
      first = false;
      const frame = reply.frames.find((f) => f.text.includes(MAP_MARKER));
      return frame && test(frame.text, frame.html) && frame.text;
    }, 30_000, `the adventure map to show ${name}`);
  }

  before(async () => {
    api = (await activatedExtension()).exports as StorytellerApi;
    await settled(api.knowledge, 'every campaign index');
    mapped = path.join(path.dirname(path.resolve(harnessConfig().workspace)), 'mapped');
    fs.cpSync(EXAMPLE_CAMPAIGN, mapped, { recursive: true });
    fs.rmSync(path.join(mapped, '.storyteller'), { recursive: true, force: true });
    const yaml = path.join(mapped, 'campaign.yaml');
    fs.writeFileSync(yaml, fs.readFileSync(yaml, 'utf8').replace('id: westhaven', 'id: mapped').replace('title: The Westhaven Campaign', 'title: Westhaven, Mapped'));
    assert.ok(vscode.workspace.updateWorkspaceFolders(vscode.workspace.workspaceFolders!.length, 0, { uri: vscode.Uri.file(mapped) }));
    index = await waitFor(() => api.knowledge.get(mapped), 30_000, 'the mapped campaign to be found');
    await settled(index, "the mapped campaign's index");

    // Stored as finished replies, no model: the story, a second reply to its last action, and a fork after turn 1.
    const play = index.session.play;
    adventureId = play.createAdventure({ campaignId: index.campaign.id, title: 'The Map Walk' }).id;
    const tell = (parent: Turn | null, action: string, narration: string): Turn => {
      const turn = play.createTurn({ adventureId, parentId: parent?.id ?? null, action: { kind: 'do', text: action }, model: null, stateAfter: {} });
      return play.finishTurn(turn.id, { status: 'complete', narration, error: null, stateDelta: null, stateAfter: {}, refusals: [], promptEvalCount: null, evalCount: null });
    };
    turns.gate = tell(null, 'I knock on the abbey gate', 'The gate creaks open onto a cold courtyard.');
    turns.inside = tell(turns.gate, 'I step inside', 'Candles gutter in the nave.');
    turns.bells = tell(turns.inside, 'I ring the bells', 'The bells wake the whole valley.');
    turns.bellsAgain = tell(turns.inside, 'I ring the bells', 'The ropes are cut; the bells stay silent.');
    turns.river = tell(turns.gate, 'I walk to the river instead', 'Mist lies on the water like wool.');
    play.setHead(adventureId, turns.bells.id);
    api.adventures.refresh();
  });

  after(async () => {
    await useTheme(undefined);
    map?.dispose();
    playPanel()?.dispose();
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    const at = vscode.workspace.workspaceFolders!.findIndex((f) => f.uri.fsPath === mapped);
    if (at >= 0) vscode.workspace.updateWorkspaceFolders(at, 1);
    await waitFor(() => !api.knowledge.get(mapped), 30_000, 'the mapped campaign to close');
    fs.rmSync(mapped, { recursive: true, force: true });
  });

  it("opens from the adventure's context menu and draws its turns: the current story marked, the swipe and the fork beside it", async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    const node = adventureNode();
    assert.ok(node, 'the Adventures view lists the adventure');
    map = (await vscode.commands.executeCommand<AdventureMapPanel>('storyteller.openAdventureMap', node))!;
    assert.ok(map, 'the command returns the map');
    const html = map.panel.webview.html;
    assert.match(html, /default-src 'none'/);
    assert.match(html, /script-src 'nonce-[^']+'/);
    assert.match(html, /dist\/map\.js/, 'the map loads its own script');
    assert.equal(map.panel.title, 'Map: The Map Walk');

    const text = await mapShows('adventure-map', (t) => t.includes('5 turns · 3 branches · current story at turn 3'));
    for (const shown of ['I knock on the abbey gate', 'I step inside', 'I ring the bells', 'Another reply (2 of 2):', 'A fork (2 of 2):', 'I walk to the river instead']) assert.ok(text.includes(shown), shown);
    const reply = await capture('adventure-map-marks', 100, [], [
      ...[turns.gate, turns.inside, turns.bells].map((t) => `.turn.current[data-id="${t.id}"]`),
      `.turn.head[data-id="${turns.bells.id}"]`,
      `.turn.other.swipe[data-id="${turns.bellsAgain.id}"]`,
      `.turn.other.fork[data-id="${turns.river.id}"]`,
      `.edge.swipe`,
    ]);
    for (const [selector, at] of Object.entries(reply.located)) assert.ok(at, `${selector} is drawn`);
    assert.match(webviewText(reply, MAP_MARKER), /Undo last turn/);
  });

  it("shows a turn's action and the first words of its reply when it has the focus", async () => {
    const text = await mapShows('adventure-map-focus', (t) => t.includes('Mist lies on the water like wool.'), [{ action: 'press', selector: `.turn[data-id="${turns.river.id}"]`, key: 'Shift' }]);
    assert.match(text, /Turn 2 · do · reply 2 of 2 \(fork\) · on another branch/);
  });

  it('opens a clicked turn in the play panel, on its branch, and follows a swipe made there', async () => {
    const before = places();
    await capture('adventure-map-click', 300, [{ action: 'click', selector: `.turn[data-id="${turns.bellsAgain.id}"] circle` }]);
    await waitFor(() => headId() === turns.bellsAgain.id, 15_000, 'the clicked reply to become the current story');
    const panel = await waitFor(playPanel, 15_000, 'the play panel to open');
    await waitFor(async () => {
      const reply = await capture('adventure-map-opened-turn', 300, [], [`article.revealed[data-turn-id="${turns.bellsAgain.id}"]`]);
      const story = webviewText(reply, PANEL_MARKER);
      return story.includes('the bells stay silent') && !story.includes('wake the whole valley') && reply.located[`article.revealed[data-turn-id="${turns.bellsAgain.id}"]`] !== null;
    }, 30_000, 'the play panel to show the clicked reply, marked');
    assert.deepEqual(map.map()!.nodes.filter((n) => n.current).map((n) => n.id), [turns.gate.id, turns.inside.id, turns.bellsAgain.id]);
    assert.ok(map.panel.visible && panel.panel.visible, 'the play panel opened beside the map, not over it');
    const marked = await capture('adventure-map-clicked-marked', 300, [], [`.turn.opened[aria-current="true"][data-id="${turns.bellsAgain.id}"]`, '.turn.opened']);
    assert.ok(marked.located[`.turn.opened[aria-current="true"][data-id="${turns.bellsAgain.id}"]`], 'the clicked turn is marked on the map');

    // A swipe back in the panel: the map follows, nothing moves.
    await capture('adventure-map-swipe-in-panel', 300, [{ action: 'click', selector: '#transcript article:last-child .swipe-previous' }]);
    await waitFor(() => headId() === turns.bells.id, 15_000, 'the swipe back to the first reply');
    await mapShows('adventure-map-follows-swipe', (_t, html) => new RegExp(`class="turn current head[^"]*"[^>]*data-id="${turns.bells.id}"`).test(html));
    assert.deepEqual(places(), before, 'every turn stays where it was drawn');
    assert.equal(panel, playPanel(), 'one play panel for the adventure');
  });

  it('opens beside the play panel in front, and a click shows the turn there with the map still in view, marked', async () => {
    const panel = (await vscode.commands.executeCommand<PlayPanel>('storyteller.openPlayPanel', { campaignRoot: mapped, adventureId }))!;
    map.dispose();
    await waitFor(() => panel.panel.active, 15_000, 'the play panel in front');
    map = (await vscode.commands.executeCommand<AdventureMapPanel>('storyteller.openAdventureMap', adventureNode()))!;
    await mapShows('adventure-map-beside-panel', (t) => t.includes('current story at turn 3'));
    assert.notEqual(map.panel.viewColumn, panel.panel.viewColumn, 'the map opens in a group of its own');
    assert.ok(panel.panel.visible, 'the play panel stays in view beside the map');
    await capture('adventure-map-click-beside', 300, [{ action: 'click', selector: `.turn[data-id="${turns.inside.id}"] circle` }]);
    const seen = await waitFor(async () => {
      const reply = await capture('adventure-map-and-panel', 300, [], [`.turn.opened[data-id="${turns.inside.id}"]`, `article.revealed[data-turn-id="${turns.inside.id}"]`]);
      return Object.values(reply.located).every(Boolean) && reply;
    }, 30_000, 'the clicked turn marked on the map and in the play panel');
    assert.ok(map.panel.visible && panel.panel.visible, 'the map and the play panel both in view after the click');
    assert.match(seen.workbenchText, /Map: The Map Walk/);
    assert.equal(headId(), turns.bells.id, 'a turn on the current story opens without changing it');
  });

  it('forks from the picture with the keyboard and undoes from it: the play panel and the Adventures view follow', async () => {
    const before = places();
    await capture('adventure-map-fork', 300, [{ action: 'press', selector: `.turn[data-id="${turns.gate.id}"]`, key: 'f' }]);
    await waitFor(() => headId() === turns.gate.id, 15_000, 'the fork to make turn 1 the end of the current story');
    await waitFor(async () => webviewText(await capture('adventure-map-fork-notice', 300), PANEL_MARKER).includes('Continuing from turn 1'), 30_000, 'the play panel to say where the later turns went');
    await mapShows('adventure-map-forked', (t) => t.includes('current story at turn 1'));
    const [current] = api.adventures.getChildren(adventureNode()!);
    assert.equal(api.adventures.getTreeItem(current!).label, 'Current story');
    const [first] = api.adventures.getChildren(current!);
    assert.equal(first?.kind === 'turn' ? first.turn.id : undefined, turns.gate.id, 'the current story starts at the turn forked from');

    await capture('adventure-map-undo', 300, [{ action: 'click', selector: '#undo' }]);
    await waitFor(() => headId() === null, 15_000, 'undo to step the story back before turn 1');
    await mapShows('adventure-map-undone', (t) => t.includes('current story before the first turn'));
    await waitFor(async () => webviewText(await capture('adventure-map-undone-panel', 300), PANEL_MARKER).includes('Nothing played yet'), 30_000, 'the play panel to show the story undone');
    assert.equal(index.session.play.allTurns(adventureId).length, 5, 'fork and undo delete nothing');
    assert.deepEqual(places(), before, 'and move nothing on the map');
    // Back to where the story was, for the pictures below.
    await playPanel()!.openTurn(turns.bells.id);
  });

  it('comes back after the window reloads, drawing the adventure its webview saved', async () => {
    map.panel.dispose();
    // What VS Code hands the serializer after a reload: a bare panel and the state the webview saved.
    const restored = vscode.window.createWebviewPanel(MAP_VIEW_TYPE, 'Map', vscode.ViewColumn.Active, { enableScripts: true });
    map = (await api.maps.restore(restored, { campaignRoot: mapped, adventureId }))!;
    assert.equal(map?.panel, restored, 'the restored panel is the one VS Code brought back');
    await mapShows('adventure-map-restored', (t) => t.includes('5 turns · 3 branches'));
    assert.equal(map.panel.title, 'Map: The Map Walk');

    // A panel whose adventure is gone, whose state is not a map's, or whose map is already open is closed, not left blank.
    for (const state of [{ campaignRoot: mapped, adventureId: 'no-such-adventure' }, { adventureId }, { campaignRoot: mapped, adventureId }]) {
      const stray = vscode.window.createWebviewPanel(MAP_VIEW_TYPE, 'Map', vscode.ViewColumn.Active, { enableScripts: true });
      let closed = false;
      stray.onDidDispose(() => (closed = true));
      assert.equal(await api.maps.restore(stray, state), undefined, `nothing restored from ${JSON.stringify(state)}`);
      assert.ok(closed, `the panel for ${JSON.stringify(state)} is closed`);
    }
    assert.deepEqual(api.maps.list(), [map], 'the open map stays, alone');
  });

  for (const [theme, kind] of THEMES) {
    it(`is drawn in the ${theme} theme`, async () => {
      await useTheme(theme, kind);
      map.panel.reveal();
      const slug = theme.toLowerCase().replace(/\s+/g, '-');
      await mapShows(`adventure-map-${slug}`, (t) => t.includes('current story at turn 3'), [{ action: 'press', selector: `.turn[data-id="${turns.bellsAgain.id}"]`, key: 'Shift' }]);
    });
  }
});
