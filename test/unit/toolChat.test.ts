import assert from 'node:assert/strict';
import { OllamaToolChat, OpenAIToolChat, resolveBackend, type ToolChatMessage, type ToolSpec } from '../../src/models';
import { FakeOllama } from '../support/fakeOllama';
import { FakeOpenAI } from '../support/fakeOpenAI';
import { failure } from '../support/modelFailure';

const TOOLS: ToolSpec[] = [
  { name: 'search', description: 'Search the campaign.', parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } },
  { name: 'finish', description: 'Keep these passages.', parameters: { type: 'object', properties: { keep: { type: 'array', items: { type: 'string' } } }, required: ['keep'] } },
];
const MESSAGES: ToolChatMessage[] = [
  { role: 'system', content: 'You research before the narrator writes.' },
  { role: 'user', content: 'I knock on the abbey gate.' },
];
const OPTIONS = { model: 'qwen2.5-7b-instruct', maxTokens: 256, timeoutMs: 5000 };

describe('Tool calls on an OpenAI-compatible server', () => {
  let fake: FakeOpenAI;
  beforeEach(async () => {
    fake = await FakeOpenAI.start();
  });
  afterEach(() => fake.close());

  for (const stream of [true, false]) {
    it(`assembles several calls of one ${stream ? 'streamed' : 'whole'} reply, each by its index, and sends the tools and a token cap`, async () => {
      fake.queue({
        argumentPiece: 5,
        toolCalls: [
          { id: 'call_a', name: 'search', arguments: '{"query": "abbey gate warden"}' },
          { id: 'call_b', name: 'search', arguments: '{"query": "Sister Mara"}' },
        ],
      });
      const reply = await new OpenAIToolChat(resolveBackend('openai-compatible', fake.baseUrl), { stream }).chat(MESSAGES, TOOLS, OPTIONS);
      assert.deepEqual(reply, {
        content: '',
        protocol: 'native',
        finishReason: 'tool_calls',
        toolCalls: [
          { id: 'call_a', name: 'search', argumentsText: '{"query": "abbey gate warden"}' },
          { id: 'call_b', name: 'search', argumentsText: '{"query": "Sister Mara"}' },
        ],
      });
      const body = fake.requestsTo('/v1/chat/completions')[0]!.body as { tools: { type: string; function: { name: string } }[]; max_tokens: number; stream: boolean };
      assert.deepEqual(body.tools.map((t) => [t.type, t.function.name]), [['function', 'search'], ['function', 'finish']]);
      assert.equal(body.max_tokens, 256);
      assert.equal(body.stream, stream);
    });
  }

  it('sends earlier calls and their results back as the assistant tool_calls and tool messages the API names', async () => {
    fake.queue({ chunks: ['Done.'] });
    const client = new OpenAIToolChat(resolveBackend('openai-compatible', fake.baseUrl));
    await client.chat(
      [
        ...MESSAGES,
        { role: 'assistant', content: '', toolCalls: [{ id: 'call_a', name: 'search', argumentsText: '{"query":"abbey"}' }] },
        { role: 'tool', toolCallId: 'call_a', name: 'search', content: 'No passages.' },
      ],
      TOOLS,
      OPTIONS,
    );
    const sent = (fake.requestsTo('/v1/chat/completions')[0]!.body as { messages: unknown[] }).messages;
    assert.deepEqual(sent.slice(2), [
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'search', arguments: '{"query":"abbey"}' } }] },
      { role: 'tool', tool_call_id: 'call_a', content: 'No passages.' },
    ]);
  });

  it('a server that answers 400 naming tools is asked again in the JSON reply protocol, and from then on only so', async () => {
    fake.refuseTools = 'tools param requires --jinja flag';
    fake.queue({ chunks: ['```json\n{"tool_calls": [{"name": "search", "arguments": {"query": "abbey"}}]}\n```'] }, { chunks: ['{"content": "nothing needed"}'] });
    const client = new OpenAIToolChat(resolveBackend('openai-compatible', fake.baseUrl));
    const first = await client.chat(MESSAGES, TOOLS, OPTIONS);
    assert.equal(first.protocol, 'json');
    assert.deepEqual(first.toolCalls, [{ id: 'call-1', name: 'search', argumentsText: '{"query":"abbey"}' }]);
    const second = await client.chat(MESSAGES, TOOLS, OPTIONS);
    assert.deepEqual([second.protocol, second.content, second.toolCalls], ['json', 'nothing needed', []]);
    const requests = fake.requestsTo('/v1/chat/completions').map((r) => r.body as { tools?: unknown; messages: { role: string; content: string }[] });
    assert.deepEqual(requests.map((r) => r.tools !== undefined), [true, false, false], 'refused once, then never offered tools again');
    assert.match(requests[1]!.messages[0]!.content, /Reply with one JSON object and nothing else/);
  });

  it('asks for a tool call with tool_choice "required" when told to, and asks again without it where the server refuses it', async () => {
    fake.queue({ toolCalls: [{ name: 'finish', arguments: '{"keep": []}' }] });
    const client = new OpenAIToolChat(resolveBackend('openai-compatible', fake.baseUrl));
    await client.chat(MESSAGES, TOOLS, { ...OPTIONS, requireToolCall: true });
    await client.chat(MESSAGES, TOOLS, OPTIONS);
    const choices = () => fake.requestsTo('/v1/chat/completions').map((r) => (r.body as { tool_choice?: unknown }).tool_choice);
    assert.deepEqual(choices(), ['required', undefined], 'only when asked');
    fake.refuseToolChoice = "tool_choice 'required' is not supported";
    fake.queue({ toolCalls: [{ name: 'finish', arguments: '{"keep": []}' }] }, { toolCalls: [{ name: 'finish', arguments: '{"keep": []}' }] });
    const reply = await client.chat(MESSAGES, TOOLS, { ...OPTIONS, requireToolCall: true });
    assert.deepEqual([reply.protocol, reply.toolCalls.map((c) => c.name)], ['native', ['finish']], 'still native: the refusal was of tool_choice, not of tools');
    await client.chat(MESSAGES, TOOLS, { ...OPTIONS, requireToolCall: true });
    assert.deepEqual(choices().slice(2), ['required', undefined, undefined], 'asked again without it, and from then on');
  });

  it('a JSON-protocol reply that is not JSON is a failure, so research falls back to lexical selection', async () => {
    fake.refuseTools = "'auto' tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set";
    fake.queue({ chunks: ['I would search for the abbey.'] });
    const error = await failure(new OpenAIToolChat(resolveBackend('openai-compatible', fake.baseUrl)).chat(MESSAGES, TOOLS, OPTIONS));
    assert.match(error.message, /did not answer in the JSON reply protocol: "I would search for the abbey\."/);
  });

  it('a reply past its token cap is cut, and one past its deadline gives up with the time', async () => {
    fake.queue({ chunks: Array.from({ length: 40 }, () => 'the abbey bells ring and ring ') });
    const cut = await new OpenAIToolChat(resolveBackend('openai-compatible', fake.baseUrl)).chat(MESSAGES, TOOLS, { ...OPTIONS, maxTokens: 10 });
    assert.equal(cut.finishReason, 'cut');
    assert.ok(cut.content.length <= 120, `at most 10 tokens' worth of text is kept, not ${cut.content.length} characters`);
    fake.queue({ delayMs: 3000 });
    const late = await failure(new OpenAIToolChat(resolveBackend('openai-compatible', fake.baseUrl)).chat(MESSAGES, TOOLS, { ...OPTIONS, timeoutMs: 200 }));
    assert.equal(late.kind, 'timeout');
    assert.match(late.message, /did not finish its reply within 0 s|did not answer in time/);
  });
});

