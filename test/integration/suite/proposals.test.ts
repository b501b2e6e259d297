import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import type { CampaignIndex } from '../../../src/views/campaignIndex';
import type { AdventuresNode } from '../../../src/views/playTrees';
import type { ProposalOutcome } from '../../../src/views/proposals';
import { FakeOllama, unusedLoopbackUrl } from '../../support/fakeOllama';
import { playScene, writePlayedCampaign } from '../../support/playedCampaign';
import { activatedExtension, capture, harnessConfig, settled, waitFor } from './harness';

/**
 * Propose Canon Updates… in the real workbench: the refactor preview opens with every proposed change,
 * Discard leaves the files as they were (and remembers it), Apply edits them and the index follows.
 */
describe('canon proposals in the refactor preview', function () {
  this.timeout(180_000);
  let api: StorytellerApi;
  let played: string;
  let index: CampaignIndex;
  let fake: FakeOllama | undefined;
  const config = () => vscode.workspace.getConfiguration('storyteller');
  /** Points the narrator at `host` (and `model`), and waits until the extension reads it. */
  const useServer = async (host: string, model?: string) => {
    await config().update('ollama.host', host, vscode.ConfigurationTarget.Global);
    await config().update('narrator.model', model, vscode.ConfigurationTarget.Global);
    await waitFor(() => api.settings.current.ollamaHost === host, 5000, 'the Ollama host setting');
  };

  const adventureNode = () =>
    api.adventures.getChildren().find((n): n is Extract<AdventuresNode, { kind: 'adventure' }> => n.kind === 'adventure' && n.adventure.title === 'The Night Watch');
  const read = (rel: string) => fs.readFileSync(path.join(played, ...rel.split('/')), 'utf8');
  /** Runs the command from the adventure's context menu entry and waits for the preview to show `marker`. */
  const openPreview = async (name: string, marker: RegExp) => {
    const node = adventureNode();
    assert.ok(node, 'the Adventures view lists the played adventure');
    const running = vscode.commands.executeCommand<ProposalOutcome>('storyteller.proposeCanonUpdates', node);
    const seen = await waitFor(async () => {
      const reply = await capture(name, 300);
      return marker.test(reply.workbenchText) && reply;
    }, 60_000, 'the refactor preview with the proposed changes');
    return { running, seen };
  };

  before(async () => {
    api = (await activatedExtension()).exports as StorytellerApi;
    const root = path.resolve(harnessConfig().workspace);
    await settled(api.knowledge, 'every campaign index');
    // No model answers until a test starts one: the rules alone draft, whatever runs on this machine.
    await useServer(await unusedLoopbackUrl());
    // A second campaign beside the example, played: its own id, so its play data is its own.
    played = path.join(path.dirname(root), 'played');
    writePlayedCampaign(played, root);
    fs.writeFileSync(path.join(played, 'campaign.yaml'), read('campaign.yaml').replace('id: westhaven', 'id: played').replace('title: The Westhaven Campaign', 'title: Westhaven, Played'));
    assert.ok(vscode.workspace.updateWorkspaceFolders(vscode.workspace.workspaceFolders!.length, 0, { uri: vscode.Uri.file(played) }));
    index = await waitFor(() => api.knowledge.get(played), 30_000, 'the played campaign to be found');
    await waitFor(async () => {
      await settled(index, "the played campaign's index");
      return index.store?.getSourceByPath('places/north-gate.md') !== undefined;
    }, 60_000, 'the played campaign indexed');
    playScene(index.session);
    api.adventures.refresh();
  });

  after(async () => {
    await config().update('ollama.host', undefined, vscode.ConfigurationTarget.Global);
    await config().update('narrator.model', undefined, vscode.ConfigurationTarget.Global);
    await fake?.close();
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    const at = vscode.workspace.workspaceFolders!.findIndex((f) => f.uri.fsPath === played);
    if (at >= 0) vscode.workspace.updateWorkspaceFolders(at, 1);
    await waitFor(() => !api.knowledge.get(played), 30_000, 'the played campaign to close');
    fs.rmSync(played, { recursive: true, force: true });
  });

  it('shows every proposed change in the preview, and Discard writes nothing and is remembered', async () => {
    const before = ['characters/mara.md', 'places/bridge.md', 'places/north-gate.md'].map(read);
    // Grouped by file, each change a line to tick: nothing is checked until the writer says yes.
    const { running, seen } = await openPreview('proposals-preview', /\*\*Status:\*\* destroyed/);
    for (const shown of [/mara\.md/, /\*\*Age:\*\* 52/, /\*\*Trust:\*\* 55/, /north-gate-update\.md/, /tomas-the-smuggler\.md/]) assert.match(seen.workbenchText, shown);
    // The same changes by their labels: each turn and reason.
    await vscode.commands.executeCommand('refactorPreview.groupByType');
    const labelled = await waitFor(async () => {
      const reply = await capture('proposals-preview-by-reason', 300);
      return /Turn 2: Sister Mara — Age: canon says "34"; play made it "52"/.test(reply.workbenchText) && reply;
    }, 30_000, 'the preview grouped by each change\'s turn and reason');
    assert.match(labelled.workbenchText, /Turn 3: Sister Mara — Trust: play made it "55"; canon does not say/);
    await vscode.commands.executeCommand('refactorPreview.groupByFile');
    await capture('proposals-discarded', 200, [{ action: 'click', selector: '.bulk-edit-panel .buttons .monaco-button:has-text("Discard")' }]);
    const outcome = await running;
    assert.equal(outcome.applied.length, 0);
    assert.equal(outcome.discarded.length, 5);
    assert.deepEqual(['characters/mara.md', 'places/bridge.md', 'places/north-gate.md'].map(read), before, 'nothing written');
    assert.equal(fs.existsSync(path.join(played, 'characters', 'tomas-the-smuggler.md')), false);
    const again = await vscode.commands.executeCommand<ProposalOutcome>('storyteller.proposeCanonUpdates', adventureNode());
    assert.equal(again.set.proposals.length, 0, 'not proposed again for the same turns');
    assert.equal(again.set.discardedBefore, 5);
  });

  it('a later turn proposes anew; Apply edits the file, saves it, and the index follows', async () => {
    const play = index.session.play;
    const adventure = play.adventure(adventureNode()!.adventure.id);
    const head = play.turn(adventure.headTurnId!);
    const turn = play.createTurn({ adventureId: adventure.id, parentId: head.id, action: { kind: 'do', text: 'A year passes in the abbey' }, model: null, stateAfter: {} });
    play.finishTurn(turn.id, { status: 'complete', narration: 'Winter again.', error: null, stateDelta: null, stateAfter: { ...head.stateAfter, 'npc.mara.age': 53 }, refusals: [], promptEvalCount: null, evalCount: null });
    const { running } = await openPreview('proposals-preview-turn-4', /\*\*Age:\*\* 53/);
    // The writer ticks the change (the file's box), then applies.
    await capture('proposals-ticked', 200, [{ action: 'click', selector: '.bulk-edit-panel .monaco-list-row .edit-checkbox' }]);
    await capture('proposals-applied', 200, [{ action: 'click', selector: '.bulk-edit-panel .buttons .monaco-button:has-text("Apply")' }]);
    const outcome = await running;
    assert.deepEqual(outcome.applied.map((p) => p.file), ['characters/mara.md']);
    await waitFor(() => /- \*\*Age:\*\* 53/.test(read('characters/mara.md')), 15_000, 'the edit saved to disk');
    await waitFor(async () => {
      await settled(index, "the played campaign's index");
      return /Age:?\*?\*? 53/.test(index.store!.getSourceContent(index.store!.getSourceByPath('characters/mara.md')!.id) ?? '');
    }, 30_000, 'the index to hold the applied edit');
  });

  it("a model's proposal appears in the preview labelled with its turn and reason, and what it may not do is named with why", async () => {
    fake = await FakeOllama.start({ chatModels: ['llama3.2'], capabilities: ['completion', 'tools'] });
    await useServer(fake.url, 'llama3.2');
    fake.queue(
      {
        toolCalls: [
          { name: 'propose_edit', arguments: { file: 'places/bridge.md', old_text: 'It crosses the river below the Abbey.', new_text: 'It crossed the river below the Abbey until the night its ropes were cut.', reason: 'The bridge fell in turn 2', turns: [2] } },
          { name: 'propose_edit', arguments: { file: '../outside.md', old_text: '', new_text: '# Out\n', reason: 'escape', turns: [2] } },
        ],
      },
      { chunks: ['Nothing else changed.'] },
    );
    const before = read('places/bridge.md');
    const { running, seen } = await openPreview('proposals-model-preview', /until the night its ropes were cut/);
    assert.match(seen.workbenchText, /bridge\.md/);
    await vscode.commands.executeCommand('refactorPreview.groupByType');
    await waitFor(async () => {
      const reply = await capture('proposals-model-by-reason', 300);
      return /Turn 2: The bridge fell in turn 2/.test(reply.workbenchText) && /\.\.\/outside\.md: the path has an empty, '\.' or '\.\.' segment/.test(reply.workbenchText) && reply;
    }, 30_000, "the model's edit by its turn and reason, and the refused one named with why");
    await vscode.commands.executeCommand('refactorPreview.groupByFile');
    await capture('proposals-model-discarded', 200, [{ action: 'click', selector: '.bulk-edit-panel .buttons .monaco-button:has-text("Discard")' }]);
    const outcome = await running;
    assert.match(outcome.set.drafting, /^llama3\.2 drafted 1 of 2 proposed edits through native tool calls/);
    assert.deepEqual(outcome.set.proposals.map((p) => [p.origin, p.file]), [['model', 'places/bridge.md']]);
    assert.deepEqual(outcome.set.refused.map((r) => r.file), ['../outside.md']);
    assert.equal(read('places/bridge.md'), before, 'nothing written');
    assert.equal(fs.existsSync(path.join(path.dirname(played), 'outside.md')), false);
  });
});
