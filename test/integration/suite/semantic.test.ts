import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import type { CampaignIndex } from '../../../src/views/campaignIndex';
import { corpusPath } from '../../support/corpora';
import { FakeOllama } from '../../support/fakeOllama';
import { activatedExtension, harnessConfig, settled, waitFor } from './harness';

const EMBED_MODEL = 'nomic-embed-text';

/** The embedding setting in the real workbench: indexing embeds in the background, search stays lexical-safe. */
describe('embeddings from the settings', () => {
  let api: StorytellerApi;
  let fake: FakeOllama;
  let root: string;
  let index: CampaignIndex;
  let borrowed: string;
  const config = () => vscode.workspace.getConfiguration('storyteller');

  before(async () => {
    api = (await activatedExtension()).exports as StorytellerApi;
    root = path.resolve(harnessConfig().workspace);
    await settled(api.knowledge, 'every campaign index');
    index = api.knowledge.get(root)!;
    fake = await FakeOllama.start({ embedModels: { [EMBED_MODEL]: 64 } });
    await config().update('ollama.host', fake.url, vscode.ConfigurationTarget.Global);
    await waitFor(() => api.settings.current.ollamaHost === fake.url, 20_000, 'the Ollama host setting');
  });

  after(async () => {
    await config().update('embedding.model', undefined, vscode.ConfigurationTarget.Global);
    await config().update('ollama.host', undefined, vscode.ConfigurationTarget.Global);
    if (borrowed) fs.rmSync(borrowed, { recursive: true, force: true });
    await waitFor(() => !index.store?.listSources().some((s) => s.path.startsWith('torys/')), 20_000, 'the borrowed Torys files to leave the index');
    await fake.close();
  });

  it('embeds every passage once a model is set, and says in the status bar why a small library cannot be calibrated', async () => {
    await config().update('embedding.model', EMBED_MODEL, vscode.ConfigurationTarget.Global);
    const report = await waitFor(() => index.lastSemantic, 30_000, 'the semantic pass');
    await settled(index);
    const passages = index.store!.counts().passages;
    const vectors = (index.store!.db.prepare('SELECT count(DISTINCT content_hash) AS n FROM embeddings WHERE model = ?').get(EMBED_MODEL) as { n: number }).n;
    const distinctTexts = (index.store!.db.prepare('SELECT count(DISTINCT content_hash) AS n FROM passages').get() as { n: number }).n;
    assert.ok(passages > 0);
    assert.equal(vectors, distinctTexts, 'one vector per distinct passage text');
    assert.ok(fake.requestsTo('/api/embed').length > 0, 'the extension asked the configured host');
    assert.match(String(report.problem), /pairs|too small/, 'the example campaign alone is too small to place a floor honestly');
    assert.match(String(api.statusBar.item.tooltip), new RegExp(`semantic \\(${EMBED_MODEL}\\): .*lexical search works`));
  });

  it('calibrates once the library is large enough, and embeds only what a new file adds', async () => {
    const before = fake.requestsTo('/api/embed').length;
    borrowed = path.join(root, 'torys');
    fs.cpSync(path.join(corpusPath('torys'), 'world'), borrowed, { recursive: true });
    const report = await waitFor(() => (index.lastSemantic?.calibration ? index.lastSemantic : undefined), 60_000, 'calibration over the larger library');
    await settled(index);
    assert.equal(report.problem, null);
    assert.ok(report.calibration!.floor > 0 && report.calibration!.floor < 1, `floor ${report.calibration!.floor}`);
    const batches = fake
      .requestsTo('/api/embed')
      .slice(before)
      .map((r) => (r.body as { input: string[] }).input);
    assert.ok(batches.flat().some((t) => t.includes('Bekebel')), 'the new Torys passages were embedded');
    // A pass with nothing new sends one passage to check the model behind the name has not changed.
    const resentInBatches = batches.filter((b) => b.length > 1 && b.some((t) => t.includes('Captain Ilse Varra')));
    assert.deepEqual(resentInBatches, [], 'passages already embedded are not embedded again');
    assert.match(String(api.statusBar.item.tooltip), /floor 0\.\d{3} from \d+ unrelated pairs/);
  });

  it('goes back to lexical only when the model is cleared', async () => {
    await config().update('embedding.model', undefined, vscode.ConfigurationTarget.Global);
    await waitFor(() => index.lastSemantic === undefined, 20_000, 'the semantic report to go');
    assert.doesNotMatch(String(api.statusBar.item.tooltip), /semantic \(/);
  });
});
