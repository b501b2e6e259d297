import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { analyzeStoreConflicts, isOpenConflict, keepStatement } from '../../src/knowledge/conflicts';
import type { RetrievalResult } from '../../src/knowledge/retrieval';
import { openSession } from '../../src/session';
import { runCliCaptured } from '../support/interchange';

const EXAMPLE_CAMPAIGN = path.resolve('fixtures/example-campaign');
const LATER = '---\ntitle: Sister Mara, years later\nsupersedes: [characters/mara.md]\n---\n# Sister Mara\n\n- **Age:** 52\n';
const QUESTION = 'I ask Sister Mara how old she is';

describe('a settled conflict reaches retrieval', () => {
  let dir: string;
  let campaign: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-supersedes-'));
    campaign = path.join(dir, 'campaign');
    fs.cpSync(EXAMPLE_CAMPAIGN, campaign, { recursive: true });
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const context = async (): Promise<RetrievalResult> => {
    assert.equal((await runCliCaptured(['index', '--workers', '0'], campaign)).code, 0);
    const out = await runCliCaptured(['context', QUESTION, '--json'], campaign);
    assert.equal(out.code, 0, out.stderr);
    return JSON.parse(out.stdout) as RetrievalResult;
  };
  const sentCanon = (result: RetrievalResult) => [...result.sections.alwaysInclude, ...result.sections.canon].map((p) => p.text).join('\n');

  it('storyteller context no longer sends "Age: 34" as canon once a newer source supersedes it, and says why', async () => {
    fs.writeFileSync(path.join(campaign, 'characters', 'mara-later.md'), LATER);
    const result = await context();
    const sent = sentCanon(result);
    assert.doesNotMatch(sent, /Age: 34/);
    assert.match(sent, /Age: superseded by characters\/mara-later\.md — now 52/);
    assert.match(sent, /Age: 52/);
    const [line] = result.record.superseded ?? [];
    assert.deepEqual({ path: line?.sourcePath, was: line?.canonValue, now: line?.currentValue, statePath: line?.statePath }, { path: 'characters/mara.md', was: '34', now: '52', statePath: null });
    assert.match(line!.reason, /canon "34" \(characters\/mara\.md:8\) superseded by characters\/mara-later\.md:7 \("52"\), which declares supersedes: \[characters\/mara\.md\]/);
  });

  it('an open conflict (nothing settled) still sends both statements: only the writer decides', async () => {
    fs.writeFileSync(path.join(campaign, 'characters', 'mara-later.md'), LATER.replace('supersedes: [characters/mara.md]\n', ''));
    const result = await context();
    assert.match(sentCanon(result), /Age: 34/);
    assert.equal(result.record.superseded, undefined);
  });

  it('the narrator is told the same: a turn of the session no longer carries the superseded age', async () => {
    fs.writeFileSync(path.join(campaign, 'characters', 'mara-later.md'), LATER);
    const session = openSession(campaign);
    try {
      await session.reindex();
      const adventure = session.play.createAdventure({ campaignId: 'westhaven', title: 'Fog' });
      const preview = await session.engine.previewContext(adventure.id, { kind: 'say', text: QUESTION });
      const prompt = preview.messages.map((m) => m.content).join('\n');
      assert.doesNotMatch(prompt, /Age: 34/);
      assert.match(prompt, /superseded by characters\/mara-later\.md — now 52/);
    } finally {
      await session.close();
    }
  });

  it('a conflict settled by keeping one statement (in play.db, no file edited) sends the other as superseded', async () => {
    fs.writeFileSync(path.join(campaign, 'characters', 'mara-later.md'), LATER.replace('supersedes: [characters/mara.md]\n', ''));
    const session = openSession(campaign);
    try {
      await session.reindex();
      const conflict = analyzeStoreConflicts(session.store).conflicts.find((c) => c.attribute === 'Age')!;
      const later = conflict.a.path === 'characters/mara-later.md' ? conflict.a : conflict.b;
      keepStatement(session.play.db, session.campaign.id, conflict, later);
      assert.ok(!analyzeStoreConflicts(session.store, new Map([[conflict.key, 'kept-a' as const]])).conflicts.filter((c) => c.attribute === 'Age').some(isOpenConflict));
    } finally {
      await session.close();
    }
    const result = await context();
    const sent = sentCanon(result);
    assert.doesNotMatch(sent, /Age: 34/);
    assert.match(sent, /Age: superseded by characters\/mara-later\.md — now 52/);
    assert.match(result.record.superseded![0]!.reason, /canon "34" \(characters\/mara\.md:8\) superseded by characters\/mara-later\.md:6 \("52"\): the writer kept that statement/);
  });
});
