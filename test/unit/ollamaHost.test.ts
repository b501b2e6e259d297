import assert from 'node:assert/strict';
import { DEFAULT_OLLAMA_HOST, resolveOllamaHost } from '../../src/models/ollamaHost';

describe('Ollama host resolution', () => {
  const cases: [string | undefined, string | undefined, string][] = [
    [undefined, undefined, DEFAULT_OLLAMA_HOST],
    ['', '', DEFAULT_OLLAMA_HOST],
    [undefined, 'gpu-box', 'http://gpu-box:11434'],
    [undefined, 'gpu-box:8080', 'http://gpu-box:8080'],
    [undefined, '0.0.0.0', 'http://127.0.0.1:11434'],
    [undefined, ':9999', 'http://127.0.0.1:9999'],
    [undefined, 'https://ollama.example.org', 'https://ollama.example.org:443'],
    [undefined, 'http://10.1.2.3', 'http://10.1.2.3:80'],
    [undefined, 'http://[::1]:11500/', 'http://[::1]:11500'],
    [undefined, 'http://box:11434/ollama', 'http://box:11434/ollama'],
    ['http://remote:11434', 'other:1', 'http://remote:11434'],
  ];
  for (const [setting, env, expected] of cases) {
    it(`setting ${JSON.stringify(setting)} with OLLAMA_HOST ${JSON.stringify(env)} → ${expected}`, () => {
      assert.equal(resolveOllamaHost(setting, env === undefined ? {} : { OLLAMA_HOST: env }), expected);
    });
  }
});
