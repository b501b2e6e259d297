import assert from 'node:assert/strict';
import { CalibrationError, calibrateSemanticFloor } from '../../src/knowledge/retrieval/calibration';
import { blobToVector, embedPassages, getEmbeddingModel, normalized } from '../../src/knowledge/retrieval/embeddings';
import { OllamaEmbedder } from '../../src/models';
import { DEFAULT_KNOWLEDGE_BUDGETS, retrieveKnowledge, searchKnowledge, whyNot } from '../../src/knowledge/retrieval/retrieval';
import type { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { corpusPath } from '../support/corpora';
import { FakeOllama, bagOfWordsEmbedding, unusedLoopbackUrl } from '../support/fakeOllama';
import { cloneStore, importCorpora, storeWith, writeFixtureSource } from '../support/knowledgeFixtures';

const MODEL = 'nomic-embed-text';
const RELOAD = { path: 'reference/archery.md', class: 'reference' as const, passages: [[['Archery'], 'Reloading takes a minute.']] as [string[], string][] };

/** The Torys setting bible, imported for real, plus one short rules note; embedded and calibrated against the fake server. */
async function torysLibrary(fake: FakeOllama): Promise<{ store: KnowledgeStore; dispose: () => void }> {
  const library = await importCorpora('torys', { world: { corpus: corpusPath('torys'), class: 'canon' } });
  writeFixtureSource(library.store, RELOAD);
  await embedPassages(library.store, new OllamaEmbedder(fake.url, MODEL));
  calibrateSemanticFloor(library.store, MODEL);
  return library;
}

describe('semantic retrieval', function () {
  let fake: FakeOllama;
  let library: { store: KnowledgeStore; dispose: () => void };
  let store: KnowledgeStore;
  let dispose: () => void;
  let embedder: OllamaEmbedder;
  before(async () => {
    const setup = await FakeOllama.start({ embedModels: { [MODEL]: 256 } });
    library = await torysLibrary(setup);
    await setup.close();
  });
  after(() => library.dispose());
  beforeEach(async () => {
    fake = await FakeOllama.start({ embedModels: { [MODEL]: 256 } });
    embedder = new OllamaEmbedder(fake.url, MODEL, 2000);
    ({ store, dispose } = cloneStore(library.store));
  });
  afterEach(async () => {
    dispose();
    await fake.close();
  });

  it("calibrates the floor from the library's own unrelated pairs and stores model, dimensions and floor", () => {
    const info = getEmbeddingModel(store, MODEL)!;
    assert.equal(info.dimensions, 256);
    assert.ok(info.samplePairs >= 200);
    const details = info.details as { p99: number; p50: number };
    assert.ok(info.floor! > details.p99, 'the floor sits above 99% of unrelated pairs');
    assert.ok(details.p50 > 0.2, 'unrelated texts are not at cosine 0 for this model, so a fixed 0 floor would admit everything');
  });

  it('admits a passage by meaning and by its stem together, and records both', async () => {
    // "reloaded" and "Reloading" share the stem "reload": lexical search finds it now on its own.
    const lexicalOnly = await searchKnowledge(store, 'reloaded');
    assert.equal(lexicalOnly.hits[0]?.sourcePath, 'reference/archery.md');
    const { hits, record } = await searchKnowledge(store, 'reloaded', { semantic: { embedder } });
    assert.equal(record.semantic.used, true);
    assert.equal(hits[0]?.sourcePath, 'reference/archery.md');
    const d = record.candidates.find((c) => c.sourcePath === 'reference/archery.md')!;
    assert.deepEqual(d.matchedTerms, ['reloaded']);
    assert.ok(d.similarity! >= d.semanticFloor!);
    assert.match(d.reason, /matched 'reloaded'; similarity 0\.\d+ ≥ floor 0\.\d+/);
  });

  it('still returns nothing on an unrelated scene with semantic retrieval on', async () => {
    const result = await retrieveKnowledge(
      store,
      { input: 'We board the starship and plot a jump to the orbital casino.', stage: 'narrator', budgets: { ...DEFAULT_KNOWLEDGE_BUDGETS } },
      { semantic: { embedder } },
    );
    assert.equal(result.record.semantic.used, true);
    assert.deepEqual(Object.values(result.sections).flat(), []);
    assert.ok(result.record.candidates.length > 0, 'the near misses are recorded');
    assert.ok(result.record.candidates.every((c) => c.outcome === 'not-relevant'));
    assert.ok(result.record.candidates.filter((c) => c.similarity !== null).every((c) => /below the floor/.test(c.reason)));
  });

  /** The embedding server answers the query itself with `query`, and every other text as the model always did. */
  function queryAnsweredWith(query: number[]): void {
    fake.embed = {
      respond: (res, texts) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ model: MODEL, embeddings: texts.map((t, i) => (i === 0 ? query : bagOfWordsEmbedding(t, 256))) }));
      },
    };
  }

  it('vetoes a lexical answer whose passages all sit far below the floor, and says so; one passage near enough keeps it', async () => {
    // "reloaded" meets the archery note by its stem; a model that finds the question's meaning nowhere near it vetoes it.
    const lexical = await searchKnowledge(store, 'reloaded');
    assert.equal(lexical.hits[0]?.sourcePath, 'reference/archery.md');
    const away = new Array<number>(256).fill(0);
    away[0] = -1;
    queryAnsweredWith(away);
    const vetoed = await searchKnowledge(store, 'reloaded', { semantic: { embedder } });
    assert.deepEqual(vetoed.hits, []);
    assert.match(vetoed.record.abstention ?? '', /^semantic veto: 'nomic-embed-text' puts the one passage the words admitted far below its calibrated floor 0\.\d{3} \(nearest -0\.\d{3}; half of this library's unrelated passage pairs are 0\.\d{3} or nearer\): the words match, the meaning does not$/);
    const archery = vetoed.record.candidates.find((c) => c.sourcePath === 'reference/archery.md')!;
    assert.equal(archery.outcome, 'not-relevant');
    assert.match(archery.reason, /^matched 'reloaded'; vetoed by meaning: similarity -0\.\d{3}, far below the floor 0\.\d{3}$/);
    const prompt = await retrieveKnowledge(store, { input: 'reloaded', stage: 'narrator', budgets: { ...DEFAULT_KNOWLEDGE_BUDGETS } }, { semantic: { embedder } });
    assert.deepEqual(Object.values(prompt.sections).flat(), [], 'a prompt is vetoed as search is');

    // Below the floor but nearer than unrelated passages usually are: the words stand.
    const info = getEmbeddingModel(store, MODEL)!;
    const median = (info.details as { p50: number }).p50;
    const row = store.db
      .prepare("SELECT e.vector AS vector FROM passages p JOIN sources s ON s.id = p.source_id JOIN embeddings e ON e.content_hash = p.content_hash AND e.model = ? WHERE s.path = 'reference/archery.md'")
      .get(MODEL) as { vector: Buffer };
    const u = normalized(blobToVector(row.vector));
    const k = [...u.keys()].slice(1).reduce((best, i) => (Math.abs(u[i]!) < Math.abs(u[best]!) ? i : best), 1);
    const w = [...u].map((x, i) => (i === k ? 1 : 0) - u[k]! * x);
    const wn = normalized(w);
    const cos = (median + info.floor!) / 2;
    queryAnsweredWith([...u].map((x, i) => cos * x + Math.sqrt(1 - cos * cos) * wn[i]!));
    const near = await searchKnowledge(store, 'reloaded', { semantic: { embedder } });
    assert.equal(near.hits[0]?.sourcePath, 'reference/archery.md');
    const kept = near.record.candidates.find((c) => c.sourcePath === 'reference/archery.md')!;
    assert.ok(kept.similarity! > median && kept.similarity! < info.floor!, `similarity ${kept.similarity} lies between the median ${median} and the floor ${info.floor}`);
    assert.doesNotMatch(kept.reason, /vetoed/);
  });

  it('skips semantic retrieval for a model with no calibrated floor, and says why', async () => {
    fake.embedModels.set('mxbai-embed-large', 256);
    const other = new OllamaEmbedder(fake.url, 'mxbai-embed-large');
    await embedPassages(store, other);
    const { hits, record } = await searchKnowledge(store, 'werewolf of the elking wood', { semantic: { embedder: other } });
    assert.equal(record.semantic.used, false);
    assert.match(record.semantic.reason, /no calibrated similarity floor for 'mxbai-embed-large'/);
    assert.ok(hits.some((h) => h.sourcePath.endsWith('werewolf.md')), 'lexical retrieval carries the search');
    assert.equal(fake.requestsTo('/api/embed').filter((r) => (r.body as { input: string[] }).input.length === 1).length, 0, 'the query was not even embedded');
  });

  const failures: [string, (f: FakeOllama) => Promise<OllamaEmbedder> | OllamaEmbedder, RegExp][] = [
    ['the server is down', async () => new OllamaEmbedder(await unusedLoopbackUrl(), MODEL), /cannot reach Ollama at http:\/\/127\.0\.0\.1:\d+/],
    [
      'the model is unknown (404)',
      (f) => {
        f.embedModels.delete(MODEL);
        return new OllamaEmbedder(f.url, MODEL);
      },
      /has no model 'nomic-embed-text'/,
    ],
    [
      'the server fails (500)',
      (f) => {
        f.embed = { fail: { status: 500, error: 'llama runner process has terminated' } };
        return new OllamaEmbedder(f.url, MODEL);
      },
      /HTTP 500.*llama runner process has terminated/,
    ],
    [
      'the model returns other dimensions',
      (f) => {
        f.embed = { dimensionsOverride: 128 };
        return new OllamaEmbedder(f.url, MODEL);
      },
      /now returns 128-dimensional vectors but this library's vectors and floor are 256-dimensional/,
    ],
    [
      'the server is too slow',
      (f) => {
        f.embed = { delayMs: 1000 };
        return new OllamaEmbedder(f.url, MODEL, 100);
      },
      /did not answer within 100 ms/,
    ],
  ];
  for (const [what, makeEmbedder, reason] of failures) {
    it(`keeps lexical results intact when ${what}`, async () => {
      const question = 'Who is the dragon Tuvdak?';
      const lexical = await searchKnowledge(store, question);
      const failing = await makeEmbedder(fake);
      const { hits, record } = await searchKnowledge(store, question, { semantic: { embedder: failing } });
      assert.equal(record.semantic.used, false);
      assert.match(record.semantic.reason, reason);
      assert.match(record.semantic.reason, /lexical results only/);
      assert.ok(hits.length > 0);
      assert.deepEqual(
        hits.map((h) => h.passageId),
        lexical.hits.map((h) => h.passageId),
      );
    });
  }

  it('reports passages with no vector for the model, and embeds only what changed', async () => {
    writeFixtureSource(store, { path: 'new/sea-serpent.md', passages: [[['Sea serpent'], 'A sea serpent guards the reef past Firecomb.']] });
    const { record } = await searchKnowledge(store, 'sea serpent', { semantic: { embedder } });
    assert.match(record.semantic.reason, /1 passage\(s\) have no vector for 'nomic-embed-text' yet/);
    const report = await embedPassages(store, embedder);
    assert.equal(report.embedded, 1);
    assert.ok(report.reused > 100);
    const again = await searchKnowledge(store, 'sea serpent', { semantic: { embedder } });
    assert.doesNotMatch(again.record.semantic.reason, /no vector/);
    assert.ok(again.record.candidates.find((c) => c.sourcePath === 'new/sea-serpent.md')!.similarity! > 0);
  });

  it('discards old vectors and the floor when the model starts returning another size', async () => {
    fake.embed = { dimensionsOverride: 128 };
    const report = await embedPassages(store, embedder);
    assert.match(report.modelChanged ?? '', /now returns 128-dimensional vectors \(was 256\).*floor were discarded/);
    assert.equal(getEmbeddingModel(store, MODEL)!.floor, null);
    assert.equal(getEmbeddingModel(store, MODEL)!.dimensions, 128);
    const { record } = await searchKnowledge(store, 'dragon', { semantic: { embedder } });
    assert.match(record.semantic.reason, /no calibrated similarity floor/);
    calibrateSemanticFloor(store, MODEL);
    assert.equal((await searchKnowledge(store, 'dragon', { semantic: { embedder } })).record.semantic.used, true);
  });

  it('never gives hidden canon to the player through the semantic path either', async () => {
    writeFixtureSource(store, { path: 'secret.md', visibility: 'hidden', passages: [[['Secret'], 'Reloading hides the poison.']] });
    await embedPassages(store, embedder);
    const { record } = await searchKnowledge(store, 'reloaded', { semantic: { embedder }, stage: 'player' });
    // It shares the stem "reload", so it is a candidate, recorded as excluded for the player, never selected.
    assert.ok(record.candidates.filter((c) => c.sourcePath === 'secret.md').every((c) => c.outcome === 'hidden-for-stage'));
    assert.match(whyNot(store, record, 'torys:secret.md#0'), /hidden-for-stage/);
  });
});

describe('calibration', () => {
  it('refuses a library too small to measure, with the reason', async () => {
    const fake = await FakeOllama.start({ embedModels: { [MODEL]: 64 } });
    const store = storeWith('tiny', [RELOAD, { path: 'b.md', passages: [[['B'], 'One more passage.']] }]);
    try {
      await embedPassages(store, new OllamaEmbedder(fake.url, MODEL));
      assert.throws(() => calibrateSemanticFloor(store, MODEL), (e: unknown) => e instanceof CalibrationError && /only 1 unrelated passage pairs/.test(e.message));
      assert.equal(getEmbeddingModel(store, MODEL)!.floor, null);
    } finally {
      store.close();
      await fake.close();
    }
  });
});
