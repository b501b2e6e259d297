import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import type { CampaignIndex } from '../../../src/views/campaignIndex';
import { activatedExtension, capture, harnessConfig, settled, waitFor } from './harness';

/** The Sources view's Reindex and Delete on one source, in the real workbench. */
describe('source actions', () => {
  let api: StorytellerApi;
  let root: string;
  let index: CampaignIndex;
  const rel = 'lore/ephemeral.md';
  const file = () => path.join(root, ...rel.split('/'));
  const source = () => index.store!.listSources().find((s) => s.path === rel);

  before(async () => {
    api = (await activatedExtension()).exports as StorytellerApi;
    root = path.resolve(harnessConfig().workspace);
    await settled(api.knowledge, 'every campaign index');
    index = api.knowledge.get(root)!;
    fs.mkdirSync(path.dirname(file()), { recursive: true });
    fs.writeFileSync(file(), '# The Ferry\n\nA flat-bottomed ferry crosses below the weir at dawn.\n');
    await waitFor(() => source(), 15_000, `${rel} to be indexed`);
  });

  after(async () => {
    fs.rmSync(path.join(root, 'lore'), { recursive: true, force: true });
    await waitFor(() => !source(), 15_000, `${rel} to leave the index`);
  });

  it('reindexes one source at once, without waiting for the watcher', async () => {
    fs.writeFileSync(file(), '# The Ferry\n\nThe ferryman charges a copper for each crossing, two after dark.\n');
    await vscode.commands.executeCommand('storyteller.reindexSource', vscode.Uri.file(file()));
    const [passage] = index.store!.listPassages(source()!.id);
    assert.match(passage!.text, /two after dark/, 'indexed by the time the command returns');
  });

  it('deletes a source only after the writer confirms, and the index follows', async () => {
    const deleting = vscode.commands.executeCommand<boolean>('storyteller.deleteSource', vscode.Uri.file(file()));
    const dialog = await waitFor(async () => {
      const seen = await capture('delete-source-confirmation', 300);
      return seen.workbenchText.includes(`Delete '${rel}' from the campaign?`) && seen;
    }, 15_000, 'the confirmation dialog');
    assert.match(dialog.workbenchText, /a Restore button follows/);
    await capture('delete-source-confirmed', 100, [{ action: 'click', selector: '.monaco-dialog-box .monaco-button:has-text("Delete File")' }]);
    assert.equal(await deleting, true);
    assert.equal(fs.existsSync(file()), false);
    await waitFor(() => !source(), 15_000, 'the deleted source to leave the index');

    // The promise in the dialog: Restore brings the file back byte for byte, and the index with it.
    await capture('delete-source-restore', 300, [{ action: 'click', selector: '.notifications-toasts .monaco-button:has-text("Restore")' }]);
    await waitFor(() => fs.existsSync(file()), 20_000, 'Restore to bring the deleted file back');
    assert.match(fs.readFileSync(file(), 'utf8'), /two after dark/);
    await waitFor(() => source(), 15_000, 'the restored file to be indexed again');
  });

  it('keeps the file when the writer cancels', async () => {
    const deleting = vscode.commands.executeCommand<boolean>('storyteller.deleteSource', vscode.Uri.file(file()));
    await waitFor(async () => (await capture('delete-source-asked', 300)).workbenchText.includes('Delete File'), 15_000, 'the confirmation dialog');
    await capture('delete-source-cancelled', 100, [{ action: 'click', selector: '.monaco-dialog-box .monaco-button:has-text("Cancel")' }]);
    assert.equal(await deleting, false);
    assert.equal(fs.existsSync(file()), true);
  });
});
