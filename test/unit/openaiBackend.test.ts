import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkServer, embedderFor, listModels, OpenAICompatibleEmbedder, resolveBackend, type ModelBackend } from '../../src/models';
import { calibratedModels, indexSemantic, searchKnowledge } from '../../src/knowledge/retrieval';
import { StoryEngine } from '../../src/story/engine';
import { NarratorError } from '../../src/models/narrator';
import { OpenAICompatibleNarrator } from '../../src/models/openaiNarrator';
import { PlayStore } from '../../src/story/playStore';
import type { ChatMessage } from '../../src/story/types';
import { FakeOpenAI } from '../support/fakeOpenAI';
import { corpusPath } from '../support/corpora';
import { FakeOllama, unusedLoopbackUrl } from '../support/fakeOllama';
import { importCorpora, IndexedExampleCampaign } from '../support/knowledgeFixtures';
import { KAELEN, STAT_SCHEMA } from './storySupport';

const MESSAGES: ChatMessage[] = [
  { role: 'system', content: 'You narrate.' },
  { role: 'user', content: 'I open the gate.' },
];

/** The narrator's typed failure for one scripted reply, with what had streamed. */
async function failureOf(narrator: OpenAICompatibleNarrator, model = 'qwen2.5-7b-instruct', signal?: AbortSignal): Promise<NarratorError> {
  const streamed: string[] = [];
  try {
    await narrator.generate({ model, messages: MESSAGES, onChunk: (t) => streamed.push(t), ...(signal ? { signal } : {}) });
  } catch (error) {
    assert.ok(error instanceof NarratorError, `a typed failure, not ${String(error)}`);
    assert.equal(error.partial, streamed.join(''), 'the partial text is exactly what was shown');
    return error;
  }
  assert.fail('the reply should have failed');
}

