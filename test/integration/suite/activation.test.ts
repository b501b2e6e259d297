import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import { activatedExtension, capture, harnessConfig, waitFor } from './harness';

describe('activation in the example campaign', () => {
  it('activates on its own because the workspace holds a campaign.yaml, with SQLite FTS5 working', async () => {
    const extension = await activatedExtension();
    const api = extension.exports as StorytellerApi;
    assert.equal(api.sqliteProblem, null);
  });

  it('registers every command it contributes', async () => {
    const extension = await activatedExtension();
    const contributed = (extension.packageJSON as { contributes: { commands: { command: string }[] } }).contributes.commands.map((c) => c.command);
    assert.ok(contributed.length > 0);
    const registered = new Set(await vscode.commands.getCommands(true));
    assert.deepEqual(contributed.filter((id) => !registered.has(id)), []);
  });

  it('finds the campaign folder and reads its campaign.yaml', async () => {
    const api = (await activatedExtension()).exports as StorytellerApi;
    await api.campaigns.ready();
    const workspace = harnessConfig().workspace;
    const [entry] = api.campaigns.list();
    assert.equal(entry?.state, 'loaded');
    assert.equal(entry.state === 'loaded' && entry.campaign.title, 'The Westhaven Campaign');
    assert.equal(entry.root, path.resolve(workspace));
    assert.ok(fs.existsSync(path.join(workspace, 'campaign.yaml')));
  });

  it('shows the Storyteller view container with the campaign in the Sources view', async () => {
    await activatedExtension();
    await vscode.commands.executeCommand('workbench.view.extension.storyteller');
    const reply = await waitFor(async () => {
      const seen = await capture('storyteller-view-container');
      return seen.workbenchText.includes('The Westhaven Campaign') && seen;
    }, 20_000, 'the Sources view to show the campaign');
    assert.match(reply.workbenchText, /SOURCES/i);
  });
});
