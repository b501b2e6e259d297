import assert from 'node:assert/strict';
import { ModelServerError, OllamaToolChat, OpenAIToolChat, resolveBackend, type ToolChatClient, type ToolChatMessage, type ToolSpec } from '../../../src/models';
import { FakeOllama } from '../../support/fakeOllama';
import { FakeOpenAI } from '../../support/fakeOpenAI';

/**
 * A server that closes idle kept-alive connections (as many Python servers do after 5 s), scripted to close one
 * just as the next request arrives on it: that request never reached a model, and is sent again on a fresh
 * connection instead of costing the turn. A request that got any byte of a reply back is never sent twice.
 */

const MESSAGES: ToolChatMessage[] = [{ role: 'user', content: 'I knock on the abbey gate.' }];
const TOOLS: ToolSpec[] = [{ name: 'search', description: 'Search the campaign.', parameters: { type: 'object', properties: { query: { type: 'string' } } } }];
const MOST_TURNS = 10;

interface Server {
  fake: FakeOllama | FakeOpenAI;
  client: ToolChatClient;
  model: string;
  chatPath: string;
  /** Queues a reply that breaks off after its first bytes. */
  queueBrokenReply: () => void;
}

const servers: Record<string, () => Promise<Server>> = {
  Ollama: async () => {
    const fake = await FakeOllama.start({ chatModels: ['llama3.2'], capabilities: ['completion', 'tools'] });
    const queueBrokenReply = () =>
      fake.queue({
        respond: (res) => {
          res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
          // Closed once the bytes are on their way, so they reach the client before the close does.
          res.write('{"message":{"role":"assistant","content":"The ga', () => res.socket?.destroy());
        },
      });
    return { fake, client: new OllamaToolChat(resolveBackend('ollama', fake.url)), model: 'llama3.2', chatPath: '/api/chat', queueBrokenReply };
  },
  'an OpenAI-compatible server': async () => {
    const fake = await FakeOpenAI.start();
    const queueBrokenReply = () => fake.queue({ chunks: ['The ga'], cutAfterContent: true });
    return { fake, client: new OpenAIToolChat(resolveBackend('openai-compatible', fake.baseUrl)), model: 'qwen2.5-7b-instruct', chatPath: '/v1/chat/completions', queueBrokenReply };
  },
};

describe('attacks: a server that closes idle kept-alive connections', () => {
  for (const [name, start] of Object.entries(servers)) {
    describe(`on ${name}`, () => {
      let server: Server;
      beforeEach(async () => {
        server = await start();
      });
      afterEach(() => server.fake.close());
      const turn = () => server.client.chat(MESSAGES, TOOLS, { model: server.model, maxTokens: 256, timeoutMs: 20_000 });

      it('sends a request lost on a reused connection again, on a fresh one, and the turn is answered', async () => {
        server.fake.closeIdleConnections = 1;
        // Turns until one goes out on a kept-alive connection (fetch reuses one once it is back in its pool).
        let turns = 0;
        while (server.fake.closeIdleConnections > 0 && turns < MOST_TURNS) {
          const reply = await turn();
          turns++;
          assert.notEqual(reply.content, '', `turn ${turns} is answered`);
        }
        assert.equal(server.fake.closeIdleConnections, 0, `no turn in ${MOST_TURNS} went out on a kept-alive connection`);
        await server.fake.idleConnectionClosed;
        assert.equal(server.fake.requestsTo(server.chatPath).length, turns, 'every turn was answered once');
      });

      it('never sends a request again once any byte of its reply came back', async () => {
        await turn();
        server.queueBrokenReply();
        await assert.rejects(turn(), ModelServerError);
        assert.equal(server.fake.requestsTo(server.chatPath).length, 2, 'the broken reply was not asked for again');
      });
    });
  }
});
