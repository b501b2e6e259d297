import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EXIT } from '../../../src/cli/command';
import { loadCampaign } from '../../../src/knowledge/campaign';
import { BundleError, exportCampaignBundle, importCampaignBundle } from '../../../src/knowledge/interchange';
import type { CampaignBundle } from '../../../src/knowledge/interchange/bundle';
import { openSession } from '../../../src/session';
import { adventureMap } from '../../../src/story/adventureMap';
import { PlayStore } from '../../../src/story/playStore';
import type { Adventure } from '../../../src/story/types';
import { runCaptured } from '../../support/cliRun';
import { listTree, withIndexedSession } from '../../support/interchange';
import { playScene, writePlayedCampaign } from '../../support/playedCampaign';
import { Tracker, requireBuiltCli, spawnCli } from './attackSupport';

/**
 * Play data that is not a story: a bundle whose turns point at each other, at themselves or into another
 * adventure is refused at import, naming the adventure, the turn and why; a play.db damaged by hand is
 * named by every command that walks a branch, which ends instead of spinning; a branch thousands of turns
 * long is drawn without running out of stack.
 */

/** A generous bound for a loaded 2-core machine: a walk that spins is killed here and the test fails, never hangs. */
const HANG_GUARD_MS = 60_000;

interface Played {
  first: Adventure;
  second: Adventure;
  /** Turn ids of each adventure, from its first turn. */
  firstTurns: string[];
  secondTurns: string[];
}

/** The played campaign with two adventures of three turns each. */
async function playTwoAdventures(root: string): Promise<Played> {
  writePlayedCampaign(root);
  return withIndexedSession(root, (session) => {
    const first = playScene(session, 'The Night Watch');
    const second = playScene(session, 'The Morning After');
    const turnsOf = (a: Adventure) => session.play.lineage(a.headTurnId).map((t) => t.id);
    return { first, second, firstTurns: turnsOf(first), secondTurns: turnsOf(second) };
  });
}

/** Runs the built CLI, killing it when it has not ended within the guard: a spin fails the test instead of hanging it. */
async function cliEnding(args: string[], stdin: string, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const spawned = spawnCli(args, { cwd });
  spawned.child.stdin!.end(stdin);
  let guard: NodeJS.Timeout | undefined;
  const killed = new Promise<'killed'>((resolve) => {
    guard = setTimeout(() => {
      spawned.child.kill('SIGKILL');
      resolve('killed');
    }, HANG_GUARD_MS);
  });
  const ended = await Promise.race([spawned.exit, killed]);
  clearTimeout(guard);
  if (ended === 'killed') {
    await spawned.exit;
    assert.fail(`storyteller ${args[0]} did not end within ${HANG_GUARD_MS / 1000} s on a damaged play.db (killed); stdout: ${spawned.stdout().slice(-400)}`);
  }
  return { code: ended.code, stdout: spawned.stdout(), stderr: spawned.stderr() };
}

