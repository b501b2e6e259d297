import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import type { CampaignIndex } from '../../../src/views/campaignIndex';
import type { AdventuresNode } from '../../../src/views/playTrees';
import type { ProposalOutcome } from '../../../src/views/proposals';
import { listDiscarded } from '../../../src/story';
import { FakeOllama, unusedLoopbackUrl } from '../../support/fakeOllama';
import { playScene, writePlayedCampaign } from '../../support/playedCampaign';
import { activatedExtension, capture, harnessConfig, settled, waitFor } from './harness';

/**
 * Propose Canon Updates… in the real workbench: the refactor preview opens with every proposed change ticked,
 * Discard leaves the files as they were and keeps the proposals, Apply edits them and the index follows, and a
 * discard is only ever on purpose and can be undone.
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
    await waitFor(() => api.settings.current.ollamaHost === host, 20_000, 'the Ollama host setting');
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

  it('offers every proposed change ticked; Discard writes nothing and keeps them, discarding is asked for and undoable', async () => {
    const before = ['characters/mara.md', 'places/bridge.md', 'places/north-gate.md'].map(read);
    const { running, seen } = await openPreview('proposals-preview', /\*\*Status:\*\* destroyed/);
    for (const shown of [/mara\.md/, /\*\*Age:\*\* 52/, /\*\*Trust:\*\* 55/, /north-gate-update\.md/, /tomas-the-smuggler\.md/]) assert.match(seen.workbenchText, shown);
    // Every change is ticked: Apply as shown would write them all; the writer unticks what they refuse.
    const ticked = '.bulk-edit-panel .monaco-list-row .edit-checkbox.checked';
    const unticked = '.bulk-edit-panel .monaco-list-row .edit-checkbox:not(.checked)';
    const boxes = await capture('proposals-preview-ticked', 200, [], [ticked, unticked]);
    assert.ok(boxes.located[ticked], 'the rows have ticked boxes');
    assert.equal(boxes.located[unticked], null, 'no row is unticked');
    // The same changes by their labels: each turn and reason.
    await vscode.commands.executeCommand('refactorPreview.groupByType');
    const labelled = await waitFor(async () => {
      const reply = await capture('proposals-preview-by-reason', 300);
      return /Turn 2: Sister Mara — Age: canon says "34"; play made it "52"/.test(reply.workbenchText) && reply;
    }, 60_000, 'the preview grouped by each change\'s turn and reason');
    assert.match(labelled.workbenchText, /Turn 3: Sister Mara — Trust: play made it "55"; canon does not say/);
    assert.doesNotMatch(labelled.workbenchText, /Review the proposed canon edits/, 'the entry that opens the preview is not shown');
    await vscode.commands.executeCommand('refactorPreview.groupByFile');
    await capture('proposals-discarded', 200, [{ action: 'click', selector: '.bulk-edit-panel .buttons .monaco-button:has-text("Discard")' }]);
    const outcome = await running;
    assert.deepEqual([outcome.applied.length, outcome.discarded.length], [0, 0]);
    assert.deepEqual(['characters/mara.md', 'places/bridge.md', 'places/north-gate.md'].map(read), before, 'nothing written');
    assert.equal(fs.existsSync(path.join(played, 'characters', 'tomas-the-smuggler.md')), false);
    const adventureId = adventureNode()!.adventure.id;
    const discards = () => listDiscarded(index.session.play.db, index.campaign.id, adventureId).length;
    assert.equal(discards(), 0, 'a Discard in the preview is not a discard for good');
    // The writer discards them on purpose, from the question the notification asks, then changes their mind.
    const asked = await waitFor(async () => {
      const reply = await capture('proposals-discard-asked', 300);
      return /Nothing was written from The Night Watch: the 5 proposals will be proposed again next time/.test(reply.workbenchText) && reply;
    }, 60_000, 'the question whether to discard them');
    assert.ok(asked);
    await capture('proposals-discard-them', 200, [{ action: 'click', selector: '.notifications-toasts .monaco-button:has-text("Discard Them")' }]);
    await waitFor(() => discards() === 5, 60_000, 'the five discards recorded');
    const again = await vscode.commands.executeCommand<ProposalOutcome>('storyteller.proposeCanonUpdates', adventureNode());
    assert.equal(again.set.proposals.length, 0, 'not proposed again for the same turns');
    assert.equal(again.set.discardedBefore, 5);
    await capture('proposals-undo-discard', 300, [{ action: 'click', selector: '.notifications-toasts .monaco-button:has-text("Undo Discard")' }]);
    await waitFor(() => discards() === 0, 60_000, 'the discards undone');
  });

  it('Apply as shown writes every ticked change and saves it; what the writer unticked is discarded, with Undo', async () => {
    const play = index.session.play;
    const adventure = play.adventure(adventureNode()!.adventure.id);
    const head = play.turn(adventure.headTurnId!);
    const turn = play.createTurn({ adventureId: adventure.id, parentId: head.id, action: { kind: 'do', text: 'A year passes in the abbey' }, model: null, stateAfter: {} });
    play.finishTurn(turn.id, { status: 'complete', narration: 'Winter again.', error: null, stateDelta: null, stateAfter: { ...head.stateAfter, 'npc.mara.age': 53 }, refusals: [], promptEvalCount: null, evalCount: null });
    const { running } = await openPreview('proposals-preview-turn-4', /\*\*Age:\*\* 53/);
    // The writer refuses the smuggler's new page (its row's box), and applies the rest as shown.
    await capture('proposals-unticked', 200, [{ action: 'click', selector: '.bulk-edit-panel .monaco-list-row:has-text("tomas-the-smuggler.md") .edit-checkbox' }]);
    await capture('proposals-applied', 200, [{ action: 'click', selector: '.bulk-edit-panel .buttons .monaco-button:has-text("Apply")' }]);
    const outcome = await running;
    assert.deepEqual([...new Set(outcome.applied.map((p) => p.file))].sort(), ['characters/mara.md', 'places/bridge.md', 'places/north-gate-update.md']);
    assert.deepEqual(outcome.discarded.map((p) => p.file), ['characters/tomas-the-smuggler.md']);
    assert.equal(fs.existsSync(path.join(played, 'characters', 'tomas-the-smuggler.md')), false);
    await waitFor(() => /- \*\*Age:\*\* 53/.test(read('characters/mara.md')) && /- \*\*Status:\*\* destroyed/.test(read('places/bridge.md')), 30_000, 'the edits saved to disk');
    await waitFor(async () => {
      await settled(index, "the played campaign's index");
      return /Age:?\*?\*? 53/.test(index.store!.getSourceContent(index.store!.getSourceByPath('characters/mara.md')!.id) ?? '');
    }, 60_000, 'the index to hold the applied edit');
    await waitFor(async () => {
      const reply = await capture('proposals-applied-undo-offered', 300);
      return /1 edit you unticked is discarded/.test(reply.workbenchText) && reply;
    }, 60_000, 'the notification naming the unticked edit, with Undo Discard');
    await capture('proposals-applied-undo', 200, [{ action: 'click', selector: '.notifications-toasts .monaco-button:has-text("Undo Discard")' }]);
    await waitFor(() => listDiscarded(play.db, index.campaign.id, adventure.id).length === 0, 60_000, 'the unticked edit brought back');
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
    assert.deepEqual(outcome.set.proposals.filter((p) => p.origin === 'model').map((p) => p.file), ['places/bridge.md']);
    assert.deepEqual(outcome.set.refused.map((r) => r.file), ['../outside.md']);
    assert.equal(read('places/bridge.md'), before, 'nothing written');
    assert.equal(fs.existsSync(path.join(path.dirname(played), 'outside.md')), false);
  });
});
