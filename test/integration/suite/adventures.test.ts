import assert from 'node:assert/strict';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import type { PlayPanel } from '../../../src/views/playPanel';
import type { AdventuresNode } from '../../../src/views/playTrees';
import { activatedExtension, capture, harnessConfig, settled, waitFor } from './harness';
import { inPlayDb } from './workspace';

/** Managing adventures from the Adventures view, in the real workbench. */
describe('adventures in the Adventures view', () => {
  let api: StorytellerApi;
  let root: string;

  const adventureNode = (title: string) =>
    api.adventures.getChildren().find((n): n is Extract<AdventuresNode, { kind: 'adventure' }> => n.kind === 'adventure' && n.adventure.title === title);

  before(async () => {
    api = (await activatedExtension()).exports as StorytellerApi;
    root = path.resolve(harnessConfig().workspace);
    await settled(api.knowledge, 'every campaign index');
  });

  // Whatever a test left (a failure midway, the adventure the last one restored), the next suite never sees.
  after(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    for (const title of ['The Salt Road', 'The Salt Road, Retold']) {
      const node = adventureNode(title);
      if (node) inPlayDb(node.playPath, 'store.deleteAdventure(process.env.ADVENTURE);', { ADVENTURE: node.adventure.id });
    }
    api.adventures.refresh();
  });

  it('starts a new adventure in its own play panel and lists it', async () => {
    const panel = await vscode.commands.executeCommand<PlayPanel>('storyteller.newAdventure', { campaignRoot: root, title: 'The Salt Road' });
    assert.ok(panel);
    assert.equal(panel.panel.title, 'Play: The Salt Road');
    const node = adventureNode('The Salt Road');
    assert.ok(node, 'the Adventures view lists the new adventure');
    assert.equal(panel.adventureId, node.adventure.id);
  });

  it('renames an adventure: the view and the open panel follow', async () => {
    const node = adventureNode('The Salt Road')!;
    await vscode.commands.executeCommand('storyteller.renameAdventure', node, 'The Salt Road, Retold');
    assert.ok(adventureNode('The Salt Road, Retold'));
    assert.equal(adventureNode('The Salt Road'), undefined);
    const [panel] = api.play.list().filter((p) => p.adventureId === node.adventure.id);
    assert.equal(panel?.panel.title, 'Play: The Salt Road, Retold');
    await vscode.commands.executeCommand('storyteller.adventures.focus');
    const seen = await capture('adventures-view-renamed', 800);
    assert.match(seen.workbenchText, /The Salt Road, Retold/);
  });

  it('plays a chosen adventure, reusing its panel when one is open', async () => {
    const node = adventureNode('The Salt Road, Retold')!;
    const open = api.play.list().length;
    const again = await vscode.commands.executeCommand<PlayPanel>('storyteller.playAdventure', node);
    assert.equal(api.play.list().length, open, 'no second panel for the same adventure');
    assert.equal(again?.adventureId, node.adventure.id);
    again!.dispose();
    const reopened = await vscode.commands.executeCommand<PlayPanel>('storyteller.playAdventure', node);
    assert.equal(reopened?.adventureId, node.adventure.id);
  });

  it('deletes an adventure only after the writer confirms, closing its panel, and Undo brings it back whole', async () => {
    const node = adventureNode('The Salt Road, Retold')!;
    const deleting = vscode.commands.executeCommand<boolean>('storyteller.deleteAdventure', node);
    const dialog = await waitFor(async () => {
      const seen = await capture('delete-adventure-confirmation', 300);
      return seen.workbenchText.includes("Delete the adventure 'The Salt Road, Retold'?") && seen;
    }, 15_000, 'the confirmation dialog');
    assert.match(dialog.workbenchText, /Undo in the notification brings them back/);
    const turnsBefore = inPlayDb(node.playPath, 'process.stdout.write(String(store.allTurns(process.env.ADVENTURE).length));', { ADVENTURE: node.adventure.id });
    await capture('delete-adventure-confirmed', 100, [{ action: 'click', selector: '.monaco-dialog-box .monaco-button:has-text("Delete Adventure")' }]);
    assert.equal(await deleting, true);
    assert.equal(adventureNode('The Salt Road, Retold'), undefined);
    assert.equal(api.play.list().filter((p) => p.adventureId === node.adventure.id).length, 0, 'its panel closed');
    assert.equal(inPlayDb(node.playPath, 'process.stdout.write(String(store.getAdventure(process.env.ADVENTURE) === undefined));', { ADVENTURE: node.adventure.id }), 'true');
    // The misclick taken back: the notification's Undo.
    await waitFor(async () => (await capture('delete-adventure-undo-offered', 300)).workbenchText.includes("Deleted the adventure 'The Salt Road, Retold'"), 60_000, 'the notification offering Undo');
    await capture('delete-adventure-undone', 200, [{ action: 'click', selector: '.notifications-toasts .monaco-button:has-text("Undo")' }]);
    await waitFor(() => adventureNode('The Salt Road, Retold'), 60_000, 'the adventure back in the Adventures view');
    assert.equal(inPlayDb(node.playPath, 'process.stdout.write(String(store.allTurns(process.env.ADVENTURE).length));', { ADVENTURE: node.adventure.id }), turnsBefore, 'every turn back');
  });
});