describe('attack: play data that is not a story', () => {
  let dir: string;
  let campaign: string;
  let played: Played;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-play-story-'));
    campaign = path.join(dir, 'campaign');
    played = await playTwoAdventures(campaign);
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  describe('a crafted bundle is refused at import, naming the adventure, the turn and why, and nothing is written', () => {
    let bundle: CampaignBundle;
    beforeEach(async () => {
      const file = path.join(dir, 'good.storyteller.json');
      await withIndexedSession(campaign, (session) => exportCampaignBundle(session.exportSource, file));
      bundle = JSON.parse(fs.readFileSync(file, 'utf8')) as CampaignBundle;
      fs.rmSync(file);
    });

    /** Sets `column` of the play row whose id is `id`, in the bundle's copy of `table`. */
    const edit = (crafted: CampaignBundle, table: string, id: string, column: string, value: string | number | null): CampaignBundle => {
      const rows = crafted.play!.tables.find((t) => t.name === table)!;
      const row = rows.rows.find((r) => r[rows.columns.indexOf('id')] === id)!;
      row[rows.columns.indexOf(column)] = value;
      return crafted;
    };
    const cases: [string, () => CampaignBundle, () => RegExp][] = [
      [
        'two turns that are each other\'s parent',
        () => edit(structuredClone(bundle), 'turns', played.firstTurns[0]!, 'parent_id', played.firstTurns[1]!),
        () => new RegExp(`adventure ${played.first.id}, turn ${played.firstTurns[0]}: its parents form a cycle \\(${played.firstTurns[0]} → ${played.firstTurns[1]} → ${played.firstTurns[0]}\\)`),
      ],
      [
        'a turn that is its own parent',
        () => edit(edit(structuredClone(bundle), 'turns', played.firstTurns[1]!, 'parent_id', played.firstTurns[1]!), 'turns', played.firstTurns[1]!, 'depth', 0),
        () => new RegExp(`adventure ${played.first.id}, turn ${played.firstTurns[1]}: it is its own parent`),
      ],
      [
        'a turn whose parent is in another adventure',
        () => edit(edit(structuredClone(bundle), 'turns', played.firstTurns[0]!, 'parent_id', played.secondTurns[2]!), 'turns', played.firstTurns[0]!, 'depth', 3),
        () => new RegExp(`adventure ${played.first.id}, turn ${played.firstTurns[0]}: its parent ${played.secondTurns[2]} belongs to another adventure \\(${played.second.id}\\)`),
      ],
      [
        'a turn deeper than its parent allows',
        () => edit(structuredClone(bundle), 'turns', played.firstTurns[2]!, 'depth', 7),
        () => new RegExp(`adventure ${played.first.id}, turn ${played.firstTurns[2]}: its depth is 7, but its parent ${played.firstTurns[1]} is at depth 1`),
      ],
      [
        "a head on another adventure's turn",
        () => edit(structuredClone(bundle), 'adventures', played.first.id, 'head_turn_id', played.secondTurns[2]!),
        () => new RegExp(`adventure ${played.first.id}: its head turn ${played.secondTurns[2]} belongs to another adventure \\(${played.second.id}\\)`),
      ],
      [
        'an unreadable stat_schema',
        () => edit(structuredClone(bundle), 'adventures', played.second.id, 'stat_schema', '{world: broken'),
        () => new RegExp(`adventure ${played.second.id}: stat_schema is not readable JSON \\(Expected property name`),
      ],
      [
        'a stat_schema that is no stat schema',
        () => edit(structuredClone(bundle), 'adventures', played.second.id, 'stat_schema', '{"world": 5}'),
        () => new RegExp(`adventure ${played.second.id}: stat_schema is not a stat schema \\(world: `),
      ],
    ];
    for (const [what, craft, reason] of cases) {
      it(`refuses ${what}`, async () => {
        const file = path.join(dir, 'crafted.storyteller.json');
        fs.writeFileSync(file, JSON.stringify(craft()));
        const before = listTree(dir);
        await assert.rejects(importCampaignBundle(file, path.join(dir, 'restored')), (error: unknown) => {
          assert.ok(error instanceof BundleError, String(error));
          assert.equal(error.file, file, 'the bundle is named');
          assert.match(error.message, /play data refused, /);
          assert.match(error.message, reason());
          assert.match(error.message, /nothing was written$/);
          return true;
        });
        assert.deepEqual(listTree(dir), before, 'nothing written, no temporary folder left');
      });
    }
  });

  describe('a play.db damaged by hand is named, never walked forever', () => {
    let playPath: string;
    beforeEach(() => {
      playPath = loadCampaign(campaign).playPath;
    });

    /** Points the first turn of the first adventure at its last: following the parents goes round for ever. */
    const closeTheCircle = () => {
      const store = new PlayStore(playPath);
      store.db.prepare('UPDATE turns SET parent_id = ? WHERE id = ?').run(played.firstTurns[2], played.firstTurns[0]);
      store.close();
    };
    const cycle = () => new RegExp(`is damaged: adventure ${played.first.id}, turn ${played.firstTurns[0]}: its parents form a cycle \\(${played.firstTurns[0]} → ${played.firstTurns[2]} → ${played.firstTurns[1]} → ${played.firstTurns[0]}\\)`);

    it('play ends, naming the adventure and the turn for /tree and for an action, sending nothing and storing no turn', async function () {
      this.timeout(3 * HANG_GUARD_MS);
      requireBuiltCli();
      closeTheCircle();
      const tracker = await Tracker.start();
      try {
        const { code, stdout } = await cliEnding(['play', campaign, '--adventure', played.first.id, '--host', tracker.url, '--model', 'llama3.2'], '/tree\nI look around\n/quit\n', dir);
        assert.equal(code, 0, stdout);
        const damaged = stdout.split('\n').filter((line) => cycle().test(line));
        assert.equal(damaged.length, 2, `both /tree and the action name the damage:\n${stdout}`);
        assert.ok(damaged.every((line) => line.startsWith(`! ${playPath}`)), 'the file is named');
        assert.deepEqual(tracker.requests, [], 'a damaged branch is never sent to the model');
      } finally {
        await tracker.close();
      }
      const store = new PlayStore(playPath);
      assert.equal((store.db.prepare('SELECT count(*) AS n FROM turns').get() as { n: number }).n, 6, 'the action was not added to the damaged branch');
      store.close();
    });

    it('propose ends with the damage named', async function () {
      this.timeout(3 * HANG_GUARD_MS);
      requireBuiltCli();
      closeTheCircle();
      const { code, stderr } = await cliEnding(['propose', campaign, '--adventure', played.first.id], '', dir);
      assert.equal(code, EXIT.failure, stderr);
      assert.match(stderr, new RegExp(`^storyteller propose: ${playPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} ${cycle().source}`));
    });

    it('the adventure is named when its stat_schema or its head cannot be read', () => {
      const store = new PlayStore(playPath);
      try {
        store.db.prepare('UPDATE adventures SET stat_schema = ? WHERE id = ?').run('{oops', played.second.id);
        assert.throws(() => store.listAdventures(), new RegExp(`is damaged: adventure ${played.second.id}: stat_schema is not readable JSON`));
        store.db.prepare('UPDATE adventures SET stat_schema = ?, head_turn_id = ? WHERE id = ?').run('{}', played.firstTurns[1], played.second.id);
        assert.throws(() => store.adventure(played.second.id), new RegExp(`adventure ${played.second.id}: its head turn ${played.firstTurns[1]} belongs to another adventure \\(${played.first.id}\\)`));
      } finally {
        store.close();
      }
    });

    it('every surface that draws the tree is refused the turns of a damaged adventure, and another adventure still plays', () => {
      closeTheCircle();
      const store = new PlayStore(playPath);
      try {
        assert.throws(() => store.allTurns(played.first.id), cycle());
        assert.equal(store.allTurns(played.second.id).length, 3);
        assert.equal(store.lineage(played.second.headTurnId).length, 3);
      } finally {
        store.close();
      }
    });
  });

  it('a branch of 5,000 turns: /tree lists every turn and the Adventure Map lays it out', async () => {
    const deep = openSession(campaign);
    let adventure: Adventure;
    try {
      const play = deep.play;
      adventure = play.createAdventure({ campaignId: deep.campaign.id, title: 'The Long Road' });
      let parentId: string | null = null;
      play.db.transaction(() => {
        for (let step = 0; step < 5000; step++) parentId = play.createTurn({ adventureId: adventure.id, parentId, action: { kind: 'do', text: `walk on, step ${step + 1}` }, model: null, stateAfter: {} }).id;
      })();
      adventure = play.adventure(adventure.id);
      const map = adventureMap(play.allTurns(adventure.id), adventure.headTurnId, play.listMemories(adventure.id));
      assert.deepEqual([map.nodes.length, map.rows, map.columns], [5000, 5000, 1]);
      assert.ok(map.nodes.every((n) => n.current), 'the whole branch is the current story');
    } finally {
      await deep.close();
    }
    const tracker = await Tracker.start();
    try {
      const { code, stdout } = await runCaptured(['play', campaign, '--adventure', adventure.id, '--host', tracker.url, '--model', 'llama3.2'], campaign, '/tree\n/quit\n');
      assert.equal(code, 0);
      assert.doesNotMatch(stdout, /^! /m, 'no error');
      const listed = stdout.split('\n').filter((line) => /^[▶• ] [0-9a-f]{8} do: walk on, step \d+/.test(line));
      assert.equal(listed.length, 5000, 'every turn, one line each, without indenting a branch that never forks');
      assert.match(listed.at(-1)!, /^▶ [0-9a-f]{8} do: walk on, step 5000\b/);
    } finally {
      await tracker.close();
    }
  });
});
