import assert from 'node:assert/strict';
import type { WorldInfoFields } from '../../src/knowledge/campaign';
import { activateWorldInfo, NO_TIMED_EFFECTS, WORLD_INFO_DEFAULTS, worldInfoBudget, type ActivationEntry, type ActivationInput, type TimedState, type WorldInfoSettings } from '../../src/knowledge/retrieval/worldInfo';

/** SillyTavern's defaults for an entry, with these fields changed. */
function fields(over: Partial<WorldInfoFields> = {}): WorldInfoFields {
  return {
    keys: [],
    secondaryKeys: [],
    selectiveLogic: 'and_any',
    caseSensitive: null,
    matchWholeWords: null,
    useGroupScoring: null,
    scanDepth: null,
    constant: false,
    order: 100,
    position: 0,
    depth: 4,
    role: 0,
    probability: 100,
    useProbability: true,
    groups: [],
    groupOverride: false,
    groupWeight: 100,
    sticky: 0,
    cooldown: 0,
    delay: 0,
    excludeRecursion: false,
    preventRecursion: false,
    delayUntilRecursion: 0,
    ignoreBudget: false,
    ...over,
  };
}

/** What each entry's content costs, as a test states it (its line as inserted: the content and a newline). */
const costs = new Map<string, number>();
const countTokens = (text: string): number => costs.get(text) ?? text.split(/\s+/).filter(Boolean).length;

function entry(id: string, over: Partial<WorldInfoFields> = {}, content = `About ${id}.`, tokens = 10): ActivationEntry {
  costs.set(`${content}\n`, tokens);
  return { id, title: id, hash: `h-${id}`, content, fields: fields(over) };
}

function run(entries: ActivationEntry[], messages: string[], more: Partial<Omit<ActivationInput, 'settings'>> & { settings?: Partial<WorldInfoSettings> } = {}) {
  const { settings, ...rest } = more;
  return activateWorldInfo({ entries, messages, state: NO_TIMED_EFFECTS, seed: 1, budget: 10_000, countTokens, ...rest, settings: { ...WORLD_INFO_DEFAULTS, ...settings } });
}

const fired = (r: ReturnType<typeof run>) => r.activated.map((v) => v.id);
const reason = (r: ReturnType<typeof run>, id: string) => r.verdicts.find((v) => v.id === id)!.reason;

/**
 * Plays one chat message by message: `messages[i]` is the chat when it holds i + 1 messages, each scan
 * reading the timed effects the one before left. Returns which entries fired at each length.
 */
function timeline(entries: ActivationEntry[], say: (length: number) => string, lengths: number): { fired: string[]; reasons: Record<string, string> }[] {
  let state: TimedState = NO_TIMED_EFFECTS;
  const chat: string[] = [];
  const out: { fired: string[]; reasons: Record<string, string> }[] = [];
  for (let n = 1; n <= lengths; n++) {
    chat.push(say(n));
    const r = run(entries, chat, { state });
    state = r.state;
    out.push({ fired: fired(r), reasons: Object.fromEntries(r.verdicts.map((v) => [v.id, v.reason])) });
  }
  return out;
}

