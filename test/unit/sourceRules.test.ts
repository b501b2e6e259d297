import assert from 'node:assert/strict';
import { loadCampaign, type Campaign } from '../../src/knowledge/campaign/campaign';
import { ALWAYS_INCLUDED_SQL, ELIGIBLE_SQL, isAlwaysIncluded, sourceExclusion, standingFlags } from '../../src/knowledge/campaign/sourceRules';
import { KNOWLEDGE_CLASSES, VISIBILITIES, type LexicalState } from '../../src/knowledge/campaign/types';
import { indexHealth } from '../../src/knowledge/health/health';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { campaignStatus, sourceStatus } from '../../src/knowledge/indexing/operations';
import { openDatabase, type Db } from '../../src/knowledge/indexing/sqlite';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { DEFAULT_KNOWLEDGE_BUDGETS, retrieveKnowledge, whyNot } from '../../src/knowledge/retrieval/retrieval';
import { castFromKnowledgeStore } from '../../src/story/cast';
import { PLAY_MIGRATIONS } from '../../src/knowledge/indexing/playSchema';
import { makeCampaign, removeDir } from '../support/campaignDirs';
import { storeWith, type FixtureSource } from '../support/knowledgeFixtures';

const STAGES = ['narrator', 'player'] as const;
const LEXICAL_STATES: LexicalState[] = ['pending', 'ready', 'error', 'duplicate'];

