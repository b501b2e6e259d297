import assert from 'node:assert/strict';
import type http from 'node:http';
import { NarratorError, OllamaNarrator, OpenAICompatibleNarrator, type Narrator } from '../../../src/models';
import { closeLoopback, listenOnLoopback } from '../../support/loopback';

/**
 * What comes back from a model server is checked before it reaches the story: a streamed piece whose
 * content is an object or a number ends the reply with a plain reason (it was written as
 * `[object Object]12345`, the turn ending in a TypeError); a 200 that is no stream (a proxy's HTML page, a
 * whole JSON completion) is named for what it is, or used; and only our message reaches the terminal.
 */

type Respond = (res: http.ServerResponse) => void;

async function server(respond: Respond) {
  const { server: s, port } = await listenOnLoopback();
  s.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    req.resume();
    req.on('end', () => respond(res));
  });
  return { close: () => closeLoopback(s), ollama: (): Narrator => new OllamaNarrator({ host: `http://127.0.0.1:${port}`, env: {}, idleTimeoutMs: 5000 }), openai: (): Narrator => new OpenAICompatibleNarrator({ backend: { provider: 'openai-compatible', baseUrl: `http://127.0.0.1:${port}/v1` }, idleTimeoutMs: 5000 }) };
}

const ndjson = (...lines: unknown[]): Respond => (res) => res.writeHead(200, { 'content-type': 'application/x-ndjson' }).end(lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
const sse = (...events: string[]): Respond => (res) => res.writeHead(200, { 'content-type': 'text/event-stream' }).end(events.map((e) => `data: ${e}\n\n`).join(''));
const delta = (content: unknown, finish: string | null = null) => JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: finish }] });
const ollamaLine = (content: unknown, done = false) => ({ model: 'm', created_at: '2026-01-01T00:00:00Z', message: { role: 'assistant', content }, done, ...(done ? { done_reason: 'stop' } : {}) });

/** Runs a turn's generation, with everything written to the console or stderr meanwhile. */
async function generate(narrator: Narrator) {
  const shown: string[] = [];
  const written: string[] = [];
  const [error, log, write] = [console.error, console.log, process.stderr.write.bind(process.stderr)];
  console.error = console.log = (...args: unknown[]) => void written.push(args.join(' '));
  process.stderr.write = ((chunk: string) => written.push(String(chunk)) > 0) as typeof process.stderr.write;
  try {
    const result = await narrator.generate({ model: 'm', messages: [{ role: 'user', content: 'go' }], onChunk: (p) => shown.push(p) }).then(
      (r) => ({ ok: r }),
      (e: unknown) => ({ error: e }),
    );
    return { ...result, shown, written };
  } finally {
    [console.error, console.log, process.stderr.write] = [error, log, write];
  }
}

describe('attacks: what a model server sends back', () => {
  const cases: { name: string; wire: 'ollama' | 'openai'; respond: Respond }[] = [
    { name: 'an object', wire: 'ollama', respond: ndjson(ollamaLine('The gate '), ollamaLine({ evil: true }), ollamaLine('opens.'), ollamaLine('', true)) },
    { name: 'a number', wire: 'ollama', respond: ndjson(ollamaLine('The gate '), ollamaLine(12345), ollamaLine('', true)) },
    { name: 'an object', wire: 'openai', respond: sse(delta('The gate '), delta({ evil: true }), delta('opens.', 'stop'), '[DONE]') },
    { name: 'a number', wire: 'openai', respond: sse(delta('The gate '), delta(12345), delta('', 'stop'), '[DONE]') },
  ];
  for (const c of cases) {
    it(`${c.wire}: a piece whose content is ${c.name} ends the reply with a plain reason, and none of it is in the text`, async () => {
      const s = await server(c.respond);
      try {
        const run = await generate(s[c.wire]());
        assert.ok('error' in run && run.error instanceof NarratorError, `stopped with our error: ${JSON.stringify(run)}`);
        assert.equal(run.error.kind, 'mid-stream');
        assert.match(run.error.message, /sent a piece of the reply that is not a (chat message|chat completion chunk) \(.*content.*\); stopped the reply/);
        assert.equal(run.error.partial, 'The gate ');
        assert.deepEqual(run.shown, ['The gate ']);
      } finally {
        await s.close();
      }
    });
  }

  it('openai: a 200 HTML page is named as one, with the base URL to check, not as a cut-off stream', async () => {
    const s = await server((res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html><body>Proxy error: upstream unavailable</body></html>'));
    try {
      const run = await generate(s.openai());
      assert.ok('error' in run && run.error instanceof NarratorError);
      assert.match(run.error.message, /answered HTTP 200 with an HTML page, not a streamed reply; check the base URL/);
      assert.doesNotMatch(run.error.message, /finish reason/);
    } finally {
      await s.close();
    }
  });

  it('openai: a whole JSON completion, sent though a stream was asked for, is the reply', async () => {
    const completion = { id: 'c', object: 'chat.completion', created: 0, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'The gate opens.' }, finish_reason: 'stop' }], usage: { prompt_tokens: 12, completion_tokens: 4 } };
    const s = await server((res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(completion)));
    try {
      const run = await generate(s.openai());
      assert.ok('ok' in run, JSON.stringify(run));
      assert.deepEqual(run.ok, { text: 'The gate opens.', promptEvalCount: 12, evalCount: 4, doneReason: 'stop' });
      assert.deepEqual(run.shown, ['The gate opens.']);
    } finally {
      await s.close();
    }
  });

  it('openai: on a malformed event only our message is said; the client library writes nothing of its own', async () => {
    const s = await server(sse(delta('The gate '), '{"choices": [ broken', '[DONE]'));
    try {
      const run = await generate(s.openai());
      assert.ok('error' in run && run.error instanceof NarratorError);
      assert.equal(run.error.partial, 'The gate ');
      assert.deepEqual(run.written, [], 'nothing reached the console but through our error');
    } finally {
      await s.close();
    }
  });
});
