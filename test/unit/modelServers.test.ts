import assert from 'node:assert/strict';
import { checkServer, listModels, ModelServerError, pullOllamaModel, resolveBackend, type PullProgress } from '../../src/models';
import { FakeOllama, unusedLoopbackUrl } from '../support/fakeOllama';

describe('Ollama server: model list, preflight and pull', () => {
  let fake: FakeOllama;
  beforeEach(async () => {
    fake = await FakeOllama.start({ chatModels: ['llama3.2'], embedModels: { 'nomic-embed-text': 64 }, contextLength: 131072, pullable: { 'qwen2.5:7b': {} } });
  });
  afterEach(() => fake.close());

  it('lists the models with the context length /api/show reports', async () => {
    assert.deepEqual(await listModels(resolveBackend('ollama', fake.url)), [
      { id: 'llama3.2', contextLength: 131072 },
      { id: 'nomic-embed-text', contextLength: 131072 },
    ]);
  });

  it('preflight names a narrator model the server lacks, and a server that is not there', async () => {
    const backend = resolveBackend('ollama', fake.url);
    assert.equal((await checkServer(backend, 'llama3.2')).kind, 'ready');
    const missing = await checkServer(backend, 'qwen2.5:7b');
    assert.equal(missing.kind, 'model-missing');
    assert.match(missing.kind === 'model-missing' ? missing.message : '', /Ollama at http:\/\/127\.0\.0\.1:\d+ does not have the model 'qwen2\.5:7b'; it has llama3\.2, nomic-embed-text/);
    const down = await checkServer(resolveBackend('ollama', await unusedLoopbackUrl()), 'llama3.2');
    assert.equal(down.kind, 'no-server');
    assert.match(down.kind === 'no-server' ? down.message : '', /cannot reach Ollama at .* `ollama serve`/);
  });

  it('pulls a model with progress, after which the server has it', async () => {
    const seen: PullProgress[] = [];
    await pullOllamaModel(fake.url, 'qwen2.5:7b', (p) => seen.push(p));
    assert.equal(seen[0]!.status, 'pulling manifest');
    const fractions = seen.map((p) => p.fraction).filter((f): f is number => f !== null);
    assert.deepEqual(fractions, [0, 0.25, 0.5, 0.75, 1]);
    assert.equal(seen.at(-1)!.status, 'success');
    assert.equal((await checkServer(resolveBackend('ollama', fake.url), 'qwen2.5:7b')).kind, 'ready');
  });

  it('reports a model of several layers as one fraction over every layer seen so far', async () => {
    fake.pull = { layers: 2, steps: 2 };
    const seen: PullProgress[] = [];
    await pullOllamaModel(fake.url, 'qwen2.5:7b', (p) => seen.push(p));
    const fractions = seen.map((p) => p.fraction).filter((f): f is number => f !== null);
    // The second layer's total joins the sum when it first appears, so the fraction steps back once, to 1/2,
    // instead of starting again from 0 as a per-layer fraction would.
    assert.deepEqual(fractions, [0, 0.5, 1, 0.5, 0.75, 1]);
  });

  it('stops a pull when cancelled, and the model is not there', async () => {
    fake.pull = { steps: 20, stepDelayMs: 50 };
    const controller = new AbortController();
    const pulling = pullOllamaModel(fake.url, 'qwen2.5:7b', (p) => p.fraction !== null && p.fraction > 0 && controller.abort(), controller.signal);
    await assert.rejects(pulling, (e: ModelServerError) => e.kind === 'cancelled' && /pulling 'qwen2\.5:7b' was cancelled/.test(e.message));
    assert.equal(fake.chatModels.has('qwen2.5:7b'), false);
  });

  it("names a model the registry does not know, in Ollama's words", async () => {
    await assert.rejects(pullOllamaModel(fake.url, 'no-such-model', () => undefined), /could not pull 'no-such-model': pull model manifest: file does not exist/);
  });
});
