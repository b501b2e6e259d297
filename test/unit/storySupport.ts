import type { Turn } from '../../src/story/types';

/** The protagonist and stat schema the story tests play with, over the example campaign (Westhaven). */

export const KAELEN = { name: 'Kaelen', pronouns: 'he/him', description: 'A half-elf ranger, exiled from the northern holds.' };

export const STAT_SCHEMA = {
  player: { hp: { initial: 100, min: 0, max: 100 }, mana: { initial: 30, min: 0, max: 50 } },
  world: { location: { initial: 'the north road' } },
  npcs: { mara: { name: 'Sister Mara', desc: 'Keeper of the infirmary.', stats: { trust: { initial: 40, min: 0, max: 100 } } } },
  flags: { alarm_raised: { desc: 'the watch is looking for Kaelen' } },
  milestones: { crypt_opened: { desc: 'the bronze crypt door has been opened' } },
};

/** A finished turn as the play store holds one: a first `do` with its reply, whatever `fields` does not say. */
export function storedTurn(fields: Partial<Turn> & Pick<Turn, 'id'>): Turn {
  return {
    adventureId: 'a',
    parentId: null,
    depth: 0,
    action: { kind: 'do', text: 'greet Aldric' },
    narration: '',
    status: 'complete',
    error: null,
    model: null,
    stateDelta: null,
    stateAfter: {},
    refusals: [],
    promptEvalCount: null,
    evalCount: null,
    createdAt: '',
    updatedAt: '',
    ...fields,
  };
}
