import assert from 'node:assert/strict';
import fs from 'node:fs';
import type http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { checkCanonConsistency, pairPassagesByEntity } from '../../../src/knowledge/conflicts/conflictsModel';
import { buildEntityNames } from '../../../src/knowledge/names';
import { NarratorError, OllamaNarrator, OpenAICompatibleNarrator, type Narrator } from '../../../src/models';
import { StoryEngine, PlayStore, noKnowledge } from '../../../src/story';
import { EXIT } from '../../../src/cli/command';
import { runCaptured } from '../../support/cliRun';
import { EXAMPLE_CAMPAIGN } from '../../support/corpora';
import { FakeOllama } from '../../support/fakeOllama';
import { FakeOpenAI } from '../../support/fakeOpenAI';
import { closeLoopback, listenOnLoopback, readBody } from '../../support/loopback';

/**
 * A reply is bounded: its length in tokens is sent to the server (`num_predict`, `max_tokens`) and held by the
 * client, and a whole reply has a deadline beside the idle one. Shown: a server streaming "la " every few
 * milliseconds went on for 200 s, and one trickling a piece every 0.2 s streamed until killed.
 */

type Wire = 'ollama' | 'openai';

/**
 * A server that streams `piece` every `everyMs` until the client hangs up, ignoring any bound it was sent;
 * it gives up after `most` pieces (ending the stream without a finish), so a client without bounds fails the test instead of hanging it.
 */
async function endlessServer(wire: Wire, piece: string, everyMs: number, most: number) {
  const { server, port } = await listenOnLoopback();
  const bodies: Record<string, unknown>[] = [];
  server.on('request', async (req: http.IncomingMessage, res: http.ServerResponse) => {
    bodies.push(JSON.parse((await readBody(req)) || '{}') as Record<string, unknown>);
    res.writeHead(200, { 'content-type': wire === 'ollama' ? 'application/x-ndjson' : 'text/event-stream' });
    const line =
      wire === 'ollama'
        ? `${JSON.stringify({ model: 'm', created_at: new Date().toISOString(), message: { role: 'assistant', content: piece }, done: false })}\n`
        : `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] })}\n\n`;
    let sent = 0;
    const timer = setInterval(() => (++sent > most ? res.end() : res.write(line)), everyMs);
    res.on('close', () => clearInterval(timer));
  });
  const narrator = (options: { replyTimeoutMs?: number } = {}): Narrator =>
    wire === 'ollama'
      ? new OllamaNarrator({ host: `http://127.0.0.1:${port}`, env: {}, idleTimeoutMs: 5000, ...options })
      : new OpenAICompatibleNarrator({ backend: { provider: 'openai-compatible', baseUrl: `http://127.0.0.1:${port}/v1` }, idleTimeoutMs: 5000, ...options });
  return { server, bodies, narrator };
}

async function failure(promise: Promise<unknown>): Promise<NarratorError> {
  const error = await promise.then(
    () => assert.fail('the reply must be stopped'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof NarratorError, String(error));
  return error;
}

describe('attacks: replies without end', () => {
  for (const wire of ['ollama', 'openai'] as const) {
    it(`${wire}: sends the response length, and cuts a server that streams past it at that length`, async () => {
      const fake = await endlessServer(wire, 'la ', 2, 400);
      try {
        const shown: string[] = [];
        const error = await failure(fake.narrator().generate({ model: 'm', messages: [{ role: 'user', content: 'sing' }], maxTokens: 40, onChunk: (p) => shown.push(p) }));
        assert.equal(error.kind, 'too-large');
        assert.match(error.message, /^cut at the response length: .* went on past 40 tokens/);
        assert.equal(shown.length, 40, 'the writer saw exactly the bound');
        assert.equal(error.partial, 'la '.repeat(40), 'and that much is kept');
        const sent = fake.bodies[0]!;
        if (wire === 'ollama') assert.equal((sent.options as { num_predict?: number }).num_predict, 40);
        else assert.equal(sent.max_tokens, 40);
      } finally {
        await closeLoopback(fake.server);
      }
    });

    it(`${wire}: stops a reply that streams steadily past the whole-reply deadline, keeping what came`, async () => {
      const fake = await endlessServer(wire, 'drip ', 50, 80);
      try {
        const error = await failure(fake.narrator({ replyTimeoutMs: 600 }).generate({ model: 'm', messages: [{ role: 'user', content: 'go on' }], maxTokens: 100_000 }));
        assert.equal(error.kind, 'timeout');
        assert.match(error.message, /was still replying after 1 s, the longest one reply may take; stopped it/);
        assert.match(error.partial, /^(drip )+$/);
      } finally {
        await closeLoopback(fake.server);
      }
    });
  }

  it('narration asks for the reply reserve; memories, the summary and the consistency check ask for their own small bounds', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-bounds-'));
    const fake = await FakeOllama.start();
    const play = new PlayStore(path.join(dir, 'play.db'));
    try {
      const engine = new StoryEngine(play, noKnowledge('westhaven'), new OllamaNarrator({ host: fake.url, env: {} }), { model: 'llama3.2', memoryEvery: 1, replyReserve: 700 });
      const adventureId = play.createAdventure({ campaignId: 'westhaven', title: 'Bounds', persona: { name: 'Wren', pronouns: '', description: '' } }).id;
      fake.queue({ chunks: ['The gate creaks.'] }, { chunks: ['Wren opened the gate.'] }, { chunks: ['Wren is at the gate.'] });
      await engine.takeTurn(adventureId, { kind: 'do', text: 'open the gate' });
      const bounds = fake.requestsTo('/api/chat').map((r) => (r.body as { options: { num_predict?: number } }).options.num_predict);
      assert.deepEqual(bounds, [700, 160, 480], 'narration, memory, summary');

      fake.queue({ chunks: ['{"conflicts": []}'] });
      const passage = (id: string, text: string) => ({ passageId: id, sourcePath: `${id}.md`, sourceTitle: id, headingPath: [], text, startLine: 1 });
      const pairs = pairPassagesByEntity([passage('a', 'Mara is the abbess.'), passage('b', 'Mara left the abbey.')], buildEntityNames([{ title: 'Mara', entities: [] }]));
      await checkCanonConsistency({ host: fake.url, model: 'llama3.2', pairs });
      const check = fake.requestsTo('/api/chat').at(-1)!.body as { options: { num_predict?: number } };
      assert.equal(check.options.num_predict, 768);
    } finally {
      play.close();
      await fake.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('play --max-tokens sets the response length the server is sent; a bound too small to narrate is refused', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-max-tokens-'));
    fs.cpSync(EXAMPLE_CAMPAIGN, dir, { recursive: true, filter: (src) => !src.includes('.storyteller') });
    const fake = await FakeOpenAI.start({ chatModels: { qwen: 8192 } });
    try {
      const flags = ['play', dir, '--provider', 'openai-compatible', '--base-url', fake.baseUrl, '--model', 'qwen'];
      const played = await runCaptured([...flags, '--max-tokens', '64'], dir, 'listen\n/quit\n', {});
      assert.equal(played.code, EXIT.ok, played.stderr);
      assert.equal((fake.requestsTo('/v1/chat/completions')[0]!.body as { max_tokens?: number }).max_tokens, 64);
      const refused = await runCaptured([...flags, '--max-tokens', '3'], dir, '/quit\n', {});
      assert.equal(refused.code, EXIT.usage);
      assert.match(refused.stderr, /--max-tokens must be a whole number of tokens, at least 16, not '3'/);
    } finally {
      await fake.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
