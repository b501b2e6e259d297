import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_KNOWLEDGE_BUDGETS, retrieveKnowledge, searchKnowledge } from '../../src/knowledge/retrieval/retrieval';
import type { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { corpusPath } from '../support/corpora';
import { importCorpora } from '../support/knowledgeFixtures';

describe('retrieval over real material (Torys as canon, the SRD as reference)', function () {
  this.timeout(120_000);
  let store: KnowledgeStore;
  let dispose: () => void;
  before(async () => {
    ({ store, dispose } = await importCorpora('library', {
      torys: { corpus: corpusPath('torys'), class: 'canon' },
      srd: { corpus: corpusPath('dnd-srd-5.1'), class: 'reference' },
    }));
  });
  after(() => dispose());

  it('gives every question the answers pinned for it: a faster search is the same search', async () => {
    // Each question's results (file, lines, score) and one turn's context, as search gave them before it was
    // made faster; a change meant to move them rewrites the file and says why.
    const pinned = JSON.parse(fs.readFileSync(path.join(__dirname, 'retrievalCorpora.pinned.json'), 'utf8')) as Record<string, string[]>;
    const contextPrefix = 'context: ';
    const got: Record<string, string[]> = {};
    for (const key of Object.keys(pinned)) {
      if (key.startsWith(contextPrefix)) {
        const turn = await retrieveKnowledge(store, {
          input: key.slice(contextPrefix.length),
          scene: 'The party rests in a ruined keep.',
          recent: ['The goblin archers fall back into the trees.'],
          stage: 'narrator',
          budgets: { ...DEFAULT_KNOWLEDGE_BUDGETS },
        });
        got[key] = Object.entries(turn.sections).flatMap(([section, passages]) => passages.map((p) => `${section} ${p.sourcePath}:${p.startLine}-${p.endLine}`));
      } else {
        got[key] = (await searchKnowledge(store, key, { limit: 10 })).hits.map((h) => `${h.sourcePath}:${h.startLine}-${h.endLine} ${h.score}`);
      }
    }
    assert.deepEqual(got, pinned);
  });

  it("answers a reader's question about the setting from the right page", async () => {
    const { hits } = await searchKnowledge(store, "Who runs the inn at Day's End?", { limit: 3 });
    assert.ok(
      hits.some((h) => /days-end\/(natra|old-prince)\.md$/.test(h.sourcePath)),
      hits.map((h) => h.sourcePath).join(', '),
    );
  });

  it("answers a question about one of the setting's people asked with words their page lacks", async () => {
    // 'fear', 'die', 'colour' and 'enemies' are elsewhere in the library, never beside these names: each
    // name, a word the setting keeps using, answers alone.
    for (const [question, page] of [
      ['What does Takala fear?', 'takala-the-spellmaster.md'],
      ['How did Perlen die?', 'perlen-the-destined.md'],
      ['Who are the enemies of Perexel?', 'perexel/index.md'],
    ] as const) {
      const { hits } = await searchKnowledge(store, question, { limit: 5 });
      assert.ok(hits.some((h) => h.sourcePath.endsWith(page)), `${question}: ${hits.map((h) => h.sourcePath).join(', ')}`);
    }
  });

  it("puts first the page a question names by its title, above a story that keeps mentioning it", async () => {
    // Stories and other pages mention these names too, many passages of them in a row; the page titled so is about them.
    for (const [question, page] of [
      ['Who is Ice?', 'torys/world/oro-oro-ponoro-poron/dragons/ice.md'],
      ['Who is Firecomb?', 'torys/world/tumulted-sea/leuber/firecomb.md'],
      ['Who is Tuvdak the Magnificent?', 'torys/world/oro-oro-ponoro-poron/dragons/tuvdak-the-magnificent.md'],
    ] as const) {
      const { hits, record } = await searchKnowledge(store, question, { limit: 5 });
      assert.equal(hits[0]?.sourcePath, page, `${question}: ${hits.map((h) => h.sourcePath).join(', ')}`);
      const decision = record.candidates.find((c) => c.passageId === hits[0]!.passageId)!;
      assert.ok(decision.boosts.some((b) => b.name.startsWith('linked to')), `${question}: ${JSON.stringify(decision.boosts)}`);
    }
  });

  it("sends the page of a place the turn names before passages that only mention it", async () => {
    // The Day's End page (511 tokens) was left out of the canon budget while a merchant's one line about the town,
    // and an innkeeper's, were sent: each only mentions the town the turn walks into.
    const { sections, record } = await retrieveKnowledge(store, { input: "I walk through the gates of Day's End", stage: 'narrator', budgets: { ...DEFAULT_KNOWLEDGE_BUDGETS } });
    const page = 'torys/world/tumulted-sea/andal/days-end/index.md';
    assert.equal(sections.canon[0]?.sourcePath, page, sections.canon.map((p) => p.sourcePath).join(', '));
    assert.match(record.candidates.find((c) => c.sourcePath === page)!.reason, /placed first, as the page of 'Day’s End', which this turn names/);
  });

  it('answers a rules question from the SRD, as reference', async () => {
    const { hits } = await searchKnowledge(store, 'How does grappling work?', { limit: 3 });
    const combat = hits.find((h) => h.sourcePath === 'srd/Gameplay/Combat.md');
    assert.ok(combat, hits.map((h) => h.sourcePath).join(', '));
    assert.deepEqual(combat.headingPath.slice(-1), ['Grappling']);
    assert.equal(combat.class, 'reference');
  });

  it('heads a rules passage that runs through two short sections by what both are under, never by the first alone', async () => {
    // Paladin's "Spellcasting Focus" is too short to stand alone and runs on into "Divine Smite".
    const { hits } = await searchKnowledge(store, 'How does the paladin divine smite work?', { limit: 3 });
    const smite = hits.find((h) => h.sourcePath === 'srd/Classes/Paladin.md' && h.text.includes('### Divine Smite\n'));
    assert.ok(smite, hits.map((h) => `${h.sourcePath} › ${h.headingPath.join(' › ')}`).join('; '));
    assert.deepEqual(smite.headingPath, ['Paladin']);
    assert.match(smite.text, /^#### Spellcasting Focus\n\nYou can use a holy symbol/);
  });

  it('never reads a real word as a misspelling of one that starts with another letter', async () => {
    // 'router' is too rare in everyday English for its list, and one letter from the SRD's 'outer' (planes).
    const { record } = await searchKnowledge(store, 'How do I reset my router password?', { limit: 3 });
    assert.ok(!record.terms.includes('outer'), record.terms.join(', '));
  });

  it('assembles nothing for a scene the library knows nothing about', async () => {
    const result = await retrieveKnowledge(store, {
      input: 'We board the starship and plot a jump to the orbital casino.',
      recent: ['The hyperdrive hums.', 'Docking clamps release.'],
      stage: 'narrator',
      budgets: { ...DEFAULT_KNOWLEDGE_BUDGETS },
    });
    assert.deepEqual(Object.values(result.sections).flat(), []);
  });

  it('keeps the canon of the scene in canon and the rules in reference, within their budgets', async () => {
    const result = await retrieveKnowledge(store, {
      input: 'I ask Ahahbu to heal my broken arm.',
      scene: "Ahahbu's house, Day's End",
      stage: 'narrator',
      budgets: { ...DEFAULT_KNOWLEDGE_BUDGETS },
    });
    assert.ok(result.sections.canon.some((p) => p.sourcePath.endsWith('ahahbu.md')));
    assert.ok(result.sections.reference.every((p) => p.sourcePath.startsWith('srd/')));
    for (const section of ['canon', 'reference', 'inspiration'] as const) {
      assert.ok(result.sections[section].reduce((n, p) => n + p.tokenCount, 0) <= DEFAULT_KNOWLEDGE_BUDGETS[section]);
    }
    for (const c of result.record.candidates) assert.ok(c.reason.length > 0, `every decision has a reason: ${c.passageId}`);
  });
});
