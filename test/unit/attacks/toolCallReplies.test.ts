import assert from 'node:assert/strict';
import { MAX_ARGUMENT_DEPTH, MAX_TOOL_CALLS_PER_REPLY } from '../../../src/models/toolReply';
import { OllamaToolChat, OpenAIToolChat, resolveBackend, type ToolChatMessage, type ToolSpec } from '../../../src/models';
import { FakeOllama } from '../../support/fakeOllama';
import { FakeOpenAI } from '../../support/fakeOpenAI';
import { failure } from '../../support/modelFailure';

/**
 * Scripted servers whose tool calls are out of all proportion: arguments nested 100,000 deep, and 70 calls in
 * one reply. Each is a failure that says what the server sent and the limit it passed, never "cannot reach".
 */

const TOOLS: ToolSpec[] = [{ name: 'search', description: 'Search the campaign.', parameters: { type: 'object', properties: { query: { type: 'string' } } } }];
const MESSAGES: ToolChatMessage[] = [{ role: 'user', content: 'I knock on the abbey gate.' }];
const OPTIONS = { model: 'llama3.2', maxTokens: 4096, timeoutMs: 20_000 };
const SEVENTY = Array.from({ length: 70 }, (_, i) => ({ name: 'search', arguments: { query: `gate ${i}` } }));

describe('attacks: tool calls out of all proportion', () => {
  describe('from Ollama', () => {
    let fake: FakeOllama;
    beforeEach(async () => {
      fake = await FakeOllama.start({ chatModels: ['llama3.2'], capabilities: ['completion', 'tools'] });
    });
    afterEach(() => fake.close());

    it('arguments nested 100,000 deep are named as what the server sent, not as an unreachable server', async () => {
      const deep = `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`;
      fake.queue({
        respond: (res) => {
          res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
          res.end(`{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"search","arguments":${deep}}}]},"done":false}\n{"done":true,"done_reason":"stop"}\n`);
        },
      });
      const error = await failure(new OllamaToolChat(resolveBackend('ollama', fake.url)).chat(MESSAGES, TOOLS, OPTIONS));
      assert.match(error.message, new RegExp(`Ollama at .* sent a tool call \\("search"\\) whose arguments nest deeper than ${MAX_ARGUMENT_DEPTH} levels`));
      assert.doesNotMatch(error.message, /cannot reach/);
    });

    it(`70 calls in one reply name the limit of ${MAX_TOOL_CALLS_PER_REPLY}`, async () => {
      fake.queue({ toolCalls: SEVENTY });
      const error = await failure(new OllamaToolChat(resolveBackend('ollama', fake.url)).chat(MESSAGES, TOOLS, OPTIONS));
      assert.match(error.message, new RegExp(`sent more than ${MAX_TOOL_CALLS_PER_REPLY} tool calls in one reply, the most one reply may make`));
    });
  });

  describe('from an OpenAI-compatible server', () => {
    let fake: FakeOpenAI;
    beforeEach(async () => {
      fake = await FakeOpenAI.start();
    });
    afterEach(() => fake.close());

    for (const stream of [true, false]) {
      it(`70 calls in one ${stream ? 'streamed' : 'whole'} reply name the limit of ${MAX_TOOL_CALLS_PER_REPLY}, not "not a chat completion chunk"`, async () => {
        fake.queue({ toolCalls: SEVENTY.map((c) => ({ name: c.name, arguments: JSON.stringify(c.arguments) })) });
        const error = await failure(new OpenAIToolChat(resolveBackend('openai-compatible', fake.baseUrl), { stream }).chat(MESSAGES, TOOLS, { ...OPTIONS, model: 'qwen2.5-7b-instruct' }));
        assert.match(error.message, new RegExp(`the OpenAI-compatible server at .* sent more than ${MAX_TOOL_CALLS_PER_REPLY} tool calls in one reply, the most one reply may make`));
      });
    }
  });
});
