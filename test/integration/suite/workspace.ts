// The example campaign the integration workspace opens, as suites that use its index start from it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import type { CampaignIndex } from '../../../src/views/campaignIndex';
import { activatedExtension, harnessConfig, settled, waitFor } from './harness';

export interface CampaignWorkspace {
  api: StorytellerApi;
  /** The campaign's folder: the workspace folder itself. */
  root: string;
  index: CampaignIndex;
}

/** The extension's API and the workspace campaign's index, once activation has indexed it in the background. */
export async function campaignWorkspace(): Promise<CampaignWorkspace> {
  const api = (await activatedExtension()).exports as StorytellerApi;
  const root = path.resolve(harnessConfig().workspace);
  await settled(api.knowledge, 'every campaign index');
  const index = await waitFor(() => api.knowledge.get(root), 20_000, 'the campaign index');
  await settled(index);
  return { api, root, index };
}

/**
 * Adds `dir`, a campaign folder the test made, to the workspace as a writer would, and waits until its
 * index holds more than `sources` files.
 */
export async function openCampaignFolder(api: StorytellerApi, dir: string, sources = 0): Promise<CampaignIndex> {
  assert.ok(vscode.workspace.updateWorkspaceFolders(vscode.workspace.workspaceFolders!.length, 0, { uri: vscode.Uri.file(dir) }));
  const index = await waitFor(() => api.knowledge.get(dir), 30_000, `${path.basename(dir)} to be found`);
  await waitFor(async () => {
    await settled(index, `${path.basename(dir)}'s index`);
    return (index.store?.counts().sources ?? 0) > sources && index;
  }, 90_000, `${path.basename(dir)} indexed`);
  return index;
}

/** Takes the test's campaign folder out of the workspace and deletes it: nothing is left for the next suite. */
export async function closeCampaignFolder(api: StorytellerApi, dir: string): Promise<void> {
  const at = vscode.workspace.workspaceFolders!.findIndex((f) => f.uri.fsPath === dir);
  if (at >= 0) vscode.workspace.updateWorkspaceFolders(at, 1);
  await waitFor(() => !api.knowledge.get(dir), 30_000, `${path.basename(dir)} to close`);
  fs.rmSync(dir, { recursive: true, force: true });
}

/**
 * Runs `code` with `store`, a PlayStore over `playPath`, in another process, as `storyteller play` in a
 * terminal would, and returns what it wrote to stdout. Never in this one: the extension loads its own copy
 * of SQLite, and two copies in one process release each other's locks on the same file (disk I/O errors).
 */
export function inPlayDb(playPath: string, code: string, env: Record<string, string> = {}): string {
  const repo = path.resolve(__dirname, '../..');
  const script = `const { PlayStore } = require('./src/story/playStore'); const store = new PlayStore(process.env.PLAY_DB); try { ${code} } finally { store.close(); }`;
  return execFileSync(path.join(repo, 'node_modules', '.bin', 'node'), ['--import', 'tsx', '-e', script], {
    cwd: repo,
    env: { ...process.env, ...env, PLAY_DB: playPath },
    encoding: 'utf8',
  }).trim();
}
