import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EXIT } from '../../src/cli/command';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { getEmbeddingModel } from '../../src/knowledge/retrieval/embeddings';
import { runCaptured } from '../support/cliRun';
import { corpusPath } from '../support/corpora';
import { FakeOpenAI } from '../support/fakeOpenAI';

/** The real CLI entry, with captured output, piped actions and its own environment. */
async function cli(argv: string[], cwd: string, options: { lines?: string[]; env?: NodeJS.ProcessEnv } = {}) {
  const { code, stdout, stderr } = await runCaptured(argv, cwd, options.lines?.map((l) => `${l}\n`).join(''), options.env ?? {});
  return { code, out: stdout, err: stderr };
}

describe('CLI on an OpenAI-compatible server', () => {
  let dir: string;
  let fake: FakeOpenAI;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-openai-cli-'));
    fs.cpSync(path.resolve(__dirname, '../../fixtures/example-campaign'), dir, { recursive: true });
    fake = await FakeOpenAI.start({ chatModels: { 'qwen2.5-7b-instruct': 16384 }, embedModels: { 'bge-small': 48 } });
  });
  afterEach(async () => {
    await fake.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const server = () => ['--provider', 'openai-compatible', '--base-url', fake.baseUrl];

  it('plays a turn streamed from the server, with the key from STORYTELLER_API_KEY', async () => {
    fake.apiKey = 'sk-cli';
    fake.queue({ chunks: ['The bells ', 'ring under the fog.'] });
    const { code, out, err } = await cli(['play', dir, ...server(), '--model', 'qwen2.5-7b-instruct'], dir, { lines: ['listen for the bells', '/quit'], env: { STORYTELLER_API_KEY: 'sk-cli' } });
    assert.equal(code, EXIT.ok, err);
    assert.match(out, /narrator qwen2\.5-7b-instruct on the OpenAI-compatible server at http:\/\/127\.0\.0\.1:\d+\/v1/);
    assert.match(out, /The bells ring under the fog\.\n/);
    assert.equal(fake.requestsTo('/v1/chat/completions')[0]!.authorization, 'Bearer sk-cli');
    assert.doesNotMatch(out, /sk-cli/, 'the key is never printed');
  });

  it('says a key is wanted when none is set, and keeps the action', async () => {
    fake.apiKey = 'sk-cli';
    const { code, out } = await cli(['play', dir, ...server(), '--model', 'qwen2.5-7b-instruct'], dir, { lines: ['open the door', '/tree'] });
    assert.equal(code, EXIT.ok);
    assert.match(out, /✖ the OpenAI-compatible server at .* wants an API key \(401: You didn't provide an API key\.\); set one with "Set API Key" \(CLI: the STORYTELLER_API_KEY variable\) — your action is saved/);
    assert.match(out, /▶ [0-9a-f]{8} do: open the door \[error\]/);
  });

  it('refuses an openai-compatible provider with no base URL as a usage error', async () => {
    const { code, err } = await cli(['play', dir, '--provider', 'openai-compatible'], dir, { lines: [] });
    assert.equal(code, EXIT.usage);
    assert.match(err, /needs a base URL/);
  });

  it('index --embed-model embeds and calibrates on the server; context then uses that floor from the same server', async () => {
    // Enough material for a floor: the example campaign alone has too few unrelated passage pairs.
    fs.cpSync(corpusPath('torys', 'world'), path.join(dir, 'reference', 'torys'), { recursive: true });
    const indexed = await cli(['index', dir, '--workers', '0', '--embed-model', 'bge-small', ...server()], dir);
    assert.equal(indexed.code, EXIT.ok, indexed.err);
    assert.match(indexed.out, /semantic \(bge-small\): \d+ embedded, 0 reused;/);
    const store = KnowledgeStore.open(loadCampaign(dir));
    const info = getEmbeddingModel(store, 'bge-small');
    store.close();
    assert.equal(info?.dimensions, 48);
    const context = await cli(['context', '--input', 'ask Sister Mara about the crypt', '--campaign', dir, ...server(), '--json'], dir);
    assert.equal(context.code, EXIT.ok, context.err);
    const semantic = (JSON.parse(context.out) as { record: { semantic: { used: boolean; model: string } } }).record.semantic;
    assert.deepEqual([semantic.used, semantic.model], [true, 'bge-small']);
    assert.ok(fake.requestsTo('/v1/embeddings').length >= 2, 'the query was embedded on the same server');
  });
});
