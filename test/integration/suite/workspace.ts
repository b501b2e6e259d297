// The example campaign the integration workspace opens, as suites that use its index start from it.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
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
  const index = await waitFor(() => api.knowledge.get(root), 10_000, 'the campaign index');
  await settled(index);
  return { api, root, index };
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
