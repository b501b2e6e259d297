// The example campaign the integration workspace opens, as suites that use its index start from it.
import path from 'node:path';
import type { StorytellerApi } from '../../../src/extension';
import type { CampaignIndex } from '../../../src/views/campaignIndex';
import { activatedExtension, harnessConfig, waitFor } from './harness';

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
  await api.knowledge.idle();
  const index = await waitFor(() => api.knowledge.get(root), 10_000, 'the campaign index');
  await index.idle();
  return { api, root, index };
}
