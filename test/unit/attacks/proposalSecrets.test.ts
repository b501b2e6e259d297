import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSession } from '../../../src/session';
import { FakeOllama } from '../../support/fakeOllama';
import { runCliCaptured } from '../../support/interchange';
import { PLAYED_STATS, playScene, writePlayedCampaign } from '../../support/playedCampaign';

/**
 * A proposal never puts a narrator-only secret where the player reads it. The narrator reads Brother Aldric's
 * hidden page and quotes it in a reply; a scripted model on loopback copies the secret into a new page and into
 * Mara's visible page, and a world-state value the reply set carries it to the rules. Each is refused naming
 * the hidden file; the model that drafts visible canon is never shown the hidden page; edits to the hidden page
 * itself, and proposals repeating what the player may read anyway, still apply.
 */

type ProposeJson = { proposals: { file: string; newText: string }[]; refused: { file: string; origin: string; refusal: string }[] };

const SECRET = /draws the broken circle/i;
/** In Aldric's hidden page only, never in the story as played. */
const NOT_IN_THE_STORY = 'bring the dead back';
const LEAK = 'repeats narrator-only text from characters/brother-aldric.md: the writer must reveal a secret, a proposal cannot';
const APART = 'this conversation was shown narrator-only canon, so it may change only narrator-only files';
const call = (args: Record<string, unknown>) => ({ name: 'propose_edit', arguments: args });
const done = { chunks: ['Done.'] };

