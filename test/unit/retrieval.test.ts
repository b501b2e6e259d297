import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_KNOWLEDGE_BUDGETS, retrieveKnowledge, searchKnowledge, whyNot } from '../../src/knowledge/retrieval/retrieval';
import type { KnowledgeBudgets, RetrievalQuery } from '../../src/knowledge/retrieval/retrievalTypes';
import { buildMatchExpression, buildSearchTerms } from '../../src/knowledge/retrieval/retrievalTerms';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { storeWith, writeFixtureSource, type FixtureSource } from '../support/knowledgeFixtures';

const ABBEY: FixtureSource = {
  path: 'places/old-abbey.md',
  entities: ['Old Abbey'],
  tags: ['abbey'],
  passages: [
    [['The Old Abbey'], 'The Old Abbey stands on a hill west of Westhaven, above the river mist. Half its roof fell in a storm forty years ago.'],
    [['The Old Abbey', 'The Crypt'], 'The crypt door is bronze, green with age, and carved with an inscription in the old script. Mara holds the only key.'],
  ],
};
const MARA: FixtureSource = {
  path: 'characters/mara.md',
  entities: ['Mara'],
  passages: [[['Mara'], 'Mara is the ferrywoman of Westhaven. She distrusts the monks and keeps the crypt key on a cord around her neck.']],
};
const SECRET: FixtureSource = {
  path: 'secrets/aldric.md',
  visibility: 'hidden',
  passages: [[['Brother Aldric'], 'Brother Aldric poisoned the last abbot to reach the crypt treasure. Nobody knows.']],
};
const RULES: FixtureSource = {
  path: 'rules.md',
  alwaysInclude: true,
  passages: [[['Hard rules'], 'Resurrection is impossible. The dead stay dead, whatever a priest promises.']],
};
const WEAPONS: FixtureSource = {
  path: 'reference/weapons.md',
  class: 'reference',
  passages: [[['Weapons', 'Crossbows'], 'A heavy crossbow needs a full round to reload; its bolt pierces mail at thirty paces.']],
};
const MOOD: FixtureSource = {
  path: 'inspiration/mood.md',
  class: 'inspiration',
  passages: [[['Mood'], 'Fog on the river, bells across the water, the crypt smelling of wet stone and candle smoke.']],
};
const DISABLED: FixtureSource = {
  path: 'old/crypt-draft.md',
  enabled: false,
  passages: [[['Draft'], 'An early draft: the crypt door was iron and the key was lost with the abbot.']],
};

const ALL = [ABBEY, MARA, SECRET, RULES, WEAPONS, MOOD, DISABLED];

function query(input: string, extra: Partial<RetrievalQuery> = {}): RetrievalQuery {
  return { input, stage: 'narrator', budgets: { ...DEFAULT_KNOWLEDGE_BUDGETS }, ...extra };
}

function selectedPaths(result: Awaited<ReturnType<typeof retrieveKnowledge>>): string[] {
  return Object.values(result.sections)
    .flat()
    .map((p) => p.sourcePath);
}

describe('retrieval: passages found again', () => {
  it('reads a passage a later search finds again exactly as written, accents, CJK and emoji included, and ranks it the same', async () => {
    const text = 'The Café Ægir at 黒鉄城 serves dragon 🐉 stew; the 𝔇ragon Inn next door does not.';
    const store = storeWith('westhaven', [...ALL, { path: 'places/cafe.md', passages: [[['Café Ægir'], text]] }]);
    try {
      // The second search meets the passage among the rows kept from the first.
      const first = await searchKnowledge(store, 'Where is the dragon stew served?');
      const again = await searchKnowledge(store, 'Where is the dragon stew served?');
      assert.equal(first.hits[0]?.text, text);
      assert.equal(again.hits[0]?.text, text);
      const lexicalScore = (r: typeof first) => r.record.candidates.find((c) => c.sourcePath === 'places/cafe.md')?.lexicalScore;
      assert.equal(lexicalScore(again), lexicalScore(first));
    } finally {
      store.close();
    }
  });
});