describe('Tool calls on Ollama', () => {
  let fake: FakeOllama;
  beforeEach(async () => {
    fake = await FakeOllama.start({ capabilities: ['completion', 'tools'] });
  });
  afterEach(() => fake.close());
  const options = { ...OPTIONS, model: 'llama3.2' };

  for (const stream of [true, false]) {
    it(`reads message.tool_calls of a ${stream ? 'streamed' : 'whole'} reply, arguments written back as text, and sends tools with num_predict`, async () => {
      fake.queue({ toolCalls: [{ name: 'search', arguments: { query: 'abbey' } }, { name: 'finish', arguments: { keep: ['p1'] } }] });
      const reply = await new OllamaToolChat(resolveBackend('ollama', fake.url), { stream }).chat(MESSAGES, TOOLS, options);
      assert.deepEqual(reply, {
        content: '',
        protocol: 'native',
        finishReason: 'stop',
        toolCalls: [
          { id: 'call-1', name: 'search', argumentsText: '{"query":"abbey"}' },
          { id: 'call-2', name: 'finish', argumentsText: '{"keep":["p1"]}' },
        ],
      });
      const body = fake.requestsTo('/api/chat')[0]!.body as { tools: { function: { name: string } }[]; options: { num_predict: number }; stream: boolean };
      assert.deepEqual(body.tools.map((t) => t.function.name), ['search', 'finish']);
      assert.equal(body.options.num_predict, 256);
      assert.equal(body.stream, stream);
    });
  }

  it('sends tool results back with tool_name, and earlier calls with their arguments as objects', async () => {
    await new OllamaToolChat(resolveBackend('ollama', fake.url)).chat(
      [
        ...MESSAGES,
        { role: 'assistant', content: '', toolCalls: [{ id: 'call-1', name: 'search', argumentsText: '{"query":"abbey"}' }] },
        { role: 'tool', toolCallId: 'call-1', name: 'search', content: 'No passages.' },
      ],
      TOOLS,
      options,
    );
    const sent = (fake.requestsTo('/api/chat')[0]!.body as { messages: unknown[] }).messages;
    assert.deepEqual(sent.slice(2), [
      { role: 'assistant', content: '', tool_calls: [{ function: { name: 'search', arguments: { query: 'abbey' } } }] },
      { role: 'tool', content: 'No passages.', tool_name: 'search' },
    ]);
  });

  it('a model whose capabilities lack "tools" is asked in the JSON reply protocol, its capabilities read once', async () => {
    fake.capabilities = ['completion'];
    fake.queue({ chunks: ['{"tool_calls": [{"name": "finish", "arguments": {"keep": []}}]}'] }, { chunks: ['{"content": "ok"}'] });
    const client = new OllamaToolChat(resolveBackend('ollama', fake.url));
    const reply = await client.chat(MESSAGES, TOOLS, options);
    assert.deepEqual([reply.protocol, reply.toolCalls], ['json', [{ id: 'call-1', name: 'finish', argumentsText: '{"keep":[]}' }]]);
    await client.chat(MESSAGES, TOOLS, options);
    assert.equal(fake.requestsTo('/api/show').length, 1);
    assert.ok(fake.requestsTo('/api/chat').every((r) => (r.body as { tools?: unknown }).tools === undefined));
  });

  it('a server whose capabilities did not say, and then answers 400 "does not support tools", is asked again in the JSON protocol', async () => {
    fake.capabilities = undefined;
    const client = new OllamaToolChat(resolveBackend('ollama', fake.url));
    assert.equal(await client.canUseTools('llama3.2'), false, 'an older server that lists no capabilities is not known to take tools');
    fake.capabilities = ['completion'];
    fake.queue({ chunks: ['{"content": "nothing needed"}'] });
    const reply = await client.chat(MESSAGES, TOOLS, options);
    assert.deepEqual([reply.protocol, reply.content], ['json', 'nothing needed']);
    assert.deepEqual(fake.requestsTo('/api/chat').map((r) => (r.body as { tools?: unknown }).tools !== undefined), [true, false], 'it was tried natively first');
  });

  it('an error line mid-reply and a missing model are failures in the server\'s words', async () => {
    fake.queue({ chunks: ['a', 'b'], errorAfterChunks: { after: 1, message: 'model runner crashed' } });
    const broken = await failure(new OllamaToolChat(resolveBackend('ollama', fake.url)).chat(MESSAGES, TOOLS, options));
    assert.match(broken.message, /reported an error during the reply: model runner crashed/);
    const missing = await failure(new OllamaToolChat(resolveBackend('ollama', fake.url)).chat(MESSAGES, TOOLS, { ...options, model: 'nope' }));
    assert.match(missing.message, /refused the request \(404\): model 'nope' not found/);
  });
});
