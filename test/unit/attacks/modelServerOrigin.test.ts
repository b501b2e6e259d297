import assert from 'node:assert/strict';
import fs from 'node:fs';
import type http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { EXIT } from '../../../src/cli/command';
import { embedderFor, listModels, NarratorError, narratorFor, type ModelBackend } from '../../../src/models';
import { runCaptured } from '../../support/cliRun';
import { EXAMPLE_CAMPAIGN } from '../../support/corpora';
import { FakeOpenAI } from '../../support/fakeOpenAI';
import { closeLoopback, listenOnLoopback } from '../../support/loopback';

/**
 * The configured model server is the only one a request reaches. A server answering 307 to another host
 * would have the client send the whole prompt (narrator-only canon included) and any key there; and a base
 * URL written with `user:password@` would put that password in every message, turn error and bundle.
 */

const SECRET_PROMPT = 'narrator-only: the abbot hid the bell in the well';

describe('attacks: a model server redirecting elsewhere', () => {
  let elsewhere: { server: http.Server; port: number };
  let redirector: { server: http.Server; port: number };
  let reached: string[];

  before(async () => {
    elsewhere = await listenOnLoopback();
    elsewhere.server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      reached.push(`${req.method} ${req.url}`);
      res.writeHead(500).end();
    });
    redirector = await listenOnLoopback();
    redirector.server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      req.resume();
      res.writeHead(307, { location: `http://127.0.0.1:${elsewhere.port}${req.url}` }).end();
    });
  });
  beforeEach(() => (reached = []));
  after(async () => {
    await closeLoopback(redirector.server);
    await closeLoopback(elsewhere.server);
  });

  const origin = () => `http://127.0.0.1:${redirector.port}`;
  const target = () => `http://127.0.0.1:${elsewhere.port}`;
  const backends = (): ModelBackend[] => [
    { provider: 'openai-compatible', baseUrl: `${origin()}/v1` },
    { provider: 'ollama', baseUrl: origin() },
  ];

  for (const provider of ['openai-compatible', 'ollama'] as const) {
    it(`${provider}: a turn is not sent on to another host; the error says where the redirect pointed`, async () => {
      const backend = backends().find((b) => b.provider === provider)!;
      const narrator = narratorFor(backend, { idleTimeoutMs: 5000 });
      const error = await narrator.generate({ model: 'm', messages: [{ role: 'user', content: SECRET_PROMPT }] }).then(
        () => assert.fail('the turn must fail'),
        (e: unknown) => e,
      );
      assert.ok(error instanceof NarratorError, String(error));
      assert.match(error.message, new RegExp(`redirect to ${target()}/.*not followed`));
      assert.ok(error.message.includes(backend.baseUrl), `names the configured server: ${error.message}`);
      assert.deepEqual(reached, [], 'nothing reached the other host');
    });

    it(`${provider}: embeddings and the model list are not sent on either`, async () => {
      const backend = backends().find((b) => b.provider === provider)!;
      await assert.rejects(embedderFor(backend, 'bge').embed([SECRET_PROMPT]), new RegExp(`redirect to ${target()}/`));
      await assert.rejects(listModels(backend), new RegExp(`redirect to ${target()}/`));
      assert.deepEqual(reached, []);
    });
  }
});

describe('attacks: credentials written into a base URL', () => {
  let dir: string;
  let fake: FakeOpenAI;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-url-credentials-'));
    fs.cpSync(EXAMPLE_CAMPAIGN, dir, { recursive: true, filter: (src) => !src.includes('.storyteller') });
    fake = await FakeOpenAI.start({ chatModels: { qwen: 8192 } });
  });
  afterEach(async () => {
    await fake.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  for (const provider of ['openai-compatible', 'ollama'] as const) {
    it(`${provider}: play refuses the URL, naming it without the password, and stores and sends nothing with it`, async () => {
      const url = fake.baseUrl.replace('http://', 'http://alice:s3cr3t-pw@');
      const { code, stdout, stderr } = await runCaptured(['play', dir, '--provider', provider, '--base-url', url, '--model', 'qwen'], dir, 'open the gate\n/quit\n', {});
      assert.equal(code, EXIT.usage, stdout + stderr);
      assert.match(stderr, /user name or password in it/);
      assert.ok(stderr.includes(fake.baseUrl.replace(/\/v1$/, '')), `names the server: ${stderr}`);
      assert.doesNotMatch(stdout + stderr, /s3cr3t-pw|alice/, 'the credentials are never printed');
      const stored = path.join(dir, '.storyteller', 'play.db');
      if (fs.existsSync(stored)) assert.ok(!fs.readFileSync(stored).includes('s3cr3t-pw'), 'nor stored');
      assert.equal(fake.requestsTo('/v1/chat/completions').length + fake.requestsTo('/v1/models').length, 0, 'nor sent');
    });
  }

  it('settings naming such a server are a problem to fix, not a server to use', async () => {
    const { resolveServers } = await import('../../../src/session/defaults');
    const servers = resolveServers({ provider: 'ollama', ollamaHost: 'http://alice:s3cr3t-pw@127.0.0.1:11434', openaiCompatibleBaseUrl: '', embeddingProvider: 'narrator', apiKeys: new Map() });
    assert.equal(servers.narratorBackend, null);
    assert.match(servers.backendProblem ?? '', /user name or password/);
    assert.doesNotMatch(servers.backendProblem ?? '', /s3cr3t-pw/);
  });
});
