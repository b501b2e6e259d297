import fs from 'node:fs';
import path from 'node:path';
import { openSession, type CampaignSession } from '../../src/session';
import type { Adventure } from '../../src/story';
import { EXAMPLE_CAMPAIGN } from './corpora';

/**
 * The example campaign after a played scene: Westhaven with a bridge, a locked north gate and tracked
 * values, and an adventure whose turns made Mara 52, brought the bridge down, closed the gate and named a
 * smuggler canon has no page for. For canon proposals (unit, CLI and workbench suites).
 */

export const PLAYED_STATS = `stats:
  world:
    bridge: { initial: standing }
    gate: { initial: open }
  npcs:
    mara: { name: Sister Mara, stats: { age: { initial: 34 }, trust: { initial: 40, min: 0, max: 100 } } }
    tomas: { name: Tomas the Smuggler, desc: A river smuggler who owes half of Westhaven., stats: { debt: { initial: 0 } } }
`;

export const PLAYED_FILES: Record<string, string> = {
  'places/bridge.md': '---\ntitle: The Old Bridge\nentities: [Old Bridge, bridge]\n---\n# The Old Bridge\n\n- **Status:** standing\n- **Span:** forty yards\n\nIt crosses the river below the Abbey.\n',
  'places/north-gate.md': '---\ntitle: The North Gate\nentities: [North Gate, gate]\nlocked: true\n---\n# The North Gate\n\n- **Status:** open\n\nThe gate of the north road, never shut in living memory.\n',
};

/** Copies the example campaign (or `from`, a copy of it) into `into` with the played scene's files and stats (not yet indexed). */
export function writePlayedCampaign(into: string, from = EXAMPLE_CAMPAIGN): void {
  fs.cpSync(from, into, { recursive: true });
  fs.rmSync(path.join(into, '.storyteller'), { recursive: true, force: true });
  fs.appendFileSync(path.join(into, 'campaign.yaml'), PLAYED_STATS);
  for (const [rel, text] of Object.entries(PLAYED_FILES)) fs.writeFileSync(path.join(into, ...rel.split('/')), text);
}

/** The played campaign in `into`, indexed and with the scene played, its session closed: as the CLI finds it. */
export async function writePlayedAndIndexed(into: string): Promise<void> {
  writePlayedCampaign(into);
  const session = openSession(into);
  try {
    await session.reindex();
    playScene(session);
  } finally {
    await session.close();
  }
}

/** The scene's turns, each with the state its reply left. */
export const PLAYED_TURNS: { action: string; narration: string; state: Record<string, string | number> }[] = [
  { action: 'I walk to the Old Bridge at dusk', narration: 'The bridge sways above the mist.', state: {} },
  {
    action: 'I cut the ropes of the bridge',
    narration: 'The Old Bridge falls into the river. Years pass; Sister Mara is fifty-two when you meet again.',
    state: { 'world.bridge': 'destroyed', 'npc.mara.age': 52 },
  },
  {
    action: 'I bargain with Tomas the Smuggler at the north gate',
    narration: 'Tomas takes your coin; the watch shuts the North Gate behind you. Mara nods, warmer now.',
    state: { 'world.bridge': 'destroyed', 'npc.mara.age': 52, 'npc.mara.trust': 55, 'npc.tomas.debt': 30, 'world.gate': 'closed' },
  },
];

/** Plays the scene into the session's play store (no model: each turn is stored as a finished reply). */
export function playScene(session: CampaignSession, title = 'The Night Watch'): Adventure {
  const play = session.play;
  const adventure = play.createAdventure({ campaignId: session.campaign.id, title, statSchema: session.campaign.stats });
  let parentId: string | null = null;
  for (const turn of PLAYED_TURNS) {
    const created = play.createTurn({ adventureId: adventure.id, parentId, action: { kind: 'do', text: turn.action }, model: null, stateAfter: {} });
    const stateAfter = { 'world.bridge': 'standing', 'world.gate': 'open', 'npc.mara.age': 34, 'npc.mara.trust': 40, 'npc.tomas.debt': 0, ...turn.state };
    play.finishTurn(created.id, {
      status: 'complete',
      narration: turn.narration,
      error: null,
      stateDelta: turn.state,
      stateAfter,
      refusals: [],
      promptEvalCount: null,
      evalCount: null,
    });
    parentId = created.id;
  }
  return play.adventure(adventure.id);
}