describe('World Info activation (SillyTavern semantics)', () => {
  describe('the scan buffer and keys', () => {
    it('scans the last two messages by default, and an entry may scan deeper or shallower', () => {
      const entries = [entry('inn', { keys: ['inn'] }), entry('deep', { keys: ['inn'], scanDepth: 3 }), entry('last', { keys: ['inn'], scanDepth: 1 })];
      const r = run(entries, ['We reach the inn.', 'The road is quiet.', 'I walk on.']);
      assert.deepEqual(fired(r), ['deep']);
      assert.match(reason(r, 'deep'), /key 'inn' in message 1/);
      assert.match(reason(r, 'inn'), /no key in the last 2 messages/);
      assert.match(reason(run(entries, ['The road is quiet.', 'We reach the inn.', 'I walk on.']), 'last'), /no key in the last message/);
      // Equal orders: SillyTavern puts each activated entry at the front of its position's list, so the
      // prompt reads them in reverse book order.
      assert.deepEqual(fired(run(entries, ['a', 'b', 'the INN'])), ['last', 'deep', 'inn']);
    });

    it('a scan depth of 0 reads no message at all', () => {
      assert.deepEqual(fired(run([entry('x', { keys: ['inn'] })], ['the inn'], { settings: { scanDepth: 0 } })), []);
    });

    it('matches inside words and in any case unless the entry (or the campaign) says otherwise', () => {
      const loose = entry('loose', { keys: ['cat'] });
      const whole = entry('whole', { keys: ['cat'], matchWholeWords: true });
      const cased = entry('cased', { keys: ['Rose'], caseSensitive: true });
      assert.deepEqual(fired(run([loose, whole, cased], ['concatenate the rose'])), ['loose']);
      assert.deepEqual(fired(run([loose, whole, cased], ['A cat and Rose.'])), ['cased', 'whole', 'loose']);
      assert.deepEqual(fired(run([loose], ['concatenate'], { settings: { matchWholeWords: true } })), []);
      // A multi-word key is a plain substring even with whole words, as SillyTavern's test is.
      assert.deepEqual(fired(run([entry('m', { keys: ['old mill'], matchWholeWords: true })], ['the bold mills'])), ['m']);
    });

    it('runs regex keys with their flags, and refuses a pattern a linear-time engine cannot run, saying why', () => {
      const re = entry('re', { keys: ['/defprot \\d+ (?:red|orange)/i'] });
      assert.deepEqual(fired(run([re], ['Computer, DefProt 7 Red!'])), ['re']);
      assert.deepEqual(fired(run([re], ['DefProt Red'])), []);
      // A nested quantifier runs, in linear time, and answers as JavaScript would.
      const nested = entry('nested', { keys: ['/(a+)+$/'] });
      assert.deepEqual(fired(run([nested], ['aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab'])), []);
      assert.deepEqual(fired(run([nested], ['baaaa'])), ['nested']);
      const echo = entry('echo', { keys: ['/(\\w+) \\1/', 'bell'] });
      const r = run([echo], ['knock knock']);
      assert.deepEqual(fired(r), []);
      assert.equal(reason(r, 'echo'), 'no key in the last 2 messages; regex key not run: /(\\w+) \\1/ uses a backreference \\1, which a linear-time engine cannot run');
      assert.match(reason(run([echo], ['a bell rang']), 'echo'), /^key 'bell' in message 1; regex key not run: \/\(\\w\+\) \\1\/ uses a backreference/);
    });

    it('applies secondary keys under each selective logic, as the documentation tells them', () => {
      const logic = (selectiveLogic: WorldInfoFields['selectiveLogic']) => entry(selectiveLogic, { keys: ['pet'], secondaryKeys: ['dog', 'puppy', 'canine'], selectiveLogic });
      const all = [logic('and_any'), logic('and_all'), logic('not_any'), logic('not_all')];
      // "dog and puppy present, canine absent": NOT ALL activates.
      assert.deepEqual(fired(run(all, ['my pet: a dog, a puppy'])), ['not_all', 'and_any']);
      assert.deepEqual(fired(run(all, ['my pet: a dog, a puppy, a canine'])), ['and_all', 'and_any']);
      assert.deepEqual(fired(run(all, ['my pet cat'])), ['not_all', 'not_any']);
      assert.match(reason(run(all, ['my pet cat']), 'and_any'), /secondary keys fail AND ANY \(0 of 3 found\)/);
    });

    it('fires constant entries without keys, and an entry with neither never', () => {
      const r = run([entry('c', { constant: true }), entry('none')], ['hello']);
      assert.deepEqual(fired(r), ['c']);
      assert.equal(reason(r, 'c'), 'constant (always active)');
      assert.match(reason(r, 'none'), /no keys and is not constant/);
    });
  });

  describe('probability', () => {
    it('rolls from the seed: the same seed the same roll, another seed may differ, and it says what it rolled', () => {
      const e = entry('p', { constant: true, probability: 40 });
      const seeds = Array.from({ length: 200 }, (_, seed) => run([e], ['x'], { seed }));
      const hits = seeds.filter((r) => fired(r).length === 1).length;
      assert.ok(hits > 50 && hits < 110, `about 40% of 200 seeds fire, got ${hits}`);
      assert.deepEqual(run([e], ['x'], { seed: 7 }).verdicts, run([e], ['x'], { seed: 7 }).verdicts);
      const missed = seeds.find((r) => fired(r).length === 0)!;
      const rolled = Number(/probability 40%: rolled (\d+)/.exec(reason(missed, 'p'))![1]);
      assert.ok(rolled > 40 && rolled <= 100);
    });

    it('0% never fires and 100% or probability off always does', () => {
      for (let seed = 0; seed < 50; seed++) {
        assert.deepEqual(fired(run([entry('zero', { constant: true, probability: 0 }), entry('all', { constant: true }), entry('off', { constant: true, probability: 5, useProbability: false })], ['x'], { seed })), ['off', 'all']);
      }
    });
  });

  describe('timed effects', () => {
    const say = (n: number) => (n === 3 ? 'the dragon stirs' : 'nothing');

    it('sticky keeps an entry after its key leaves the scan, then ends into its cooldown', () => {
      // Keyed at message 3; sticky 4 holds while the chat has fewer than 3 + 4 messages; cooldown 2 follows.
      const t = timeline([entry('d', { keys: ['dragon'], sticky: 4, cooldown: 2 })], (n) => (n === 3 || n === 8 || n === 9 ? 'the dragon stirs' : 'nothing'), 11);
      assert.deepEqual(
        t.map((m) => m.fired.length),
        // 1  2  3  4  5  6  7  8  9  10 11
        [0, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1],
      );
      assert.match(t[3]!.reasons.d!, /sticky: 2 more messages after this one/);
      assert.match(t[5]!.reasons.d!, /sticky: 0 more messages/);
      // Message 7: the sticky ends and the cooldown begins there, so the key at 8 is held back; at 9 it fires.
      assert.match(t[6]!.reasons.d!, /cooling down until message 9 \(its sticky just ended\)/);
      assert.match(t[7]!.reasons.d!, /cooling down until message 9$/);
      assert.match(t[8]!.reasons.d!, /key 'dragon' in message 9/);
    });

    it('cooldown alone: held back from the message after it fired until start + cooldown', () => {
      const t = timeline([entry('c', { keys: ['dragon'], cooldown: 2 })], () => 'the dragon', 6);
      assert.deepEqual(t.map((m) => m.fired.length), [1, 0, 1, 0, 1, 0]);
      assert.match(t[1]!.reasons.c!, /cooling down until message 3/);
    });

    it('delay waits until the chat holds that many messages', () => {
      const t = timeline([entry('late', { keys: ['dragon'], delay: 3 })], () => 'the dragon', 4);
      assert.deepEqual(t.map((m) => m.fired.length), [0, 0, 1, 1]);
      assert.match(t[1]!.reasons.late!, /waits for message 3 \(delay 3; the chat holds 2\)/);
    });

    it('a retry at the same length drops effects that began there; an edited entry loses its effect', () => {
      const e = entry('s', { keys: ['dragon'], sticky: 5 });
      const first = run([e], [say(1), say(2), say(3)]);
      assert.deepEqual(first.state.sticky.s, { hash: 'h-s', start: 3, end: 8, protected: false });
      // Scanned again at length 3 with the state after it (a rewind SillyTavern recognises): not sticky.
      assert.deepEqual(fired(run([e], ['a', 'b', 'c'], { state: first.state })), []);
      assert.deepEqual(fired(run([e], ['a', 'b', 'c', 'd'], { state: first.state })), ['s']);
      assert.deepEqual(fired(run([{ ...e, hash: 'edited' }], ['a', 'b', 'c', 'd'], { state: first.state })), []);
    });

    it('sticky entries skip the probability roll while they hold', () => {
      const e = entry('p', { keys: ['dragon'], sticky: 10, probability: 50 });
      const seed = Array.from({ length: 50 }, (_, s) => s).find((s) => fired(run([e], ['dragon'], { seed: s })).length === 1)!;
      const state = run([e], ['dragon'], { seed }).state;
      for (let s = 0; s < 30; s++) assert.deepEqual(fired(run([e], ['dragon', 'x'], { seed: s, state })), ['p']);
    });
  });

  describe('inclusion groups', () => {
    it('lets one member in: prioritized wins on order, else a weighted roll, and says who won', () => {
      const a = entry('Old Brisk', { keys: ['innkeeper'], groups: ['innkeeper'], groupOverride: true, order: 50 });
      const b = entry('Young Tam', { keys: ['innkeeper'], groups: ['innkeeper'], order: 200 });
      const c = entry('Widow Ash', { keys: ['innkeeper'], groups: ['innkeeper'], groupOverride: true, order: 40 });
      const r = run([a, b, c], ['the innkeeper']);
      assert.deepEqual(fired(r), ['Old Brisk']);
      assert.match(reason(r, 'Old Brisk'), /group innkeeper: won on order/);
      assert.match(reason(r, 'Young Tam'), /group innkeeper: Old Brisk won on order/);

      const heavy = entry('heavy', { keys: ['inn'], groups: ['g'], groupWeight: 900 });
      const light = entry('light', { keys: ['inn'], groups: ['g'], groupWeight: 100 });
      const wins = Array.from({ length: 200 }, (_, seed) => fired(run([heavy, light], ['inn'], { seed }))[0]);
      assert.ok(wins.every((w) => w === 'heavy' || w === 'light'));
      const heavyWins = wins.filter((w) => w === 'heavy').length;
      assert.ok(heavyWins > 150 && heavyWins < 200, `weight 900 of 1000 wins about 90%, got ${heavyWins}/200`);
    });

    it('group scoring keeps the members matching most keys (the documentation\'s songs example)', () => {
      const one = entry('Black Cat', { keys: ['song', 'sing', 'Black Cat'], groups: ['songs'], useGroupScoring: true });
      const two = entry('Ghosts', { keys: ['song', 'sing', 'Ghosts'], groups: ['songs'], useGroupScoring: true });
      for (let seed = 0; seed < 20; seed++) assert.deepEqual(fired(run([one, two], ['sing me a song about Ghosts'], { seed })), ['Ghosts']);
      const either = new Set(Array.from({ length: 40 }, (_, seed) => fired(run([one, two], ['sing me a song'], { seed }))[0]));
      assert.deepEqual([...either].sort(), ['Black Cat', 'Ghosts']);
    });

    it('a sticky member holds its group', () => {
      const a = entry('a', { keys: ['inn'], groups: ['g'], sticky: 5, groupOverride: true, order: 1 });
      const b = entry('b', { keys: ['tavern'], groups: ['g'], groupOverride: true, order: 900 });
      const state = run([a, b], ['inn']).state;
      const r = run([a, b], ['inn', 'the tavern'], { state });
      assert.deepEqual(fired(r), ['a']);
      assert.match(reason(r, 'b'), /a holds the group \(sticky\)/);
    });
  });

  describe('budget and order', () => {
    it('inserts lower order first so the highest lands nearest the end, and stops at the budget', () => {
      const entries = [entry('low', { constant: true, order: 10 }, '', 40), entry('high', { constant: true, order: 300 }, '', 40), entry('mid', { constant: true, order: 100 }, '', 40), entry('free', { constant: true, order: 1, ignoreBudget: true }, '', 40)];
      const r = run(entries, ['x'], { budget: 100 });
      // Admitted highest order first (high, mid), then low overflows; free ignores the budget.
      assert.deepEqual(fired(r), ['free', 'mid', 'high']);
      assert.match(reason(r, 'low'), /over the World Info budget \(120\/100 tokens/);
      assert.equal(worldInfoBudget(WORLD_INFO_DEFAULTS, 8192), 2048);
      assert.equal(worldInfoBudget({ ...WORLD_INFO_DEFAULTS, budgetCap: 500 }, 8192), 500);
    });
  });

  it("orders what it inserts as SillyTavern's prompt holds it: by position, deeper first at a depth, then order", () => {
    const entries = [
      entry('after', { constant: true, position: 1, order: 5 }),
      entry('an', { constant: true, position: 3, order: 1 }),
      entry('shallow', { constant: true, position: 4, depth: 2 }),
      entry('before-high', { constant: true, position: 0, order: 300 }),
      entry('deep', { constant: true, position: 4, depth: 6 }),
      entry('before-low', { constant: true, position: 0, order: 10 }),
    ];
    assert.deepEqual(fired(run(entries, ['x'])), ['before-low', 'before-high', 'after', 'deep', 'shallow', 'an']);
  });

  describe('recursion', () => {
    const inn = entry('inn', { keys: ['inn'] }, 'The inn is run by Brisk.');
    const brisk = entry('brisk', { keys: ['Brisk'] }, 'Brisk keeps a dagger.');
    const dagger = entry('dagger', { keys: ['dagger'] }, 'The dagger is cursed.');

    it('is off by default, as in SillyTavern', () => {
      assert.deepEqual(fired(run([inn, brisk, dagger], ['the inn'])), ['inn']);
    });

    it('follows activated entries\' text, step by step, up to the maximum number of steps', () => {
      const r = run([inn, brisk, dagger], ['the inn'], { settings: { recursive: true } });
      assert.deepEqual(new Set(fired(r)), new Set(['inn', 'brisk', 'dagger']));
      assert.match(reason(r, 'brisk'), /key 'Brisk' in the text of an entry already activated \(recursion step 1\)/);
      assert.match(reason(r, 'dagger'), /recursion step 2/);
      assert.deepEqual(new Set(fired(run([inn, brisk, dagger], ['the inn'], { settings: { recursive: true, maxRecursionSteps: 2 } }))), new Set(['inn', 'brisk']));
    });

    it('honours prevent-recursion, exclude-recursion and delay-until-recursion', () => {
      const quiet = entry('inn', { keys: ['inn'], preventRecursion: true }, 'The inn is run by Brisk.');
      assert.deepEqual(fired(run([quiet, brisk], ['the inn'], { settings: { recursive: true } })), ['inn']);
      const excluded = entry('brisk', { keys: ['Brisk'], excludeRecursion: true }, 'Brisk keeps a dagger.');
      assert.deepEqual(fired(run([inn, excluded], ['the inn'], { settings: { recursive: true } })), ['inn']);
      const delayed = entry('secret', { keys: ['Brisk'], delayUntilRecursion: 1 });
      assert.deepEqual(fired(run([delayed], ['Brisk'], { settings: { recursive: true } })), []);
      assert.deepEqual(new Set(fired(run([inn, delayed], ['the inn'], { settings: { recursive: true } }))), new Set(['inn', 'secret']));
    });
  });

  it('min activations widens the scan a message at a time until enough fire', () => {
    const old = entry('old', { keys: ['mill'] });
    assert.deepEqual(fired(run([old], ['the mill', 'a', 'b', 'c'])), []);
    assert.deepEqual(fired(run([old], ['the mill', 'a', 'b', 'c'], { settings: { minActivations: 1 } })), ['old']);
    // SillyTavern widens while the depth it just scanned is within the widest allowed: with a widest of 3 it
    // still scans 4 messages and finds the mill; with 2 it stops after scanning 3.
    assert.deepEqual(fired(run([old], ['the mill', 'a', 'b', 'c'], { settings: { minActivations: 1, minActivationsDepthMax: 3 } })), ['old']);
    assert.deepEqual(fired(run([old], ['the mill', 'a', 'b', 'c'], { settings: { minActivations: 1, minActivationsDepthMax: 2 } })), []);
  });

  describe('edges, as SillyTavern 1.12.6 runs them (checkWorldInfo in public/scripts/world-info.js)', () => {
    it('counts only the text earlier passes gave recursion against a later pass: preventRecursion entries no longer do', () => {
      // Pass 1 fires 'loud' (50 tokens, preventRecursion) and 'inn' (10, whose text names Brisk). SillyTavern
      // prices pass 2 as the tokens of the recursion text so far (inn's 10) plus its own new entries: 10 + 45
      // < 100, so 'brisk' fires; counting loud too (105) would cut it.
      const loud = entry('loud', { constant: true, preventRecursion: true }, 'A loud and long entry.', 50);
      const inn = entry('inn', { keys: ['inn'] }, 'The inn is run by Brisk.', 10);
      const brisk = entry('brisk', { keys: ['Brisk'] }, 'Brisk keeps a dagger.', 45);
      const r = run([loud, inn, brisk], ['the inn'], { budget: 100, settings: { recursive: true } });
      assert.deepEqual(new Set(fired(r)), new Set(['loud', 'inn', 'brisk']));
      assert.equal(r.used, 105, 'what the entries cost together is still said');
    });

    it("keeps an entry's own scan depth while min activations widens the campaign's", () => {
      // SillyTavern's buffer takes entry.scanDepth ?? (scan depth + skew): the skew never reaches an entry's own.
      const own = entry('own', { keys: ['mill'], scanDepth: 1 });
      const wide = entry('wide', { keys: ['mill'] });
      const r = run([own, wide], ['the mill', 'a', 'b'], { settings: { minActivations: 1 } });
      assert.deepEqual(fired(r), ['wide']);
      assert.match(reason(r, 'own'), /no key in the last message/);
    });

    it('runs delay-until-recursion levels after the normal scan with recursion off, reading the first pass\'s text', () => {
      // SillyTavern presets the first level (1 here) for recursion passes; when no further scan is planned and
      // levels are left, it starts a recursion-state pass at the next one, whatever world_info_recursive says,
      // adding the text of what fired to the buffer first. With level 1 alone and recursion off, none comes.
      const delayed = entry('secret', { keys: ['Brisk'], delayUntilRecursion: 1 });
      assert.deepEqual(fired(run([delayed], ['Brisk'])), []);
      const later = entry('later', { keys: ['dagger'], delayUntilRecursion: 2 });
      const both = run([delayed, later], ['Brisk and a dagger']);
      assert.deepEqual(both.verdicts.filter((v) => v.fired).map((v) => [v.id, v.step]), [['secret', 1], ['later', 1]]);
      const inn = entry('inn', { keys: ['inn'] }, 'The inn is run by Brisk.');
      const fromText = run([inn, delayed, later], ['the inn, a dagger']);
      assert.deepEqual(new Set(fired(fromText)), new Set(['inn', 'secret', 'later']));
      assert.match(reason(fromText, 'secret'), /key 'Brisk' in the text of an entry already activated/);
    });
  });

  it('plays an edited book by its new keys and order, and a book asked again after another by its own', () => {
    const book = [entry('inn', { keys: ['inn'], order: 10 }), entry('mill', { keys: ['mill'], order: 20 }), entry('Brisk', { keys: ['Brisk'], caseSensitive: true, order: 30 })];
    const chat = ['the inn by the mill; brisk weather'];
    assert.deepEqual(fired(run(book, chat)), ['inn', 'mill']);
    // The same ids, a new version of each entry: new keys and orders, a case rule that no longer holds.
    const edited = [entry('inn', { keys: ['tavern'], order: 10 }), entry('mill', { keys: ['mill'], order: 5 }), entry('Brisk', { keys: ['Brisk'], order: 30 })];
    assert.deepEqual(fired(run(edited, chat)), ['mill', 'Brisk']);
    assert.deepEqual(run(edited, chat).verdicts.filter((v) => v.fired).map((v) => v.order), [5, 30]);
    assert.match(reason(run(edited, chat), 'inn'), /^no key in the last 2 messages$/);
    // The campaign's case rule changing is a new rule for entries that follow it.
    assert.deepEqual(fired(run(edited, chat, { settings: { caseSensitive: true } })), ['mill']);
    // Back to the first book: its own keys, its own order (the highest order is admitted first, inserted last).
    const again = run(book, chat, { budget: 15 });
    assert.deepEqual(fired(again), ['mill']);
    assert.match(reason(again, 'inn'), /over the World Info budget|already full/);
  });
});
