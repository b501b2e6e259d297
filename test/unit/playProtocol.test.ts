import assert from 'node:assert/strict';
import { HostMessage, WebviewMessage, WebviewState } from '../../webview-ui/protocol';

const setup = { persona: { name: 'Kaelen', pronouns: 'he/him', description: 'A ranger.' }, plotEssentials: 'The bells stay silent.', authorsNote: 'Hushed.' };

describe('the play panel protocol', () => {
  it('accepts a setup within the play store limits and refuses one beyond them, naming the field', () => {
    assert.ok(WebviewMessage.safeParse({ type: 'saveSetup', setup }).success);
    const tooLong = WebviewMessage.safeParse({ type: 'saveSetup', setup: { ...setup, persona: { ...setup.persona, name: 'K'.repeat(81) } } });
    assert.ok(!tooLong.success);
    assert.deepEqual(tooLong.error.issues[0]!.path, ['setup', 'persona', 'name']);
    assert.ok(!WebviewMessage.safeParse({ type: 'saveSetup', setup: { persona: setup.persona } }).success, 'a partial setup would blank the rest');
  });

  it('refuses an edited action with no text, which would replay nothing', () => {
    assert.ok(!WebviewMessage.safeParse({ type: 'editAction', turnId: 't1', text: '   ' }).success);
    assert.ok(WebviewMessage.safeParse({ type: 'editAction', turnId: 't1', text: 'walk slowly' }).success);
  });

  it('keeps an unsaved draft in the webview state and reads back a state saved before drafts existed', () => {
    const saved = WebviewState.parse({ campaignRoot: '/c', adventureId: 'a', setupDraft: setup });
    assert.deepEqual(saved.setupDraft, setup);
    assert.equal(WebviewState.parse({ campaignRoot: '/c', adventureId: 'a' }).setupDraft, undefined);
  });

  it('drops a state message without the world state the panel renders', () => {
    const state = {
      type: 'state',
      panelState: { campaignRoot: '/c', adventureId: 'a' },
      campaignTitle: 'Westhaven',
      adventure: { id: 'a', title: 'Bells' },
      turns: [],
      setup,
      generating: false,
      model: 'llama3.2',
    };
    assert.ok(!HostMessage.safeParse(state).success);
    assert.ok(HostMessage.safeParse({ ...state, worldState: { tracked: true, lines: ['Kaelen (player): hp 95/100.'], changes: ['player.hp → 95'], refusals: [] } }).success);
  });
});