describe('retrieval: admission by relevance', () => {
  let store: KnowledgeStore;
  beforeEach(() => {
    store = storeWith('westhaven', ALL);
  });
  afterEach(() => store.close());

  it('returns nothing retrieved on a scene unrelated to the library (only the pinned hard rules)', async () => {
    const result = await retrieveKnowledge(store, query('We board the starship and plot a jump to the orbital casino.'));
    assert.deepEqual(selectedPaths(result), ['rules.md']);
    assert.equal(result.sections.canon.length + result.sections.reference.length + result.sections.inspiration.length, 0);
  });

  it('a search for something the library does not hold finds nothing at all', async () => {
    const { hits, record } = await searchKnowledge(store, 'starship orbital casino');
    assert.equal(hits.length, 0);
    assert.equal(record.candidates.length, 0);
  });

  it('admits the passages the scene is about, and says which terms matched', async () => {
    const result = await retrieveKnowledge(store, query('I try the bronze crypt door'));
    const crypt = result.sections.canon.find((p) => p.passageId.endsWith('old-abbey.md#1'));
    assert.ok(crypt, 'the crypt passage is selected');
    const decision = result.record.candidates.find((c) => c.passageId === crypt.passageId)!;
    assert.deepEqual([...decision.matchedTerms].sort(), ['bronze', 'crypt', 'door']);
    assert.match(decision.reason, /matched 'bronze', 'crypt', 'door'|matched .*'bronze'/);
  });

  it('never includes irrelevant canon because it is canon, while relevant reference does get in', async () => {
    const result = await retrieveKnowledge(store, query('How long does a heavy crossbow take to reload?'));
    assert.deepEqual(result.sections.reference.map((p) => p.sourcePath), ['reference/weapons.md']);
    assert.deepEqual(result.sections.canon, []);
  });

  it('refuses a single match on a name that merely stands in the current state', async () => {
    const result = await retrieveKnowledge(store, query('I look at the sky.', { entities: ['Mara'] }));
    const mara = result.record.candidates.find((c) => c.sourcePath === 'characters/mara.md');
    assert.ok(mara);
    assert.equal(mara.admitted, false);
    assert.equal(mara.outcome, 'not-relevant');
    assert.match(mara.reason, /standing in the current state/);
  });

  it('admits the same name when this turn names it', async () => {
    const result = await retrieveKnowledge(store, query('I ask Mara for help.', { entities: ['Mara'] }));
    assert.ok(result.sections.canon.some((p) => p.sourcePath === 'characters/mara.md'));
  });

  it('refuses a passage that shares one word with a long scene the campaign knows nothing of', async () => {
    const result = await retrieveKnowledge(
      store,
      query('Captain Ilse signals the galleon to drop anchor beside the lighthouse while sailors haul cargo onto the west pier.'),
    );
    const abbey = result.record.candidates.find((c) => c.passageId.endsWith('old-abbey.md#0'));
    assert.ok(abbey, "'west' matched the abbey passage lexically");
    assert.equal(abbey.admitted, false);
    assert.match(abbey.reason, /matched 'west', but this campaign never mentions 'captain', 'ilse', .*: the question is not about it/);
  });

  it('orders admitted passages by class without letting class rescue anything', async () => {
    const result = await retrieveKnowledge(store, query('the crypt smells of wet stone and candle smoke behind the bronze door'));
    const crypt = result.record.candidates.find((c) => c.passageId.endsWith('old-abbey.md#1'))!;
    const mood = result.record.candidates.find((c) => c.sourcePath === 'inspiration/mood.md')!;
    assert.ok(crypt.admitted && mood.admitted);
    assert.equal(mood.section, 'inspiration');
    assert.ok(mood.score! <= 0.7 + 1e-9, 'inspiration is weighted 0.70 of its relevance');
  });
});

