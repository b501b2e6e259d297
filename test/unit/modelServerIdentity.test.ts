import assert from 'node:assert/strict';
import { defaultSettings, type StorytellerSettings } from '../../src/session/defaults';
import { openSession } from '../../src/session/session';
import { makeCampaign, removeDir } from '../support/campaignDirs';
import { FakeOllama } from '../support/fakeOllama';

/**
 * A model name says which model only on one server: the same name on another server may be another
 * model, with another context length and other vectors.
 */
describe('the same model name on another server', () => {
  it('asks the new server for the context length instead of reusing the old server’s for that name', async () => {
    const roomy = await FakeOllama.start({ chatModels: ['llama3.2'], contextLength: 4096 });
    const small = await FakeOllama.start({ chatModels: ['llama3.2'], contextLength: 2048 });
    const root = makeCampaign({ 'characters/mara.md': '---\nclass: canon\n---\n# Sister Mara\n\n- Age: 34\n' }, 'id: westhaven\ntitle: Westhaven\n');
    let settings: StorytellerSettings = defaultSettings({ ollamaHost: roomy.url, narratorModel: 'llama3.2' });
    const session = openSession(root, { settings: () => settings });
    try {
      const adventure = session.play.createAdventure({ campaignId: 'westhaven', title: 'Fog' });
      assert.equal((await session.engine.takeTurn(adventure.id, { kind: 'do', text: 'wait' })).turn.status, 'complete');
      settings = defaultSettings({ ollamaHost: small.url, narratorModel: 'llama3.2' });
      assert.equal((await session.engine.takeTurn(adventure.id, { kind: 'do', text: 'listen' })).turn.status, 'complete');
      const numCtx = (fake: FakeOllama) => fake.requestsTo('/api/chat').map((r) => (r.body as { options?: { num_ctx?: number } }).options?.num_ctx);
      assert.deepEqual(numCtx(roomy), [4096]);
      assert.deepEqual(numCtx(small), [2048], 'the second server’s own context length is used');
      const preview = await session.engine.previewContext(adventure.id, { kind: 'do', text: 'look around' });
      assert.equal(preview.budget.contextLength, 2048, 'a preview uses the current server’s length too');
    } finally {
      await session.close();
      await roomy.close();
      await small.close();
      removeDir(root);
    }
  });
});