describe('OpenAI-compatible narrator through the official client', () => {
  let fake: FakeOpenAI;
  let backend: ModelBackend;
  const narrator = (idleTimeoutMs?: number) => new OpenAICompatibleNarrator({ backend, ...(idleTimeoutMs ? { idleTimeoutMs } : {}) });

  beforeEach(async () => {
    fake = await FakeOpenAI.start();
    backend = resolveBackend('openai-compatible', fake.baseUrl);
  });
  afterEach(() => fake.close());

  it('streams a reply and returns the usage counts, asking for them, with no Authorization header when there is no key', async () => {
    fake.queue({ chunks: ['The gate ', 'swings ', 'inward.'], promptTokens: 412, completionTokens: 9 });
    const pieces: string[] = [];
    const previous = process.env.OPENAI_API_KEY;
    process.env.OPENAI_API_KEY = 'sk-meant-for-openai-only';
    try {
      const result = await narrator().generate({ model: 'qwen2.5-7b-instruct', messages: MESSAGES, temperature: 0.7, onChunk: (t) => pieces.push(t) });
      assert.deepEqual(pieces, ['The gate ', 'swings ', 'inward.']);
      assert.deepEqual(result, { text: 'The gate swings inward.', promptEvalCount: 412, evalCount: 9, doneReason: 'stop' });
    } finally {
      if (previous === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = previous;
    }
    const [request] = fake.requestsTo('/v1/chat/completions');
    const body = request!.body as { stream: boolean; stream_options: unknown; messages: ChatMessage[]; temperature: number };
    assert.equal(body.stream, true);
    assert.deepEqual(body.stream_options, { include_usage: true });
    assert.deepEqual(body.messages, MESSAGES);
    assert.equal(body.temperature, 0.7);
    assert.equal(request!.authorization, undefined, 'no key of the environment leaks to a server the writer named');
  });

  it('sends the API key it was given as a bearer token, and names a missing or wrong key', async () => {
    fake.apiKey = 'sk-right';
    const missing = await failureOf(narrator());
    assert.equal(missing.kind, 'unauthorized');
    assert.match(missing.message, /wants an API key \(401: You didn't provide an API key\.\); set one with "Set API Key"/);
    backend = resolveBackend('openai-compatible', fake.baseUrl, 'sk-wrong');
    const wrong = await failureOf(narrator());
    assert.equal(wrong.kind, 'unauthorized');
    assert.match(wrong.message, /refused the API key \(401: Incorrect API key provided: \*\*\*\.\)/);
    assert.doesNotMatch(wrong.message, /sk-wrong/, 'the key the server echoed is cut out of the message');
    backend = resolveBackend('openai-compatible', fake.baseUrl, 'sk-right');
    const result = await narrator().generate({ model: 'qwen2.5-7b-instruct', messages: MESSAGES });
    assert.equal(result.text, 'The lamps gutter.');
    assert.equal(fake.requests.at(-1)!.authorization, 'Bearer sk-right');
  });

  it('sorts every failure into the kind a writer can act on', async () => {
    assert.equal((await failureOf(narrator(), 'llama-70b')).kind, 'model-missing');
    fake.queue({ status: 429, error: 'Rate limit reached for requests' });
    const limited = await failureOf(narrator());
    assert.equal(limited.kind, 'server-error');
    assert.match(limited.message, /is rate-limiting requests \(429: Rate limit reached for requests\); wait a moment/);
    fake.queue({ status: 500, error: 'CUDA out of memory' });
    const crashed = await failureOf(narrator());
    assert.equal(crashed.kind, 'server-error');
    assert.match(crashed.message, /refused the request \(500\): CUDA out of memory/);
  });

  it('keeps the text that arrived before an error event mid-stream', async () => {
    fake.queue({ chunks: ['The gate ', 'swings ', 'inward.'], errorAfterChunks: { after: 2, message: 'engine died' } });
    const error = await failureOf(narrator());
    assert.equal(error.kind, 'mid-stream');
    assert.match(error.message, /engine died/);
    assert.equal(error.partial, 'The gate swings ');
  });

  it('calls a stream cut before its finish reason "no-done", and accepts a finished one that only lacks [DONE]', async () => {
    fake.queue({ chunks: ['Half a sen'], cutAfterContent: true });
    const cut = await failureOf(narrator());
    assert.equal(cut.kind, 'no-done');
    assert.equal(cut.partial, 'Half a sen');
    fake.queue({ chunks: ['Whole.'], omitDone: true, promptTokens: 50 });
    const whole = await narrator().generate({ model: 'qwen2.5-7b-instruct', messages: MESSAGES });
    assert.equal(whole.text, 'Whole.');
    assert.equal(whole.promptEvalCount, 50);
  });

  it('times out on a silent server, and stops when cancelled, keeping what arrived', async () => {
    fake.queue({ chunks: ['late'], delayMs: 1500 });
    assert.equal((await failureOf(narrator(200))).kind, 'timeout');
    fake.queue({ chunks: ['One. ', 'Two. ', 'Three. '], chunkDelayMs: 150 });
    const controller = new AbortController();
    const streamed: string[] = [];
    const error = await narrator()
      .generate({ model: 'qwen2.5-7b-instruct', messages: MESSAGES, signal: controller.signal, onChunk: (t) => (streamed.push(t), controller.abort()) })
      .then(() => assert.fail('should stop'), (e: unknown) => e as NarratorError);
    assert.equal(error.kind, 'cancelled');
    assert.equal(error.partial, 'One. ');
    assert.deepEqual(streamed, ['One. ']);
  });

  it('stops reading a reply that runs past the size cap, keeping what arrived', async () => {
    const piece = 'x'.repeat(10_000);
    fake.queue({ chunks: Array.from({ length: 20 }, () => piece), chunkDelayMs: 20 });
    const error = await failureOf(new OpenAICompatibleNarrator({ backend, maxReplyBytes: 50_000 }));
    assert.equal(error.kind, 'too-large');
    assert.match(error.message, /sent more than 49 KB for one reply/);
    assert.ok(error.partial.length > 0 && error.partial.length < 50_000, `kept ${error.partial.length} characters`);
  });

  it('says the server is down when nothing listens', async () => {
    backend = resolveBackend('openai-compatible', `${await unusedLoopbackUrl()}/v1`);
    const error = await failureOf(narrator());
    assert.equal(error.kind, 'server-down');
    assert.match(error.message, /cannot reach the OpenAI-compatible server at http:\/\/127\.0\.0\.1:\d+\/v1 \(ECONNREFUSED\)/);
  });

  it('reads the context length from /v1/models and names a model the server lacks', async () => {
    assert.equal(await narrator().contextLength('qwen2.5-7b-instruct'), 32768);
    await assert.rejects(narrator().contextLength('llama-70b'), (e: NarratorError) => {
      assert.equal(e.kind, 'model-missing');
      assert.match(e.message, /does not have the model 'llama-70b'; it has bge-small, qwen2\.5-7b-instruct/);
      return true;
    });
  });
});

describe('OpenAI-compatible server: model list, preflight, embeddings', () => {
  let fake: FakeOpenAI;
  beforeEach(async () => {
    fake = await FakeOpenAI.start({ chatModels: { 'qwen2.5-7b-instruct': 32768, 'mistral-small': null }, embedModels: { 'bge-small': 48 } });
  });
  afterEach(() => fake.close());

  it('lists the models with the context length where the server says it', async () => {
    const models = await listModels(resolveBackend('openai-compatible', fake.baseUrl));
    assert.deepEqual(models, [
      { id: 'bge-small', contextLength: null },
      { id: 'mistral-small', contextLength: null },
      { id: 'qwen2.5-7b-instruct', contextLength: 32768 },
    ]);
  });

  it('preflight: ready, model missing, key wanted, nothing there, wrong path', async () => {
    const backend = resolveBackend('openai-compatible', fake.baseUrl);
    assert.equal((await checkServer(backend, 'qwen2.5-7b-instruct')).kind, 'ready');
    const missing = await checkServer(backend, 'llama-70b');
    assert.equal(missing.kind, 'model-missing');
    fake.apiKey = 'sk-x';
    const locked = await checkServer(backend, 'qwen2.5-7b-instruct');
    assert.deepEqual([locked.kind, locked.kind === 'no-server' && locked.failure], ['no-server', 'unauthorized']);
    fake.apiKey = undefined;
    const wrongPath = await checkServer(resolveBackend('openai-compatible', fake.baseUrl.replace(/\/v1$/, '')), 'qwen2.5-7b-instruct');
    assert.ok(wrongPath.kind === 'no-server' && /usually ends in \/v1/.test(wrongPath.message), JSON.stringify(wrongPath));
    const down = await checkServer(resolveBackend('openai-compatible', `${await unusedLoopbackUrl()}/v1`), 'x');
    assert.ok(down.kind === 'no-server' && down.failure === 'unreachable');
  });

  it('embeds in order, and names a missing embedding model', async () => {
    const embedder = new OpenAICompatibleEmbedder(resolveBackend('openai-compatible', fake.baseUrl), 'bge-small');
    const vectors = await embedder.embed(['the abbey gate', 'salt trade']);
    assert.equal(vectors.length, 2);
    assert.equal(vectors[0]!.length, 48);
    assert.equal((fake.requestsTo('/v1/embeddings')[0]!.body as { encoding_format: string }).encoding_format, 'float');
    await assert.rejects(new OpenAICompatibleEmbedder(resolveBackend('openai-compatible', fake.baseUrl), 'e5-large').embed(['x']), /has no embedding model 'e5-large'/);
  });

  it('refuses a provider it does not know and an openai-compatible provider with no URL', () => {
    assert.throws(() => resolveBackend('kobold', 'http://x'), /unknown provider 'kobold'/);
    assert.throws(() => resolveBackend('openai-compatible', ''), /needs a base URL/);
    assert.throws(() => resolveBackend('openai-compatible', 'gpu-box:8000'), /must start with http/);
  });
});

describe('story engine over an OpenAI-compatible server', () => {
  let dir: string;
  let store: PlayStore;
  let fake: FakeOpenAI;
  let knowledge: IndexedExampleCampaign;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-openai-'));
    store = new PlayStore(path.join(dir, 'play.db'));
    fake = await FakeOpenAI.start({ chatModels: { 'qwen2.5-7b-instruct': 4096 } });
    knowledge = await IndexedExampleCampaign.open();
  });
  afterEach(async () => {
    await fake.close();
    knowledge.dispose();
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('plays a turn whose usage counts calibrate the token estimate, within the context length the server reports', async () => {
    const adventureId = store.createAdventure({ campaignId: 'westhaven', title: 'Fog', persona: KAELEN, statSchema: STAT_SCHEMA }).id;
    const narrator = new OpenAICompatibleNarrator({ backend: resolveBackend('openai-compatible', fake.baseUrl) });
    const engine = new StoryEngine(store, knowledge.port, narrator, { model: 'qwen2.5-7b-instruct', contextLength: 8192, autoMemories: false });
    fake.queue({ chunks: ['Mara unlocks ', 'the bronze door.'], promptTokens: 2000, completionTokens: 8 });
    const outcome = await engine.takeTurn(adventureId, { kind: 'do', text: 'ask Mara to open the crypt door' });
    assert.equal(outcome.error, null);
    assert.equal(store.turn(outcome.turn.id).narration, 'Mara unlocks the bronze door.');
    assert.equal(store.turn(outcome.turn.id).promptEvalCount, 2000);
    assert.equal(outcome.context!.budget.contextLength, 4096, "the server's context length bounds the prompt");
    assert.equal(engine.estimator().calibration.samples, 1, 'usage counts calibrated the estimate');
    assert.notEqual(engine.estimator().calibration.factor, 1);
  });
});

describe('semantic index from either backend', () => {
  it('keeps a calibrated floor per model, whichever server embedded it, and a model with no vectors yet is skipped and says so', async () => {
    const openai = await FakeOpenAI.start({ embedModels: { 'bge-small': 48 } });
    const ollama = await FakeOllama.start({ embedModels: { 'nomic-embed-text': 64 } });
    const library = await importCorpora('torys', { world: { corpus: corpusPath('torys'), class: 'canon' } });
    try {
      const remote = embedderFor(resolveBackend('openai-compatible', openai.baseUrl), 'bge-small');
      const local = embedderFor(resolveBackend('ollama', ollama.url), 'nomic-embed-text');
      const first = await indexSemantic(library.store, remote);
      assert.equal(first.problem, null);
      assert.equal(first.calibration?.dimensions, 48);
      const second = await indexSemantic(library.store, local);
      assert.equal(second.calibration?.dimensions, 64);
      assert.deepEqual(calibratedModels(library.store).map((m) => m.model).sort(), ['bge-small', 'nomic-embed-text']);
      const viaRemote = await searchKnowledge(library.store, 'the river trade', { semantic: { embedder: remote } });
      assert.match(viaRemote.record.semantic.reason, /'bge-small' with its calibrated floor/);
      const viaLocal = await searchKnowledge(library.store, 'the river trade', { semantic: { embedder: local } });
      assert.match(viaLocal.record.semantic.reason, /'nomic-embed-text' with its calibrated floor/);
      openai.embedModels.set('e5-large', 32);
      const changed = await searchKnowledge(library.store, 'the river trade', { semantic: { embedder: embedderFor(resolveBackend('openai-compatible', openai.baseUrl), 'e5-large') } });
      assert.equal(changed.record.semantic.used, false);
      assert.match(changed.record.semantic.reason, /no calibrated similarity floor for 'e5-large'/);
      assert.ok(changed.hits.length > 0, 'lexical search carries on');
    } finally {
      library.dispose();
      await openai.close();
      await ollama.close();
    }
  });
});
