import assert from 'node:assert/strict';
import {
  applyDelta,
  extractStateBlock,
  initialState,
  NarrationStream,
  parseStatSchema,
  parseStateBlock,
  renderStateGuide,
  renderStateSection,
} from '../../src/story/worldState';
import { KAELEN, STAT_SCHEMA } from './storySupport';

describe('story world state', () => {
  const schema = parseStatSchema(STAT_SCHEMA);

  it('labels the protagonist by name while paths stay player.*', () => {
    const state = initialState(schema);
    assert.equal(state['player.hp'], 100);
    const section = renderStateSection(schema, state, KAELEN);
    assert.match(section, /^Kaelen \(player\): hp 100\/100, mana 30\/50\.$/m);
    assert.match(section, /^Sister Mara \(npc\.mara\): trust 40\/100\.$/m);
    assert.match(section, /Milestones reached: none yet\./);
    const guide = renderStateGuide(schema, KAELEN);
    assert.match(guide, /Protagonist Kaelen — stats are addressed as player\.<stat>: player\.hp \(0–100\)/);
    assert.doesNotMatch(guide, /kaelen\./);
    assert.match(renderStateSection(schema, state, { name: '', pronouns: '', description: '' }), /^You: hp 100\/100/m);
  });

  it('finds the last fenced block and keeps the narration without it', () => {
    const reply = 'You step into the crypt.\n\n```json\n{"player.hp": -5}\n```\n';
    const { narration, block } = extractStateBlock(reply);
    assert.equal(narration, 'You step into the crypt.');
    assert.equal(block, '{"player.hp": -5}');
    assert.equal(extractStateBlock('No changes here.').block, null);
  });

  it('streams narration with the state block held back, even when a fence is split across pieces', () => {
    const stream = new NarrationStream();
    const pieces = ['The door ', 'opens. `', '``js', 'on\n{"player.hp": -1}\n`', '``\nThen', ' silence.'];
    assert.deepEqual(pieces.map((p) => stream.push(p)), ['The door ', 'opens. ', '', '', '\nThen', ' silence.']);
  });

  it('parses what weak models emit: trailing commas, leading +, nested objects', () => {
    const { delta, error } = parseStateBlock('{"player.hp": +5, "npc": {"mara": {"trust": +10,},}, "flags.alarm_raised": true,}');
    assert.equal(error, null);
    assert.deepEqual(delta, { 'player.hp': 5, 'npc.mara.trust': 10, 'flags.alarm_raised': true });
    assert.match(parseStateBlock('{player hp minus five}').error!, /not valid JSON.*nothing was applied/);
    assert.match(parseStateBlock('[1, 2]').error!, /must be a JSON object/);
  });

  it('applies valid changes, clamps to the range, and explains every refusal', () => {
    const state = initialState(schema);
    const result = applyDelta(schema, state, {
      'player.hp': -130,
      'player.mana': '=45',
      'npc.mara.trust': '+5',
      'world.location': 'the Old Abbey',
      'persona.name': 'Bob',
      'milestones.crypt_opened': false,
      'flags.alarm_raised': 'maybe',
    });
    assert.equal(result.state['player.hp'], 0);
    assert.equal(result.state['player.mana'], 45);
    assert.equal(result.state['npc.mara.trust'], 45);
    assert.equal(result.state['world.location'], 'the Old Abbey');
    assert.deepEqual(result.refusals, [
      'persona.name is not a tracked value',
      'milestones.crypt_opened: a milestone is sticky, so only true is accepted',
      'flags.alarm_raised is a flag: use true or false',
    ]);
    assert.equal(state['player.hp'], 100, 'the previous state is not mutated');
    const reached = applyDelta(schema, result.state, { 'milestones.crypt_opened': true });
    assert.equal(reached.state['milestones.crypt_opened'], true);
    assert.match(renderStateSection(schema, reached.state, KAELEN), /Milestones reached: crypt_opened\./);
  });

  it('rejects a malformed stat schema with the path of the problem', () => {
    assert.throws(() => parseStatSchema({ player: { hp: { initial: 'lots', max: 'ten' } } }), /stat schema: player\.hp\.max/);
  });
});
