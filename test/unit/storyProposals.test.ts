import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { analyzeStoreConflicts, keepStatement, loadConflictDecisions } from '../../src/knowledge/conflicts';
import { openDatabase } from '../../src/knowledge/indexing';
import { openSession, type CampaignSession } from '../../src/session';
import { PLAY_MIGRATIONS } from '../../src/knowledge/indexing';
import { proposeCanonUpdates, settleAnswer, writeProposals, type CanonProposal, type ProposalSet } from '../../src/story';
import { diskReader } from '../../src/story/proposals';
import type { Adventure } from '../../src/story';
import { playScene, writePlayedCampaign } from '../support/playedCampaign';

const summary = (set: ProposalSet) => set.proposals.map((p) => `${p.origin} ${p.file}: ${JSON.stringify(p.oldText)} → ${JSON.stringify(p.newText)} [${p.turns.map((t) => t.number).join(',')}]`);

describe('canon proposals: from play back to the bible', () => {
  let dir: string;
  let root: string;
  let session: CampaignSession;
  let adventure: Adventure;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-proposals-'));
    root = path.join(dir, 'campaign');
    writePlayedCampaign(root);
    session = openSession(root);
    await session.reindex();
    adventure = playScene(session);
  });
  afterEach(async () => {
    await session.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const propose = (options: Parameters<typeof proposeCanonUpdates>[1] = {}, which = adventure) =>
    proposeCanonUpdates({ campaign: session.campaign, store: session.store, play: session.play, adventure: session.play.adventure(which.id) }, options);
  const read = (rel: string) => fs.readFileSync(path.join(root, ...rel.split('/')), 'utf8');

  it('with no model, proposes every canon change the played scene implies, each with its turn, and says it ran without one', async () => {
    const set = await propose();
    assert.match(set.drafting, /^deterministic: no model was given/);
    assert.deepEqual(summary(set), [
      'world-state places/bridge.md: "- **Status:** standing" → "- **Status:** destroyed" [2]',
      // The gate's file is locked: its change is a new canon file that supersedes it, never an edit.
      'world-state places/north-gate-update.md: "" → "---\\ntitle: The North Gate\\nentities:\\n  - North Gate\\n  - gate\\nsupersedes:\\n  - places/north-gate.md\\nclass: canon\\nfrom_turn: The Night Watch, turn 3\\n---\\n# The North Gate\\n\\n- **Status:** closed\\n" [3]',
      'world-state characters/mara.md: "- **Age:** 34" → "- **Age:** 52" [2]',
      'world-state characters/mara.md: "- **Home:** the Old Abbey" → "- **Home:** the Old Abbey\\n- **Trust:** 55" [3]',
      'new-character characters/tomas-the-smuggler.md: "" → "---\\ntitle: Tomas the Smuggler\\nentities:\\n  - Tomas the Smuggler\\nclass: canon\\nfrom_turn: The Night Watch, turn 3\\n---\\n# Tomas the Smuggler\\n\\nA river smuggler who owes half of Westhaven.\\n\\n- **Debt:** 30\\n" [3]',
    ]);
    const age = set.proposals.find((p) => p.newText === '- **Age:** 52')!;
    assert.equal(age.reason, 'Sister Mara — Age: canon says "34"; play made it "52"');
    assert.deepEqual(age.evidence, ['turn 2: I cut the ropes of the bridge', 'state after it: npc.mara.age = 52', 'canon characters/mara.md:8: - **Age:** 34']);
    assert.deepEqual(set.refused, []);
    assert.equal(read('places/north-gate.md').includes('locked: true'), true, 'nothing was written');
  });

  it('applied, the canon agrees with play: the files say so, the index follows, and nothing is proposed again', async () => {
    const set = await propose();
    const written = writeProposals(root, set.proposals);
    assert.deepEqual(written.sort(), ['characters/mara.md', 'characters/tomas-the-smuggler.md', 'places/bridge.md', 'places/north-gate-update.md']);
    assert.match(read('characters/mara.md'), /- \*\*Age:\*\* 52\n- \*\*Role:\*\* Keeper of the Old Abbey's infirmary\n- \*\*Home:\*\* the Old Abbey\n- \*\*Trust:\*\* 55\n/);
    assert.match(read('places/north-gate.md'), /- \*\*Status:\*\* open/, 'the locked file is untouched');
    const answer = settleAnswer(session.play.db, session.campaign.id, adventure.id, set.proposals, diskReader(root));
    assert.equal(answer.applied.length, 5);
    await session.reindex();
    assert.equal(session.store.getSourceByPath('characters/tomas-the-smuggler.md')?.class, 'canon');
    assert.deepEqual(summary(await propose()), []);
    // The new gate file supersedes the locked one where they disagree.
    assert.ok(analyzeStoreConflicts(session.store).conflicts.some((c) => c.settledBy === 'supersedes' && c.a.path === 'places/north-gate-update.md'));
  });

  it('discarded proposals are remembered in play.db and not proposed again for the same turns; a later turn proposes anew', async () => {
    const set = await propose();
    const answer = settleAnswer(session.play.db, session.campaign.id, adventure.id, set.proposals, diskReader(root));
    assert.equal(answer.discarded.length, 5);
    const again = await propose();
    assert.deepEqual(again.proposals, []);
    assert.equal(again.discardedBefore, 5);
    // Mara turns 53 at turn 4: new evidence for the same line.
    const head = session.play.adventure(adventure.id).headTurnId!;
    const turn = session.play.createTurn({ adventureId: adventure.id, parentId: head, action: { kind: 'do', text: 'A year passes' }, model: null, stateAfter: {} });
    const stateAfter = { ...session.play.turn(head).stateAfter, 'npc.mara.age': 53 };
    session.play.finishTurn(turn.id, { status: 'complete', narration: 'Winter again.', error: null, stateDelta: null, stateAfter, refusals: [], promptEvalCount: null, evalCount: null });
    assert.deepEqual(summary(await propose()), ['world-state characters/mara.md: "- **Age:** 34" → "- **Age:** 53" [4]']);
  });

  it('a conflict the writer settled by keeping one statement proposes the other line rewritten, and applying it clears the decision', async () => {
    fs.writeFileSync(path.join(root, 'characters', 'mara-later.md'), '---\ntitle: Sister Mara, years later\n---\n# Sister Mara\n\n- **Role:** Abbess of the Old Abbey\n');
    await session.reindex();
    const conflict = analyzeStoreConflicts(session.store).conflicts.find((c) => c.attribute === 'Role')!;
    keepStatement(session.play.db, session.campaign.id, conflict, conflict.a.path === 'characters/mara-later.md' ? conflict.a : conflict.b);
    const fresh = session.play.createAdventure({ campaignId: session.campaign.id, title: 'Nothing played yet' });
    const set = await propose({}, fresh);
    assert.deepEqual(summary(set), [`settled-conflict characters/mara.md: "- **Role:** Keeper of the Old Abbey's infirmary" → "- **Role:** Abbess of the Old Abbey" []`]);
    assert.deepEqual(set.proposals[0]!.settles, [conflict.key]);
    writeProposals(root, set.proposals);
    settleAnswer(session.play.db, session.campaign.id, fresh.id, set.proposals, diskReader(root));
    assert.equal(loadConflictDecisions(session.play.db, session.campaign.id).has(conflict.key), false);
  });

  it('a play.db from before proposals gains the discard table with every adventure and turn kept', async () => {
    const file = path.join(dir, 'old-play.db');
    const old = openDatabase(file, PLAY_MIGRATIONS.slice(0, 2));
    old.prepare("INSERT INTO adventures (id, campaign_id, title, created_at, updated_at) VALUES ('a1', 'westhaven', 'Old game', 'x', 'x')").run();
    old.close();
    const db = openDatabase(file, PLAY_MIGRATIONS);
    try {
      assert.equal(db.pragma('user_version', { simple: true }), PLAY_MIGRATIONS.at(-1)!.version);
      assert.deepEqual(db.prepare('SELECT title FROM adventures').all(), [{ title: 'Old game' }]);
      assert.deepEqual(db.prepare('SELECT COUNT(*) AS n FROM proposal_discards').get(), { n: 0 });
    } finally {
      db.close();
    }
  });

  it('writes nothing where the replaced text changed since it was proposed, and names the file', async () => {
    const set = await propose();
    fs.writeFileSync(path.join(root, 'places', 'bridge.md'), read('places/bridge.md').replace('standing', 'swaying'));
    const bridge = set.proposals.filter((p: CanonProposal) => p.file === 'places/bridge.md');
    assert.throws(() => writeProposals(root, bridge), /not written: places\/bridge\.md: the text to replace is no longer in it exactly once/);
    assert.match(read('places/bridge.md'), /swaying/);
  });
});
