import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EXIT } from '../../src/cli/command';
import { defaultSettings, type StorytellerSettings } from '../../src/session/defaults';
import { openSession } from '../../src/session/session';
import { makeCampaign, removeDir } from '../support/campaignDirs';
import { runCaptured } from '../support/cliRun';
import { corpusPath } from '../support/corpora';
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

  it('finds that vectors made by a model name on one server are not that name’s vectors on another, and embeds again; the same model elsewhere keeps them', async () => {
    const first = await FakeOllama.start();
    const other = await FakeOllama.start();
    other.embed.variant = 1;
    const mirror = await FakeOllama.start();
    mirror.embed.variant = 1;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-embed-servers-'));
    try {
      fs.cpSync(path.resolve(__dirname, '../../fixtures/example-campaign'), dir, { recursive: true });
      // Enough material for a floor: the example campaign alone has too few unrelated passage pairs.
      fs.cpSync(corpusPath('torys', 'world'), path.join(dir, 'reference', 'torys'), { recursive: true });
      const index = async (server: FakeOllama) => {
        const run = await runCaptured(['index', dir, '--workers', '0', '--embed-model', 'nomic-embed-text', '--base-url', server.url], dir, undefined, {});
        assert.equal(run.code, EXIT.ok, run.stderr);
        return run.stdout;
      };
      const semantic = async (server: FakeOllama) => {
        const run = await runCaptured(['context', '--input', 'ask Sister Mara about the crypt', '--campaign', dir, '--base-url', server.url, '--json'], dir, undefined, {});
        assert.equal(run.code, EXIT.ok, run.stderr);
        return (JSON.parse(run.stdout) as { record: { semantic: { used: boolean; reason: string } } }).record.semantic;
      };
      const embedded = Number(/semantic \(nomic-embed-text\): (\d+) embedded, 0 reused/.exec(await index(first))?.[1]);
      assert.ok(embedded > 50);
      assert.equal((await semantic(first)).used, true);

      const elsewhere = await semantic(other);
      assert.equal(elsewhere.used, false, 'vectors from the first server are not compared with the other server’s query vector');
      assert.match(elsewhere.reason, new RegExp(`'nomic-embed-text' on ${other.url} is not the model that made this library's vectors on ${first.url} \\(a stored passage came back different\\)`));

      const reembedded = await index(other);
      assert.match(reembedded, new RegExp(`'nomic-embed-text' on ${other.url} is not the model that made this library's vectors on ${first.url}: its ${embedded} old vectors and its floor were discarded`));
      assert.match(reembedded, new RegExp(`${embedded} embedded, 0 reused`), 'the library is embedded again on the other server');
      assert.equal((await semantic(other)).used, true);

      assert.match(await index(mirror), new RegExp(`semantic \\(nomic-embed-text\\): 0 embedded, ${embedded} reused`), 'the other server’s model on a third server keeps its vectors');
      assert.equal((await semantic(mirror)).used, true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      await Promise.all([first.close(), other.close(), mirror.close()]);
    }
  });
});
