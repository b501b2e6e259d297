import assert from 'node:assert/strict';
import fs from 'node:fs';
import { DEFAULTS, defaultSettings } from '../../src/session/defaults';

interface Contributed {
  contributes: { configuration: { properties: Record<string, { default: unknown }> } | { properties: Record<string, { default: unknown }> }[] };
}

/** The `storyteller.*` defaults the extension contributes, read from package.json as VS Code reads them. */
function contributedDefaults(): Record<string, unknown> {
  const manifest = JSON.parse(fs.readFileSync('package.json', 'utf8')) as Contributed;
  const sections = [manifest.contributes.configuration].flat();
  return Object.fromEntries(sections.flatMap((section) => Object.entries(section.properties)).map(([key, value]) => [key, value.default]));
}

describe('one defaults module for the CLI and the extension', () => {
  it('package.json contributes exactly the defaults the CLI uses', () => {
    assert.deepEqual(contributedDefaults(), {
      'storyteller.provider': DEFAULTS.provider,
      'storyteller.ollama.host': DEFAULTS.ollamaHost,
      'storyteller.openaiCompatible.baseUrl': DEFAULTS.openaiCompatibleBaseUrl,
      'storyteller.embedding.provider': DEFAULTS.embeddingProvider,
      'storyteller.narrator.model': DEFAULTS.narratorModel,
      'storyteller.embedding.model': DEFAULTS.embeddingModel,
      'storyteller.context.length': DEFAULTS.contextLength,
      'storyteller.context.budgets': DEFAULTS.budgets,
      'storyteller.index.sizeCapBytes': DEFAULTS.sizeCapBytes,
      'storyteller.memory.cadence': DEFAULTS.memoryCadence,
      'storyteller.narrator.maxReplyTokens': DEFAULTS.maxReplyTokens,
      'storyteller.research': DEFAULTS.research,
      'storyteller.narrator.contextWindow': DEFAULTS.researchContextWindow,
    });
  });

  it('names no setting inside another: VS Code reads `a.b` under a string `a` as undefined', () => {
    // `storyteller.research` is a string: a `storyteller.research.contextWindow` beside it always read as undefined.
    const keys = Object.keys(contributedDefaults());
    const nested = keys.filter((key) => keys.some((outer) => key.startsWith(`${outer}.`)));
    assert.deepEqual(nested, []);
  });

  it('narrates with llama3.1:8b, writes a memory every 8 turns, and resolves the host like the Ollama CLI', () => {
    assert.equal(DEFAULTS.narratorModel, 'llama3.1:8b');
    assert.equal(DEFAULTS.memoryCadence, 8);
    assert.equal(defaultSettings({}, {}).ollamaHost, 'http://127.0.0.1:11434');
    assert.equal(defaultSettings({}, { OLLAMA_HOST: 'gpu-box' }).ollamaHost, 'http://gpu-box:11434');
    assert.equal(defaultSettings({ ollamaHost: 'https://ollama.example' }, { OLLAMA_HOST: 'gpu-box' }).ollamaHost, 'https://ollama.example:443');
  });
});