describe('retrieval: eligibility', () => {
  let store: KnowledgeStore;
  beforeEach(() => {
    store = storeWith('westhaven', ALL);
  });
  afterEach(() => store.close());

  it('never gives hidden canon to the player, and records why', async () => {
    const result = await retrieveKnowledge(store, query('Who poisoned the abbot for the crypt treasure?', { stage: 'player' }));
    assert.ok(!selectedPaths(result).includes('secrets/aldric.md'));
    const secret = result.record.candidates.find((c) => c.sourcePath === 'secrets/aldric.md')!;
    assert.equal(secret.outcome, 'hidden-for-stage');
    assert.match(secret.reason, /hidden \(narrator-only\)/);
  });

  it('gives hidden canon to the narrator marked as secret', async () => {
    const result = await retrieveKnowledge(store, query('Who poisoned the abbot for the crypt treasure?'));
    const secret = result.sections.canon.find((p) => p.sourcePath === 'secrets/aldric.md');
    assert.ok(secret);
    assert.equal(secret.hidden, true);
    assert.ok(result.sections.canon.filter((p) => p.sourcePath !== 'secrets/aldric.md').every((p) => !p.hidden));
  });

  it('records a disabled source that matched, and never selects it', async () => {
    const result = await retrieveKnowledge(store, query('the iron crypt door and the lost key'));
    const draft = result.record.candidates.find((c) => c.sourcePath === 'old/crypt-draft.md')!;
    assert.equal(draft.outcome, 'disabled');
    assert.match(draft.reason, /matched .*'crypt'.* is disabled/);
    assert.ok(!selectedPaths(result).includes('old/crypt-draft.md'));
  });

  it('ignores sources whose index is not ready', async () => {
    writeFixtureSource(store, { path: 'half.md', lexicalState: 'pending', passages: [[['Half'], 'The crypt door hides a bronze key.']] });
    const result = await retrieveKnowledge(store, query('bronze crypt door key'));
    const half = result.record.candidates.find((c) => c.sourcePath === 'half.md')!;
    assert.equal(half.outcome, 'not-ready');
    assert.ok(!selectedPaths(result).includes('half.md'));
  });

  it('follows a source changed between two searches of one session: disabled, then rewritten', async () => {
    const ferrywoman = async () => (await searchKnowledge(store, 'the ferrywoman of Westhaven')).hits.filter((h) => h.sourcePath === 'characters/mara.md');
    assert.equal((await ferrywoman()).length, 1);
    writeFixtureSource(store, { ...MARA, enabled: false });
    assert.deepEqual(await ferrywoman(), []);
    writeFixtureSource(store, { ...MARA, passages: [[['Mara'], 'Mara was the ferrywoman of Westhaven until the river froze; now she smuggles salt.']] });
    const [rewritten] = await ferrywoman();
    assert.match(rewritten!.text, /smuggles salt/);
  });

  it("never returns campaign B's passages to campaign A, even from the same index file", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-retrieval-'));
    const indexPath = path.join(dir, 'index.db');
    const a = KnowledgeStore.open({ id: 'a', indexPath });
    const b = KnowledgeStore.open({ id: 'b', indexPath });
    try {
      writeFixtureSource(a, ABBEY);
      writeFixtureSource(b, { path: 'b-crypt.md', passages: [[['Crypt of B'], 'The bronze crypt door of campaign B opens with a song.']] });
      const result = await retrieveKnowledge(a, query('the bronze crypt door'));
      assert.ok(result.record.candidates.length > 0);
      assert.ok(result.record.candidates.every((c) => c.sourceId.startsWith('a:')));
      assert.ok(selectedPaths(result).every((p) => p !== 'b-crypt.md'));
      const search = await searchKnowledge(a, 'bronze crypt door song');
      assert.ok(search.hits.every((h) => h.sourceId.startsWith('a:')));
      assert.match(whyNot(a, result.record, 'b:b-crypt.md#0'), /belongs to campaign b/);
    } finally {
      a.close();
      b.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('retrieval: budgets', () => {
  const budgets = (b: Partial<KnowledgeBudgets>): KnowledgeBudgets => ({ ...DEFAULT_KNOWLEDGE_BUDGETS, ...b });

  it('places always-include canon first, and surfaces its overflow as a conflict instead of dropping it silently', async () => {
    const store = storeWith('westhaven', [
      ABBEY,
      { path: 'rules.md', alwaysInclude: true, priority: 'high', passages: [[['Rules'], 'Resurrection is impossible. '.repeat(20)]] },
      { path: 'more-rules.md', alwaysInclude: true, passages: [[['More rules'], 'There is no gunpowder and no printing press. '.repeat(20)]] },
    ]);
    try {
      const result = await retrieveKnowledge(store, query('the bronze crypt door', { budgets: budgets({ alwaysInclude: 200, canon: 300 }) }));
      assert.deepEqual(result.sections.alwaysInclude.map((p) => p.sourcePath), ['rules.md', 'more-rules.md'].slice(0, result.sections.alwaysInclude.length));
      assert.equal(result.sections.alwaysInclude[0]!.sourcePath, 'rules.md', 'high priority pin first');
      assert.equal(result.record.conflicts.length, 1);
      const conflict = result.record.conflicts[0]!;
      assert.equal(conflict.kind, 'always-include-overflow');
      assert.equal(conflict.budget, 200);
      assert.ok(conflict.needed > 200);
      assert.ok(conflict.passageIds.length >= 1);
      assert.match(conflict.message, /always-include canon needs \d+ tokens but its budget is 200/);
      for (const id of conflict.passageIds) {
        const d = result.record.candidates.find((c) => c.passageId === id)!;
        assert.match(d.reason, /canon budget|conflict/);
      }
    } finally {
      store.close();
    }
  });

  it('leaves out what does not fit its class budget, lowest-ranked first, and says so', async () => {
    const store = storeWith('westhaven', [
      { path: 'ref/a.md', class: 'reference', passages: [[['A'], 'Crossbow bolts and crossbow strings, crossbow maintenance in the rain.']] },
      { path: 'ref/b.md', class: 'reference', passages: [[['B'], 'A crossbow string frays in the rain if not waxed.']] },
    ]);
    try {
      const result = await retrieveKnowledge(store, query('crossbow string in the rain', { budgets: budgets({ reference: 18 }) }));
      assert.equal(result.sections.reference.length, 1);
      const left = result.record.candidates.find((c) => c.outcome === 'over-budget')!;
      assert.match(left.reason, /over the reference budget \(\d+\/18 tokens\)/);
      const kept = result.record.candidates.find((c) => c.outcome === 'selected')!;
      assert.ok(kept.score! >= left.score!);
    } finally {
      store.close();
    }
  });

  it('under a total budget, inspiration goes first, then reference, and canon last', async () => {
    const store = storeWith('westhaven', [ABBEY, RULES, WEAPONS, MOOD]);
    try {
      const q = 'the crypt smells of wet stone; a crossbow bolt lies by the bronze crypt door';
      const all = await retrieveKnowledge(store, query(q));
      const sizes = Object.fromEntries(Object.entries(all.sections).map(([k, v]) => [k, v.reduce((n, p) => n + p.tokenCount, 0)]));
      assert.ok(sizes.inspiration! > 0 && sizes.reference! > 0 && sizes.canon! > 0);
      const withoutInspiration = sizes.alwaysInclude! + sizes.canon! + sizes.reference!;
      const tight = await retrieveKnowledge(store, query(q, { budgets: budgets({ total: withoutInspiration }) }));
      assert.equal(tight.sections.inspiration.length, 0);
      assert.equal(tight.sections.reference.length, all.sections.reference.length);
      const tighter = await retrieveKnowledge(store, query(q, { budgets: budgets({ total: sizes.alwaysInclude! + sizes.canon! }) }));
      assert.equal(tighter.sections.inspiration.length + tighter.sections.reference.length, 0);
      assert.equal(tighter.sections.canon.length, all.sections.canon.length);
      const mood = tighter.record.candidates.find((c) => c.sourcePath === 'inspiration/mood.md')!;
      assert.match(mood.reason, /total knowledge budget .* inspiration goes first/);
      const pinsOnly = await retrieveKnowledge(store, query(q, { budgets: budgets({ total: 1 }) }));
      assert.deepEqual(selectedPaths(pinsOnly), ['rules.md'], 'pressure never removes always-include canon');
    } finally {
      store.close();
    }
  });
});

describe('retrieval: redundancy and provenance', () => {
  it('suppresses a near-duplicate passage and one that only repeats current state', async () => {
    const text = 'The crypt door is bronze, green with age, and carved with an inscription in the old script.';
    const store = storeWith('westhaven', [
      { path: 'a.md', passages: [[['Crypt'], text]] },
      { path: 'copy/a.md', passages: [[['Crypt'], `${text} Copied.`]] },
      { path: 'state.md', passages: [[['Ferry'], 'The ferry to the east bank runs at dawn and dusk, and the ferry bell rings twice.']] },
    ]);
    try {
      const result = await retrieveKnowledge(
        store,
        query('the bronze crypt door inscription; waiting for the ferry at dawn', {
          stateFacts: ['The ferry to the east bank runs at dawn and dusk, and the ferry bell rings twice.'],
        }),
      );
      const dup = result.record.candidates.find((c) => c.outcome === 'duplicate')!;
      assert.ok(dup);
      assert.ok(dup.duplicateOf);
      assert.match(dup.reason, /near-duplicate of/);
      assert.equal(result.sections.canon.filter((p) => p.text.startsWith('The crypt door')).length, 1);
      const ferry = result.record.candidates.find((c) => c.sourcePath === 'state.md')!;
      assert.equal(ferry.outcome, 'in-state');
    } finally {
      store.close();
    }
  });

  it('explains a passage that never became a candidate', async () => {
    const store = storeWith('westhaven', ALL);
    try {
      const result = await retrieveKnowledge(store, query('a heavy crossbow bolt'));
      assert.match(whyNot(store, result.record, 'westhaven:characters/mara.md#0'), /never a candidate: it contains none of the query's terms \('heavy', 'crossbow', 'bolt'\)/);
      assert.match(whyNot(store, result.record, 'westhaven:characters/mara.md#0'), /semantic retrieval did not run/);
      assert.match(whyNot(store, result.record, 'westhaven:reference/weapons.md#0'), /^selected: matched/);
      assert.match(whyNot(store, result.record, 'nope'), /no passage nope/);
    } finally {
      store.close();
    }
  });

  it('says semantic retrieval is off when no embedder is configured', async () => {
    const store = storeWith('westhaven', ALL);
    try {
      const result = await retrieveKnowledge(store, query('crypt'));
      assert.equal(result.record.semantic.used, false);
      assert.match(result.record.semantic.reason, /off/);
    } finally {
      store.close();
    }
  });
});

describe('retrieval terms', () => {
  it('never lets FTS5 syntax in the writer text reach MATCH unquoted', () => {
    const { terms } = buildSearchTerms({ input: 'crypt" OR body:* NEAR(a b) -door ^key "' });
    const match = buildMatchExpression(terms)!;
    assert.equal(match, '"crypt" OR "body" OR "door" OR "key"');
  });

  it('searches a multi-word entity as a phrase, and words by their stems as the index holds them', () => {
    const { terms } = buildSearchTerms({ input: 'the dragons of Days End were hunting', knownNames: ['Days End'] });
    assert.deepEqual(
      terms.map((t) => [t.words, t.stems]),
      [
        [['days', 'end'], ['dai', 'end']],
        [['dragons'], ['dragon']],
        [['hunting'], ['hunt']],
      ],
    );
  });

  it('reads a name declared with an article ("the Abbey") as the name itself, so "Old Abbey" matches it', () => {
    const { terms } = buildSearchTerms({ input: 'I knock on the abbey gate', knownNames: ['the Abbey', 'Old Abbey'] });
    const abbey = terms.find((t) => t.text === 'abbey');
    assert.ok(abbey, 'the word abbey is searched on its own');
    assert.equal(abbey.name, true);
    assert.ok(!terms.some((t) => t.text === 'the abbey'), 'no phrase that "The Old Abbey" could never match');
  });

  it('finds a passage by a word longer than the index stems (a 10,000-letter run of y), as the index holds it', async () => {
    // FTS5's porter leaves a word over 64 letters unstemmed; stemmed here, it read as a word the campaign lacks.
    const long = `b${'y'.repeat(10_000)}ing`;
    const tall = `${'tall'.repeat(17)}ing`;
    const store = storeWith('westhaven', [...ALL, { path: 'notes/odd.md', passages: [[['Odd words'], `The bell rang ${long} over the ${tall} tower.`]] }]);
    try {
      for (const word of [long, tall]) {
        const { hits } = await searchKnowledge(store, word);
        assert.deepEqual(
          hits.map((h) => h.sourcePath),
          ['notes/odd.md'],
          `found by its ${word.length}-letter word`,
        );
      }
    } finally {
      store.close();
    }
  });

  it('a search made of stop words searches nothing', async () => {
    const store = storeWith('westhaven', ALL);
    try {
      const { hits, record } = await searchKnowledge(store, 'what is it that they were');
      assert.equal(hits.length, 0);
      assert.deepEqual(record.terms, []);
    } finally {
      store.close();
    }
  });
});
