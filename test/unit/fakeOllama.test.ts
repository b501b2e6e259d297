import assert from 'node:assert/strict';
import { Ollama } from 'ollama';
import { FakeOllama, bagOfWordsEmbedding, unusedLoopbackUrl } from '../support/fakeOllama';

const cosine = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);

// The stand-in must behave like the real server towards the real client, or every test built on it lies.
describe('fake Ollama server, seen through the real ollama client', () => {
  let fake: FakeOllama;
  beforeEach(async () => {
    fake = await FakeOllama.start();
  });
  afterEach(() => fake.close());

  it('streams chat chunks and ends with counts', async () => {
    fake.queue({ chunks: ['Mist ', 'rises.'], promptEvalCount: 321 });
    const client = new Ollama({ host: fake.url });
    let text = '';
    let last;
    for await (const part of await client.chat({ model: 'llama3.2', messages: [{ role: 'user', content: 'hi' }], stream: true })) {
      text += part.message.content;
      last = part;
    }
    assert.equal(text, 'Mist rises.');
    assert.equal(last?.done, true);
    assert.equal(last?.prompt_eval_count, 321);
  });

  it('answers an unknown model with 404 and the server message', async () => {
    const client = new Ollama({ host: fake.url });
    await assert.rejects(client.chat({ model: 'nope', messages: [] }), (e: Error & { status_code?: number }) => {
      assert.equal(e.status_code, 404);
      assert.match(e.message, /model 'nope' not found/);
      return true;
    });
  });

  it('reports an error line after streaming began, and a stream without done', async () => {
    const client = new Ollama({ host: fake.url });
    fake.queue({ chunks: ['a', 'b', 'c'], errorAfterChunks: { after: 2, message: 'the model crashed' } });
    const seen: string[] = [];
    await assert.rejects(async () => {
      for await (const part of await client.chat({ model: 'llama3.2', messages: [], stream: true })) seen.push(part.message.content);
    }, /the model crashed/);
    assert.deepEqual(seen, ['a', 'b']);
    fake.queue({ chunks: ['a'], endWithoutDone: true });
    await assert.rejects(async () => {
      for await (const _ of await client.chat({ model: 'llama3.2', messages: [], stream: true })) void _;
    }, /Did not receive done/);
  });

  it('embeds deterministically, with related texts closer than unrelated ones', async () => {
    const client = new Ollama({ host: fake.url });
    const { embeddings } = await client.embed({
      model: 'nomic-embed-text',
      input: ['the abbey crypt door is bronze', 'a bronze door guards the abbey crypt', 'river salt and wool trade'],
    });
    assert.equal(embeddings[0]!.length, 64);
    assert.deepEqual(embeddings[0], bagOfWordsEmbedding('the abbey crypt door is bronze', 64));
    assert.ok(cosine(embeddings[0]!, embeddings[1]!) > cosine(embeddings[0]!, embeddings[2]!) + 0.2);
    assert.ok(cosine(embeddings[0]!, embeddings[2]!) > 0.2, 'unrelated texts keep a baseline similarity');
  });

  it('refuses connections once closed', async () => {
    const client = new Ollama({ host: await unusedLoopbackUrl() });
    await assert.rejects(client.list(), /fetch failed|ECONNREFUSED/);
  });
});
