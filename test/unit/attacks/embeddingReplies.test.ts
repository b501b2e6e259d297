import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EXIT } from '../../../src/cli/command';
import { embedderFor } from '../../../src/models';
import { MAX_REPLY_BYTES } from '../../../src/models/replyLimits';
import { loadCampaign } from '../../../src/knowledge/campaign/campaign';
import { KnowledgeStore } from '../../../src/knowledge/indexing/store';
import { runCaptured } from '../../support/cliRun';
import { FakeOllama } from '../../support/fakeOllama';
import { FakeOpenAI } from '../../support/fakeOpenAI';
import { streamEndlessly } from '../../support/loopback';

/**
 * Embedding servers that answer without end: the reply is read up to a cap that fits any real batch, the
 * failure names the server, and the index (passages and the vectors already stored) stays as it was.
 */

const HUGE = 100 * 1024 * 1024;

interface IndexState {
  passages: number;
  vectors: string[];
}

function indexState(dir: string): IndexState {
  const store = KnowledgeStore.open(loadCampaign(dir));
  try {
    const passages = (store.db.prepare('SELECT count(*) n FROM passages').get() as { n: number }).n;
    const vectors = (store.db.prepare('SELECT model || content_hash || hex(vector) v FROM embeddings ORDER BY 1').all() as { v: string }[]).map((r) => r.v);
    return { passages, vectors };
  } finally {
    store.close();
  }
}

describe('attacks: embedding replies', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-embed-flood-'));
    fs.cpSync(path.resolve(__dirname, '../../../fixtures/example-campaign'), dir, { recursive: true });
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('stops an endless Ollama embedding reply at the cap, names the server, and keeps the vectors already stored', async () => {
    const fake = await FakeOllama.start();
    try {
      const index = () => runCaptured(['index', dir, '--workers', '0', '--embed-model', 'nomic-embed-text', '--base-url', fake.url], dir, undefined, {});
      const first = await index();
      assert.equal(first.code, EXIT.ok, first.stderr);
      assert.match(first.stdout, /semantic \(nomic-embed-text\): \d+ embedded/);
      const before = indexState(dir);
      assert.ok(before.vectors.length > 0);

      let sent: Promise<number> | undefined;
      fake.embed.respond = (res) => void (sent = streamEndlessly(res, 'application/json', '{"embeddings":[[0.125,', HUGE));
      fs.appendFileSync(path.join(dir, 'canon.md'), '\n\n## The drowned bell\n\nA bell rings under the harbour water at every new moon.\n');
      const second = await index();
      assert.equal(second.code, EXIT.ok, second.stderr);
      assert.match(second.stdout, new RegExp(`not available — Ollama at ${fake.url.replace(/[.:/]/g, '\\$&')} sent more than \\d+ (KB|MB) embedding 1 text`));
      assert.ok((await sent!) < HUGE / 4, 'the client hung up near the cap instead of reading the whole reply');

      const after = indexState(dir);
      assert.equal(after.passages, before.passages + 1, 'the new passage is indexed lexically');
      assert.deepEqual(after.vectors, before.vectors, 'every vector stored before is kept, and nothing half-read is stored');
      const search = await runCaptured(['search', 'drowned bell', '--campaign', dir], dir, undefined, {});
      assert.match(search.stdout, /drowned bell/i);
    } finally {
      await fake.close();
    }
  });

  it('stops an endless OpenAI-compatible embedding reply at the cap and names the server', async () => {
    const fake = await FakeOpenAI.start({ embedModels: { 'bge-small': 48 } });
    try {
      let sent: Promise<number> | undefined;
      fake.embedRespond = (res) => void (sent = streamEndlessly(res, 'application/json', '{"data":[{"embedding":[0.125,', HUGE));
      const run = await runCaptured(['index', dir, '--workers', '0', '--embed-model', 'bge-small', '--provider', 'openai-compatible', '--base-url', fake.baseUrl], dir, undefined, {});
      assert.equal(run.code, EXIT.ok, run.stderr);
      assert.match(run.stdout, new RegExp(`not available — the OpenAI-compatible server at ${fake.baseUrl.replace(/[.:/]/g, '\\$&')} sent more than \\d+ (KB|MB) embedding \\d+ texts`));
      assert.ok((await sent!) < HUGE / 4, 'the client hung up near the cap instead of reading the whole reply');
      const after = indexState(dir);
      assert.ok(after.passages > 0, 'the lexical index is complete');
      assert.deepEqual(after.vectors, []);
    } finally {
      await fake.close();
    }
  });

  it('reads a real batch whole: 32 texts of 8192 dimensions written as long floats fit under the cap, on both servers', async () => {
    const texts = Array.from({ length: 32 }, (_, i) => `passage ${i}`);
    // A float32 written at full double precision, as Python servers print them: the longest real replies.
    const vector = new Array<number>(8192).fill(-0.012345678901234567);
    const ollama = await FakeOllama.start({ embedModels: { 'big-embed': 8192 } });
    const openai = await FakeOpenAI.start({ embedModels: { 'big-embed': 8192 } });
    try {
      let replyBytes = 0;
      ollama.embed.respond = (res, asked) => {
        const body = JSON.stringify({ model: 'big-embed', embeddings: asked.map(() => vector) });
        replyBytes = body.length;
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(body);
      };
      openai.embedRespond = (res, asked) =>
        void res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ object: 'list', data: asked.map((_, index) => ({ object: 'embedding', index, embedding: vector })) }));
      for (const backend of [{ provider: 'ollama' as const, baseUrl: ollama.url }, { provider: 'openai-compatible' as const, baseUrl: openai.baseUrl }]) {
        const vectors = await embedderFor(backend, 'big-embed').embed(texts);
        assert.deepEqual([vectors.length, vectors[0]!.length], [32, 8192], backend.provider);
      }
      assert.ok(replyBytes > MAX_REPLY_BYTES, `the batch (${replyBytes} bytes) is larger than a narration reply may be`);
    } finally {
      await ollama.close();
      await openai.close();
    }
  });
});
