import assert from 'node:assert/strict';
import { checkCanonConsistency } from '../../../src/knowledge/conflicts/conflictsModel';
import { NarratorError, OllamaNarrator, type GenerateResult } from '../../../src/models/narrator';
import { MAX_REPLY_BYTES } from '../../../src/models/replyLimits';
import { FakeOllama } from '../../support/fakeOllama';
import { streamEndlessly } from '../../support/loopback';

/**
 * Hostile and broken model servers, on loopback only: every reply is read up to a cap, and every failure
 * names the host and the reason — never "cancelled" when nobody cancelled, never a silent gap in the text.
 */

const MAX = 64 * 1024;

async function failure(narrator: OllamaNarrator, chunks: string[] = []): Promise<NarratorError> {
  const seen: string[] = [];
  let result: GenerateResult | undefined;
  try {
    result = await narrator.generate({ model: 'llama3.2', messages: [{ role: 'user', content: 'go' }], onChunk: (c) => seen.push(c) });
  } catch (error) {
    assert.ok(error instanceof NarratorError, String(error));
    assert.equal(error.partial, seen.join(''), 'the partial text is exactly what the writer saw');
    chunks.push(...seen);
    return error;
  }
  assert.fail(`the turn was taken as complete: ${JSON.stringify(result)}`);
}

describe('attacks: model replies', () => {
  let fake: FakeOllama;
  let narrator: OllamaNarrator;
  beforeEach(async () => {
    fake = await FakeOllama.start();
    narrator = new OllamaNarrator({ host: fake.url, env: {}, maxReplyBytes: MAX, lookupTimeoutMs: 300 });
  });
  afterEach(() => fake.close());

  it('stops reading a reply past the cap, keeps what streamed, and says so', async () => {
    const line = `${JSON.stringify({ model: 'llama3.2', message: { role: 'assistant', content: 'again and again ' }, done: false })}\n`;
    fake.queue({ respond: (res) => void streamEndlessly(res, 'application/x-ndjson', line, 64 * MAX) });
    const error = await failure(narrator);
    assert.equal(error.kind, 'too-large');
    assert.match(error.message, new RegExp(`${fake.url.replace(/[.:/]/g, '\\$&')} sent more than 64 KB for one reply`));
    assert.ok(error.partial.startsWith('again and again '), 'the text before the cap is kept');
    assert.ok(error.partial.length < MAX);
  });

  it('stops a reply with no newline at the cap instead of waiting or growing', async () => {
    fake.queue({ respond: (res) => void streamEndlessly(res, 'application/x-ndjson', 'x', 64 * MAX) });
    const error = await failure(narrator);
    assert.equal(error.kind, 'too-large');
    assert.doesNotMatch(error.message, /sent nothing/);
  });

  it('names an HTML page answered with 200 as not Ollama, not as a cut-off stream', async () => {
    fake.queue({ respond: (res) => void res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html><body>Welcome to nginx</body></html>') });
    const error = await failure(narrator);
    assert.equal(error.kind, 'not-ollama');
    assert.match(error.message, /is not answering as Ollama does: it answered with 'text\/html' instead of Ollama's JSON \(HTTP 200\)/);
    assert.doesNotMatch(error.message, /done/);
  });

  it('refuses a reply with a line that is not JSON instead of dropping it and calling the turn complete', async () => {
    const part = (content: string, done = false) => `${JSON.stringify({ model: 'llama3.2', message: { role: 'assistant', content }, done })}\n`;
    fake.queue({
      respond: (res) => void res.writeHead(200, { 'Content-Type': 'application/x-ndjson' }).end(`${part('The door ')}<<garbage>>\n${part('opens.')}${part('', true)}`),
    });
    const error = await failure(narrator);
    assert.equal(error.kind, 'not-ollama');
    assert.match(error.message, /a line of the reply is not JSON: "<<garbage>>"/);
    assert.equal(error.partial, 'The door ');
  });

  it('says the model lookup timed out, not that the writer cancelled it', async () => {
    fake.showResponse = () => undefined; // accepts and never answers
    await assert.rejects(narrator.contextLength('llama3.2'), (error: unknown) => {
      assert.ok(error instanceof NarratorError);
      assert.equal(error.kind, 'timeout');
      assert.match(error.message, /did not answer the lookup of the model 'llama3\.2' within 0\.3 s/);
      assert.doesNotMatch(error.message, /cancel/);
      return true;
    });
  });

  it('still reads an ordinary streamed reply whole', async () => {
    fake.queue({ chunks: ['The fog ', 'thickens.'] });
    const result = await narrator.generate({ model: 'llama3.2', messages: [{ role: 'user', content: 'go' }] });
    assert.equal(result.text, 'The fog thickens.');
    assert.equal(result.doneReason, 'stop');
  });

  it('caps the canon consistency check’s replies too: an endless one fails that pair, named, and the next pair is checked', async () => {
    const passage = (id: string, sourcePath: string, text: string) => ({ passageId: id, sourcePath, sourceTitle: id, headingPath: [], text, startLine: 1 });
    const pair = { entity: 'Tantan', a: passage('a', 'a.md', 'Tantan is retired.'), b: passage('b', 'b.md', 'Tantan works every day.') };
    fake.queue({ respond: (res) => void streamEndlessly(res, 'application/json', '{"conflicts": [', MAX_REPLY_BYTES * 2) }, { chunks: [JSON.stringify({ conflicts: [] })] });
    const result = await checkCanonConsistency({ host: fake.url, model: 'llama3.2', pairs: [pair, pair] });
    assert.equal(result.failures.length, 1);
    assert.match(result.failures[0]!.reason, /the reply passed 4 MB, the most one reply may take; stopped reading it/);
    assert.equal(fake.requestsTo('/api/chat').length, 2);
  });
});