describe('source rules: one answer on every surface', () => {
  describe('always-include is a canon rule', () => {
    let root: string;
    let campaign: Campaign;
    let store: KnowledgeStore;
    let play: Db;

    before(async () => {
      root = makeCampaign({
        'rules.md': '---\nclass: canon\nalways_include: true\n---\n# Hard rules\n\nResurrection is impossible. The dead stay dead.\n',
        'tolls.md': '---\nclass: reference\nalways_include: true\n---\n# Tolls\n\nThe gate toll is two coppers a cart, collected by the bridge warden.\n',
        'mood.md': '---\nclass: inspiration\nalways_include: true\n---\n# Mood\n\nFog on the river and bells across the water.\n',
        'retired.md': '---\nclass: canon\nalways_include: true\nenabled: false\n---\n# Retired rules\n\nMagic is common.\n',
        'town.md': '---\nclass: canon\n---\n# Westhaven\n\nA walled river town with a bridge warden at its gate.\n',
      });
      campaign = loadCampaign(root);
      store = KnowledgeStore.open(campaign);
      await importCampaign(campaign, store);
      play = openDatabase(':memory:', PLAY_MIGRATIONS);
    });
    after(() => {
      store.close();
      play.close();
      removeDir(root);
    });

    it('pins only enabled canon in retrieval, health and the Sources view alike', async () => {
      const result = await retrieveKnowledge(store, { input: 'the weather', stage: 'narrator', budgets: { ...DEFAULT_KNOWLEDGE_BUDGETS } });
      const retrievalPins = result.sections.alwaysInclude.map((p) => p.sourcePath);
      const health = await indexHealth(campaign, store, { alwaysIncludeBudget: 0 });
      const healthPins = health.findings.filter((f) => f.code === 'always-include-over-budget').map((f) => f.path);
      const viewPins = store
        .listSources()
        .filter((s) => standingFlags(s).includes('always included') && !standingFlags(s).includes('disabled'))
        .map((s) => s.path);
      assert.deepEqual(retrievalPins, ['rules.md']);
      assert.deepEqual(healthPins, retrievalPins);
      assert.deepEqual(viewPins, retrievalPins);
      assert.deepEqual(
        health.findings.filter((f) => f.code === 'always-include-not-canon').map((f) => f.path),
        ['mood.md', 'tolls.md'],
        'lint names the flag it ignores',
      );
      assert.deepEqual(standingFlags(store.getSourceByPath('tolls.md')!), ['always_include ignored (reference is never sent as canon)']);
    });

    it('lets a reference marked always-include compete as reference, under its own budget', async () => {
      const budgets = { ...DEFAULT_KNOWLEDGE_BUDGETS, reference: 0 };
      const result = await retrieveKnowledge(store, { input: 'the gate toll for a cart', stage: 'narrator', budgets });
      const tolls = result.record.candidates.find((c) => c.sourcePath === 'tolls.md')!;
      assert.equal(tolls.outcome, 'over-budget');
      assert.equal(tolls.section, 'reference', 'left out under the reference section, not the always-include one');
      assert.ok(!result.sections.alwaysInclude.some((p) => p.sourcePath === 'tolls.md'));
    });

    it('reports a reference marked always-include as never used, as it would any retrieved source', async () => {
      play.exec("INSERT INTO adventures (id, campaign_id, title, created_at, updated_at) VALUES ('a1', 'test', 'Test', 'now', 'now')");
      play.exec("INSERT INTO turns (id, adventure_id, depth, action_kind, action, status, created_at, updated_at) VALUES ('t1', 'a1', 0, 'do', 'look', 'complete', 'now', 'now')");
      const town = store.getSourceByPath('town.md')!;
      play.prepare("INSERT INTO turn_passages (turn_id, passage_id, source_id, selected, reason) VALUES ('t1', ?, ?, 1, 'matched')").run(store.listPassages(town.id)[0]!.id, town.id);
      const never = (await indexHealth(campaign, store, { playDb: play })).findings.filter((f) => f.code === 'never-retrieved').map((f) => f.path);
      assert.deepEqual(never, ['mood.md', 'tolls.md'], 'rules.md is sent without retrieval; the ignored flag exempts nothing');
    });
  });

  describe('eligibility', () => {
    // Every combination of the fields the rule reads, each a source with one passage.
    const fixtures: FixtureSource[] = [];
    for (const lexicalState of LEXICAL_STATES) {
      for (const visibility of VISIBILITIES) {
        for (const enabled of [true, false]) {
          fixtures.push({ path: `${lexicalState}-${visibility}-${enabled ? 'on' : 'off'}.md`, lexicalState, visibility, enabled, entities: ['Warden'], passages: [[['Warden'], `The bridge warden number ${fixtures.length} collects the gate toll.`]] });
        }
      }
    }
    let store: KnowledgeStore;
    before(() => {
      store = storeWith('rules', fixtures);
    });
    after(() => store.close());

    it('gives the same answer as a record rule, as SQL, in retrieval, in the index status and in the cast', async () => {
      const sources = store.listSources();
      for (const stage of STAGES) {
        const expected = sources.filter((s) => sourceExclusion(s, stage) === null).map((s) => s.path).sort();
        const bySql = (store.db.prepare(`SELECT s.path FROM sources s WHERE s.campaign_id = @campaign AND ${ELIGIBLE_SQL} ORDER BY s.path`).all({ campaign: 'rules', stage }) as { path: string }[]).map((r) => r.path);
        assert.deepEqual(bySql, expected, `SQL at the ${stage} stage`);
        const result = await retrieveKnowledge(store, { input: 'the bridge warden and the gate toll', stage, budgets: { ...DEFAULT_KNOWLEDGE_BUDGETS } });
        for (const source of sources) {
          const decision = result.record.candidates.find((c) => c.sourceId === source.id);
          const exclusion = sourceExclusion(source, stage);
          if (exclusion) {
            // Excluded: recorded with the rule's reason when it matched, and explained the same way when asked.
            if (decision) assert.equal(decision.outcome, exclusion, source.path);
            assert.match(whyNot(store, result.record, `${source.id}#0`), new RegExp(`^${exclusion}:`), source.path);
          } else {
            assert.equal(decision?.outcome, 'selected', `${source.path} at the ${stage} stage`);
          }
        }
      }
      const narrator = sources.filter((s) => sourceExclusion(s, 'narrator') === null);
      assert.deepEqual(sources.filter((s) => sourceStatus(store, s).retrievable).map((s) => s.path), narrator.map((s) => s.path));
      assert.equal(campaignStatus(store).passages, narrator.length);
      assert.equal(castFromKnowledgeStore(store).length, narrator.length, 'the cast names only sources retrieval could use');
    });

    it('pins by the same always-include rule as a record rule and as SQL', () => {
      const pinStore = storeWith(
        'pins',
        KNOWLEDGE_CLASSES.flatMap((cls) => [true, false].map((alwaysInclude) => ({ path: `${cls}-${alwaysInclude}.md`, class: cls, alwaysInclude, passages: [[['Rule'], 'A rule.']] as [string[], string][] }))),
      );
      try {
        const expected = pinStore.listSources().filter(isAlwaysIncluded).map((s) => s.path).sort();
        const bySql = (pinStore.db.prepare(`SELECT s.path FROM sources s WHERE ${ALWAYS_INCLUDED_SQL} ORDER BY s.path`).all() as { path: string }[]).map((r) => r.path);
        assert.deepEqual(expected, ['canon-true.md']);
        assert.deepEqual(bySql, expected);
      } finally {
        pinStore.close();
      }
    });
  });
});