describe('attacks: a proposal never repeats a narrator-only secret where the player reads', () => {
  let dir: string;
  let root: string;
  let fake: FakeOllama;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-proposal-secrets-'));
    root = path.join(dir, 'campaign');
    writePlayedCampaign(root);
    const yaml = fs.readFileSync(path.join(root, 'campaign.yaml'), 'utf8');
    fs.writeFileSync(path.join(root, 'campaign.yaml'), yaml.replace(PLAYED_STATS, PLAYED_STATS.replace('trust: { initial: 40, min: 0, max: 100 }', 'trust: { initial: 40, min: 0, max: 100 }, mood: { initial: calm }')));
    // A narrator-only page whose first sentence the player reads in the setting bible as well.
    fs.writeFileSync(
      path.join(root, 'characters', 'ilse.md'),
      '---\ntitle: Captain Ilse Varra\nentities: [Ilse, Captain Ilse Varra]\nvisibility: hidden\n---\n# Captain Ilse Varra\n\nThe watch is twelve strong and answers to Captain Ilse Varra. She takes the Abbey\'s silver.\n',
    );
    const session = openSession(root);
    try {
      await session.reindex();
      const adventure = playScene(session);
      const play = session.play;
      const last = play.lineage(adventure.headTurnId).at(-1)!;
      // The narrator reads hidden canon: its reply quotes Aldric's secret, and sets Mara's mood to it.
      const turn = play.createTurn({ adventureId: adventure.id, parentId: last.id, action: { kind: 'do', text: 'I follow Brother Aldric and Captain Ilse into the cloister' }, model: null, stateAfter: {} });
      const narration = 'Brother Aldric turns: in secret, he is the one who draws the broken circle. Captain Ilse looks away.';
      const stateAfter = { ...last.stateAfter, 'npc.mara.mood': 'afraid: in secret, the one who draws the broken circle is Aldric' };
      play.finishTurn(turn.id, { status: 'complete', narration, error: null, stateDelta: {}, stateAfter, refusals: [], promptEvalCount: null, evalCount: null });
    } finally {
      await session.close();
    }
    fake = await FakeOllama.start({ chatModels: ['llama3.2'], capabilities: ['completion', 'tools'] });
  });
  afterEach(async () => {
    await fake.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const read = (rel: string) => fs.readFileSync(path.join(root, ...rel.split('/')), 'utf8');
  const propose = (...extra: string[]) => runCliCaptured(['propose', root, '--model', 'llama3.2', '--base-url', fake.url, ...extra], dir);
  const context = async (stage: 'narrator' | 'player') => {
    const out = await runCliCaptured(['context', '--campaign', root, '--input', 'Brother Aldric, Sister Mara and the broken circle in the crypt', '--stage', stage, '--json'], dir);
    assert.equal(out.code, 0, out.stderr);
    // Whole passages, as the prompt holds them (the text report cuts each to a line).
    return out.stdout;
  };
  const prompt = (request: number) => fake.chatMessages(request).find((m) => m.role === 'user')!.content;
  const answers = (request: number) => fake.toolAnswers(request);

  const visibleCalls = [
    call({
      file: 'characters/circle-drawer.md',
      old_text: '',
      new_text: "---\ntitle: The Circle Drawer\n---\n# The Circle Drawer\n\nBrother Aldric is the abbot's secretary and, in secret, the one who draws the broken circle.\n",
      reason: 'unmasked in turn 4',
      turns: [4],
    }),
    // Re-cased, re-punctuated and across a line break: still the hidden page's words.
    call({
      file: 'characters/mara.md',
      old_text: 'She is kind to travellers, curt with the\nwatch,',
      new_text: "She is kind to travellers, curt with the\nwatch, and she knows HE BELIEVES the Abbey's crypt —\nholds a door that can bring the dead back,",
      reason: 'Mara knows',
      turns: [4],
    }),
    // What the player reads in the setting bible is no secret, even where a hidden page says it too.
    call({
      file: 'places/cloister.md',
      old_text: '',
      new_text: '---\ntitle: The Cloister\n---\n# The Cloister\n\nThe watch is twelve strong and answers to Captain Ilse Varra, but never follows anyone here.\n',
      reason: 'the cloister was visited in turn 4',
      turns: [4],
    }),
  ];
  const hiddenCalls = [
    call({ file: 'characters/brother-aldric.md', old_text: 'and he is wrong.', new_text: 'and he is wrong. The player followed him into the cloister.', reason: 'turn 4', turns: [4] }),
    call({ file: 'characters/mara.md', old_text: '- **Home:** the Old Abbey', new_text: '- **Home:** the Old Abbey, near Aldric', reason: 'innocent-looking', turns: [4] }),
    call({ file: 'places/crypt-door.md', old_text: '', new_text: '# The Crypt Door\n\nIt opens onto nothing.\n', reason: 'a page', turns: [4] }),
  ];

  it('copies into a new page, a visible page or a world-state value are refused naming the hidden file; the player never reads the secret', async () => {
    const aldric = read('characters/brother-aldric.md');
    fake.queue({ toolCalls: visibleCalls }, done, { toolCalls: hiddenCalls }, done, { toolCalls: visibleCalls }, done, { toolCalls: hiddenCalls }, done);

    const dry = await propose('--json');
    assert.equal(dry.code, 0, dry.stderr);
    const data = JSON.parse(dry.stdout) as ProposeJson;
    assert.deepEqual(
      data.refused.map((r) => `${r.origin} ${r.file}: ${r.refusal}`),
      [
        `model characters/circle-drawer.md: ${LEAK}`,
        `model characters/mara.md: ${LEAK}`,
        `model characters/mara.md: ${APART}`,
        `model places/crypt-door.md: ${APART}`,
        `world-state characters/mara.md: ${LEAK}`,
      ],
    );
    // The model drafting visible canon was never shown the hidden pages; a conversation of their own was.
    assert.ok(!prompt(0).includes(NOT_IN_THE_STORY) && !prompt(0).includes('path="characters/brother-aldric.md"'), prompt(0));
    assert.ok(!prompt(0).includes("She takes the Abbey's silver"));
    assert.ok(prompt(2).includes(NOT_IN_THE_STORY) && prompt(2).includes('Narrator-only canon files (2)'), prompt(2));
    assert.ok(!prompt(2).includes('path="characters/mara.md"'), 'no visible canon beside the secrets');
    assert.deepEqual(answers(1), [`refused: ${LEAK}`, `refused: ${LEAK}`, 'accepted: the writer will review it']);
    assert.deepEqual(answers(3), ['accepted: the writer will review it', `refused: ${APART}`, `refused: ${APART}`]);

    const written = await propose('--write');
    assert.equal(written.code, 0, written.stderr);
    assert.equal(fs.existsSync(path.join(root, 'characters', 'circle-drawer.md')), false);
    assert.equal(fs.existsSync(path.join(root, 'places', 'crypt-door.md')), false);
    assert.doesNotMatch(read('characters/mara.md'), SECRET);
    assert.doesNotMatch(read('characters/mara.md'), /bring the dead back|Mood|near Aldric/);
    assert.match(read('characters/mara.md'), /- \*\*Age:\*\* 52/, 'the rules still wrote their other edits');
    assert.match(read('places/cloister.md'), /answers to Captain Ilse Varra, but never follows anyone here/);
    assert.equal(read('characters/brother-aldric.md'), aldric.replace('and he is wrong.', 'and he is wrong. The player followed him into the cloister.'));
    // The narrator reads the secret and its new line; the player reads neither.
    const narrator = await context('narrator');
    assert.match(narrator, SECRET);
    assert.match(narrator, /followed him into the cloister/);
    const player = await context('player');
    assert.doesNotMatch(player, SECRET);
    assert.doesNotMatch(player, /bring the dead back|followed him into the cloister/);
  });

  it("a locked narrator-only page's change becomes a stand-in that is narrator-only too", async () => {
    fs.writeFileSync(path.join(root, 'characters', 'brother-aldric.md'), read('characters/brother-aldric.md').replace('visibility: hidden\n', 'visibility: hidden\nlocked: true\n'));
    fake.queue(done, { toolCalls: [hiddenCalls[0]!] }, done);
    const written = await propose('--write', '--json');
    assert.equal(written.code, 0, written.stderr);
    const standIn = (JSON.parse(written.stdout) as ProposeJson).proposals.find((p) => p.file === 'characters/brother-aldric-update.md');
    assert.ok(standIn, written.stdout);
    assert.match(read('characters/brother-aldric-update.md'), /^visibility: hidden$/m);
    assert.match(await context('narrator'), /followed him into the cloister/);
    assert.doesNotMatch(await context('player'), /followed him into the cloister/);
  });
});
