import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StoryEngine } from '../../src/story/engine';
import YAML from 'yaml';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import { campaignAdventure, PlayStore } from '../../src/story/playStore';
import { makeCampaign, removeDir } from '../support/campaignDirs';
import { StatSchemaError } from '../../src/story/worldState';
import { noKnowledge } from '../../src/story/ports';
import { KAELEN, STAT_SCHEMA } from './storySupport';

describe('story play store', () => {
  let dir: string;
  let store: PlayStore;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-store-'));
    store = new PlayStore(path.join(dir, 'play.db'));
  });
  afterEach(() => {
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('stores the persona, and a rename reaches the prompt while paths stay player.*', async () => {
    const adventure = store.createAdventure({ campaignId: 'westhaven', title: 'Fog', persona: KAELEN, statSchema: STAT_SCHEMA });
    assert.deepEqual(store.adventure(adventure.id).persona, KAELEN);
    store.updateAdventure(adventure.id, { persona: { name: 'Aria', pronouns: 'she/her' } });
    const engine = new StoryEngine(store, noKnowledge('westhaven'), null, { model: 'llama3.2' });
    const context = await engine.previewContext(adventure.id, { kind: 'do', text: 'look' });
    assert.match(context.messages[0]!.content, /You are Aria \(she\/her\)\. A half-elf ranger/);
    assert.match(context.messages[0]!.content, /Protagonist Aria — stats are addressed as player\.<stat>/);
    assert.match(context.messages[1]!.content, /Aria \(player\): hp 100\/100/);
  });

  it("starts a campaign's adventures tracking what its campaign.yaml declares under stats:", async () => {
    const root = makeCampaign({}, YAML.stringify({ id: 'westhaven', title: 'Westhaven', stats: STAT_SCHEMA }));
    try {
      const adventure = store.createAdventure(campaignAdventure(loadCampaign(root), 'Fog'));
      assert.deepEqual(adventure.statSchema.player.hp, STAT_SCHEMA.player.hp);
      const engine = new StoryEngine(store, noKnowledge('westhaven'), null, { model: 'llama3.2' });
      const context = await engine.previewContext(adventure.id, { kind: 'do', text: 'look' });
      assert.match(context.messages[1]!.content, /Sister Mara \(npc\.mara\): trust 40\/100/);
    } finally {
      removeDir(root);
    }
  });

  it('names campaign.yaml and the path inside stats: when the block is wrong, and starts nothing', () => {
    const root = makeCampaign({}, YAML.stringify({ id: 'westhaven', title: 'Westhaven', stats: { player: { hp: {} } } }));
    try {
      assert.throws(() => store.createAdventure(campaignAdventure(loadCampaign(root), 'Fog')), (error: Error) => {
        assert.ok(error instanceof StatSchemaError);
        assert.match(error.message, /campaign\.yaml: stats: player\.hp/);
        return true;
      });
      assert.equal(store.listAdventures().length, 0);
    } finally {
      removeDir(root);
    }
  });

  it('rejects bad input with the reason and writes nothing', () => {
    assert.throws(() => store.createAdventure({ campaignId: 'w', title: 'x', persona: { name: 'K'.repeat(81) } }), /persona name is 81 characters; at most 80/);
    assert.throws(() => store.createAdventure({ campaignId: 'w', title: 'x', statSchema: { player: { hp: {} } } }), StatSchemaError);
    assert.equal(store.listAdventures().length, 0);
    const adventure = store.createAdventure({ campaignId: 'w', title: 'x', statSchema: STAT_SCHEMA });
    assert.throws(() => store.updateAdventure(adventure.id, { statSchema: { flags: { a: { initial: 'yes' } } } }), /stat schema: flags\.a\.initial/);
    assert.deepEqual(store.adventure(adventure.id).statSchema.player.hp, STAT_SCHEMA.player.hp);
  });

  it('keeps a tree: lineage follows one branch, children list siblings in order', () => {
    const { id } = store.createAdventure({ campaignId: 'w', title: 'x' });
    const add = (parentId: string | null, text: string) => store.createTurn({ adventureId: id, parentId, action: { kind: 'do', text }, model: null, stateAfter: {} });
    const root = add(null, 'a');
    const b = add(root.id, 'b');
    const c = add(b.id, 'c');
    const b2 = add(root.id, 'b again');
    assert.deepEqual(store.lineage(c.id).map((t) => t.action.text), ['a', 'b', 'c']);
    assert.deepEqual(store.lineage(b2.id).map((t) => t.depth), [0, 1]);
    assert.deepEqual(store.children(id, root.id).map((t) => t.id), [b.id, b2.id]);
    assert.equal(store.adventure(id).headTurnId, b2.id, 'a new turn becomes the head');
    const other = store.createAdventure({ campaignId: 'w', title: 'y' });
    assert.throws(() => store.setHead(other.id, c.id), /belongs to another adventure/);
  });

  it('deletes an adventure with its turns, snapshots, memories and summaries', () => {
    const { id } = store.createAdventure({ campaignId: 'w', title: 'x' });
    const keep = store.createAdventure({ campaignId: 'w', title: 'keep' });
    const t = store.createTurn({ adventureId: id, parentId: null, action: { kind: 'do', text: 'a' }, model: null, stateAfter: {} });
    store.createTurn({ adventureId: id, parentId: t.id, action: { kind: 'do', text: 'b' }, model: null, stateAfter: {} });
    store.addMemory({ adventureId: id, anchorTurnId: t.id, sourceStart: 0, sourceEnd: 0, text: 'm' });
    store.putSummary(id, t.id, 's');
    store.deleteAdventure(id);
    assert.equal(store.getAdventure(id), undefined);
    for (const table of ['turns', 'memories', 'story_summaries']) {
      assert.equal((store.db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n, 0, table);
    }
    assert.ok(store.getAdventure(keep.id));
  });
});
