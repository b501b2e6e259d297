import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCaptured } from '../support/cliRun';
import { FakeOllama } from '../support/fakeOllama';
import { FakeOpenAI } from '../support/fakeOpenAI';
import { offersTool } from '../support/fakeModelServer';

/**
 * `storyteller eval` over the example campaign's starter question set, against scripted servers: these
 * tests check the wire and the arithmetic (what a scripted model keeps is scored as the table says), never
 * a model's quality.
 */

interface EvalRow {
  name: string;
  scores: { recall: { at1: number; at3: number; at5: number } | null; offTopicNothing: { right: number; of: number } };
  research: { calls: number; refusedCalls: number; ran: Record<string, number>; unfinished: number; rounds: number; tokens: number } | null;
}

const STARTER_QUESTIONS = 6;
const STARTER_OFF_TOPIC = 2;

describe('storyteller eval', () => {
  let dir: string;
  let aldric: string;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-eval-'));
    fs.cpSync(path.resolve(__dirname, '../../fixtures/example-campaign'), dir, { recursive: true });
    const indexed = await runCaptured(['index', dir], dir);
    assert.equal(indexed.code, 0);
    assert.match(indexed.stdout, /7 files — 7 indexed/, 'the starter eval.yaml is not indexed as a source');
    const found = JSON.parse((await runCaptured(['search', 'Brother Aldric', '--campaign', dir, '--json'], dir)).stdout) as { hits: { passageId: string; sourcePath: string }[] };
    aldric = found.hits.find((h) => h.sourcePath === 'characters/brother-aldric.md')!.passageId;
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("prints the table on a scripted Ollama, scoring what the model kept against today's selection, and --json says the same", async () => {
    const fake = await FakeOllama.start({ capabilities: ['completion', 'tools'], contextLength: 4096 });
    try {
      // The first question: it searches, then keeps the passage that answers it. Every other: it keeps nothing.
      fake.queue(
        { toolCalls: [{ name: 'search', arguments: { query: 'broken circle doorposts' } }] },
        { toolCalls: [{ name: 'finish', arguments: { keep: [aldric], reason: 'he draws it' } }] },
        ...Array.from({ length: STARTER_QUESTIONS + STARTER_OFF_TOPIC - 1 }, () => ({ toolCalls: [{ name: 'finish', arguments: { keep: [] } }] })),
      );
      const { code, stdout, stderr } = await runCaptured(['eval', dir, '--model', 'llama3.2', '--base-url', fake.url], dir);
      assert.equal(code, 0, stderr);
      assert.match(stdout, /^Research against today's selection on 'westhaven': 6 questions, 2 off-topic \(.*eval\.yaml\)/);
      const header = stdout.split('\n').find((l) => l.includes('R@1'))!;
      for (const column of ['R@1', 'R@3', 'R@5', 'off-topic: nothing', 'calls refused', 'ran native/json/fallback', 'unfinished', 'rounds', 'tokens', 'ms/turn']) assert.ok(header.includes(column), column);
      const row = stdout.split('\n').find((l) => l.startsWith('llama3.2 (research)'))!;
      assert.match(row, /^llama3\.2 \(research\)\s+0\.17\s+0\.17\s+0\.17\s+2\/2\s+0\/9\s+8\/0\/0\s+0\s+1\.1\s+\d+\s+\d+$/);
      assert.ok(stdout.split('\n').some((l) => l.startsWith("today's selection")));
      // The starter set's played exchanges: the scripted model answers each in prose, proposing nothing.
      assert.match(stdout, /^Canon proposals on 3 played exchange\(s\): 2 expected edit\(s\), 1 exchange\(s\) that should propose nothing$/m);
      assert.match(stdout, /^llama3\.2 \(proposals\)\s+0\/2\s+0\s+1\/1\s+0\s+0\s+\d+\s+\d+$/m);
      const asked = fake
        .requestsTo('/api/chat')
        .filter((r) => offersTool(r, 'finish'))
        .map((r) => r.body as { options: { num_ctx?: number } });
      assert.ok(asked.every((b) => b.options.num_ctx === 4096), 'the prompt is fitted to the window /api/show reports');

      fake.queue(
        { toolCalls: [{ name: 'finish', arguments: { keep: [aldric] } }] },
        ...Array.from({ length: STARTER_QUESTIONS + STARTER_OFF_TOPIC - 1 }, () => ({ toolCalls: [{ name: 'finish', arguments: { keep: [] } }] })),
      );
      const json = await runCaptured(['eval', dir, '--model', 'llama3.2', '--base-url', fake.url, '--json'], dir);
      const report = JSON.parse(json.stdout) as { rows: EvalRow[]; questions: number; offTopic: number };
      assert.deepEqual([report.questions, report.offTopic], [STARTER_QUESTIONS, STARTER_OFF_TOPIC]);
      const research = report.rows.find((r) => r.name === 'llama3.2 (research)')!;
      assert.deepEqual(research.scores.recall, { at1: 1 / 6, at3: 1 / 6, at5: 1 / 6 });
      assert.deepEqual(research.research!.ran, { native: 8, json: 0, lexical: 0 });
    } finally {
      await fake.close();
    }
  });

  it('compares models on a scripted OpenAI-compatible server: malformed calls are counted, prose is kept or falls back, as the record says', async () => {
    const fake = await FakeOpenAI.start({ chatModels: { careful: 8192, chatty: 8192 } });
    // A conflict the writer believes in but the canon does not hold: no pattern finds it, and no model is asked.
    fs.appendFileSync(path.join(dir, 'eval.yaml'), 'conflicts:\n  - between: [canon.md, characters/mara.md]\n');
    try {
      const perAsk = STARTER_QUESTIONS + STARTER_OFF_TOPIC;
      fake.queue(
        // careful: one malformed call (refused), then a finish of nothing, every question.
        ...Array.from({ length: perAsk }, () => [{ toolCalls: [{ name: 'search', arguments: '{"query": "abbey' }] }, { toolCalls: [{ name: 'finish', arguments: '{"keep": []}' }] }]).flat(),
        // chatty: searches the first question, then writes prose; prose from the first reply on every other.
        { toolCalls: [{ name: 'search', arguments: '{"query": "Brother Aldric broken circle"}' }] },
        { chunks: ['Aldric, surely.'] },
        ...Array.from({ length: perAsk - 1 }, () => ({ chunks: ['I cannot say.'] })),
      );
      const { code, stdout, stderr } = await runCaptured(['eval', dir, '--model', 'careful', '--model', 'chatty', '--provider', 'openai-compatible', '--base-url', fake.baseUrl, '--json'], dir);
      assert.equal(code, 0, stderr);
      const parsed = JSON.parse(stdout) as { rows: EvalRow[]; consistency: { known: number; byPatterns: number; models: { model: string; found: number | null }[] } };
      assert.deepEqual(parsed.consistency.models.map((m) => [m.model, m.found]), [['careful', null], ['chatty', null]], 'the consistency check asks Ollama only');
      assert.deepEqual([parsed.consistency.known, parsed.consistency.byPatterns], [1, 0]);
      const rows = parsed.rows;
      assert.deepEqual(rows.map((r) => r.name), ["today's selection", 'careful (research)', 'chatty (research)']);
      const [today, careful, chatty] = rows as [EvalRow, EvalRow, EvalRow];
      assert.deepEqual([careful.research!.refusedCalls, careful.research!.calls], [perAsk, 2 * perAsk], 'each malformed call counted as refused');
      assert.deepEqual(careful.scores.offTopicNothing, { right: 2, of: 2 });
      assert.deepEqual(careful.scores.recall, { at1: 0, at3: 0, at5: 0 }, 'kept nothing: recalls nothing');
      assert.deepEqual(chatty.research!.ran, { native: 1, json: 0, lexical: perAsk - 1 }, 'prose before any search falls back to today’s selection');
      assert.equal(chatty.research!.unfinished, 1, 'the search it ended in prose after is kept, and counted as unfinished');
      assert.ok(chatty.scores.recall!.at5 >= today.scores.recall!.at5, 'what it found is added to what today’s selection would send on the other questions');
      const tools = fake
        .requestsTo('/v1/chat/completions')
        .filter((r) => offersTool(r, 'finish'))
        .map((r) => (r.body as { tool_choice?: string }).tool_choice);
      assert.ok(tools.every((t) => t === 'required'), 'each research request asks for a tool call');
    } finally {
      await fake.close();
    }
  });

  describe('canon proposals', () => {
    const FOUNDLING = 'Mara came to the Abbey as a foundling and never left it.';
    const PROPOSALS_ONLY = [
      'proposals:',
      '  - action: I ask Mara how she came to the Abbey.',
      `    narration: '"I was no foundling," Sister Mara says. "I was born in the capital."'`,
      '    expect: characters/mara.md',
      '    says: capital',
      '  - narration: Rain drums on the roof of the Old Abbey until the storm passes.',
      '    expect: nothing',
      '',
    ].join('\n');
    const edit = (file: string, oldText: string, newText: string) => ({ toolCalls: [{ name: 'propose_edit', arguments: { file, old_text: oldText, new_text: newText, reason: 'the story says so', turns: [1] } }] });
    const done = { chunks: ['Nothing more to change.'] };

    it('scores each model on a scripted Ollama: the expected edit found, an unrelated one unexpected, a refused one counted with why', async () => {
      fs.writeFileSync(path.join(dir, 'eval.yaml'), PROPOSALS_ONLY);
      const fake = await FakeOllama.start({ chatModels: ['apt', 'stray', 'sloppy'], capabilities: ['completion', 'tools'] });
      try {
        fake.queue(
          // apt: the expected edit, then done; nothing on the rain.
          edit('characters/mara.md', FOUNDLING, 'Mara was born in the capital and came to the Abbey at nine; she never left it.'),
          done,
          done,
          // stray: an edit the exchange does not bring, on both.
          edit('places/old-abbey.md', 'Mara holds the only key.', 'Mara holds the only key, on a red cord.'),
          done,
          edit('places/old-abbey.md', 'the monks live in the east range', 'the monks live in the west range'),
          done,
          // sloppy: quotes text Mara's page does not hold, and is refused; nothing on the rain.
          edit('characters/mara.md', 'Mara was a foundling.', 'Mara was born in the capital.'),
          done,
          done,
        );
        const { code, stdout, stderr } = await runCaptured(['eval', dir, '--model', 'apt', '--model', 'stray', '--model', 'sloppy', '--base-url', fake.url], dir);
        assert.equal(code, 0, stderr);
        const lines = stdout.split('\n');
        assert.match(stdout, /^Evaluation of 'westhaven' \(.*eval\.yaml\), on .*: no research questions/);
        assert.ok(lines.includes('Canon proposals on 2 played exchange(s): 1 expected edit(s), 1 exchange(s) that should propose nothing'), stdout);
        const header = lines.find((l) => l.includes('expected edits found'))!;
        for (const column of ['unexpected', 'nothing: right', 'refused', 'failed', 'tokens', 'ms/exchange']) assert.ok(header.includes(column), column);
        const row = (model: string) => lines.find((l) => l.startsWith(`${model} (proposals)`)) ?? '';
        assert.match(row('apt'), /^apt \(proposals\)\s+1\/1\s+0\s+1\/1\s+0\s+0\s+\d+\s+\d+$/);
        assert.match(row('stray'), /^stray \(proposals\)\s+0\/1\s+2\s+0\/1\s+0\s+0\s+\d+\s+\d+$/);
        assert.match(row('sloppy'), /^sloppy \(proposals\)\s+0\/1\s+0\s+1\/1\s+1\s+0\s+\d+\s+\d+$/);
        assert.ok(lines.includes('- sloppy, exchange 1: refused characters/mara.md: the text to replace is not in the file'), stdout);
        assert.ok(!lines.some((l) => l.startsWith("today's selection")), 'no research questions: no research table');
        // The drafting conversation is the product's: the exchange's narration reaches the model with Mara's page to quote.
        const first = fake.chatMessages(0).map((m) => m.content).join('\n');
        assert.ok(first.includes('I was born in the capital') && first.includes(FOUNDLING));
        assert.equal(fs.readFileSync(path.join(dir, 'characters', 'mara.md'), 'utf8').includes(FOUNDLING), true, 'nothing is written');
      } finally {
        await fake.close();
      }
    });

    it('says in --json on a scripted OpenAI-compatible server which of several expected edits were found, and counts a model that could not draft', async () => {
      fs.writeFileSync(
        path.join(dir, 'eval.yaml'),
        [
          'proposals:',
          '  - narration: Captain Ilse Varra hands her grey cloak to Jory Fenn; the watch of Westhaven is his now.',
          '    expect:',
          '      - edit: canon.md#The Town Watch',
          '        says: Jory Fenn',
          '      - edit: characters/jory-fenn.md',
          '        says: [Jory Fenn, captain]',
          '',
        ].join('\n'),
      );
      const fake = await FakeOpenAI.start({ chatModels: { 'qwen2.5-7b-instruct': 32768, broken: 8192 } });
      const call = (file: string, oldText: string, newText: string) => ({
        toolCalls: [{ name: 'propose_edit', arguments: JSON.stringify({ file, old_text: oldText, new_text: newText, reason: 'Fenn commands the watch now', turns: [1] }) }],
      });
      try {
        fake.queue(
          call('canon.md', 'answers to Captain Ilse Varra', 'answers to Captain Jory Fenn, since Ilse Varra rode south'),
          { chunks: ['Done.'] },
          // broken: its server fails the first reply.
          { status: 500, error: 'model runner has unexpectedly stopped' },
        );
        const { code, stdout, stderr } = await runCaptured(
          ['eval', dir, '--model', 'qwen2.5-7b-instruct', '--model', 'broken', '--provider', 'openai-compatible', '--base-url', fake.baseUrl, '--json'],
          dir,
        );
        assert.equal(code, 0, stderr);
        const report = JSON.parse(stdout) as {
          proposals: {
            items: number;
            expectedEdits: number;
            models: { model: string; found: number; unexpected: number; refused: number; failed: number }[];
            perItem: { model: string; expected: { edit: string; found: boolean }[]; proposed: { file: string; expected: boolean }[]; failure?: string }[];
          };
        };
        const p = report.proposals;
        assert.deepEqual([p.items, p.expectedEdits], [1, 2]);
        assert.deepEqual(
          p.models.map((m) => [m.model, m.found, m.unexpected, m.refused, m.failed]),
          [
            ['qwen2.5-7b-instruct', 1, 0, 0, 0],
            ['broken', 0, 0, 0, 1],
          ],
        );
        assert.deepEqual(p.perItem[0]!.expected, [
          { edit: 'canon.md#The Town Watch says "Jory Fenn"', found: true },
          { edit: 'characters/jory-fenn.md says "Jory Fenn", "captain"', found: false },
        ]);
        assert.deepEqual(p.perItem[0]!.proposed.map((x) => [x.file, x.expected]), [['canon.md', true]]);
        assert.match(p.perItem[1]!.failure ?? '', /500/);
      } finally {
        await fake.close();
      }
    });

    it('refuses a proposals item that is wrong, naming the file and the item', async () => {
      const refusal = async (yaml: string) => {
        fs.writeFileSync(path.join(dir, 'eval.yaml'), yaml);
        const { code, stderr } = await runCaptured(['eval', dir, '--model', 'm', '--base-url', 'http://127.0.0.1:9'], dir);
        assert.equal(code, 2, stderr);
        return stderr;
      };
      assert.match(await refusal('proposals:\n  - narration: Mara smiles.\n    expect: characters/mara.md\n'), /eval\.yaml: proposals\.0: says: the words the expected edit to characters\/mara\.md should carry are missing/);
      assert.match(
        await refusal('proposals:\n  - narration: Mara smiles.\n    expect: nothing\n  - narration: The bell rings.\n    expect: places/belfry.txt\n    says: bell\n'),
        /eval\.yaml: proposals\.1\.expect names 'places\/belfry\.txt', which is no indexed file of this campaign nor a new markdown \(\.md\) page/,
      );
      assert.match(await refusal('proposals:\n  - narate: Mara smiles.\n    expect: nothing\n'), /eval\.yaml: proposals\.0\.narration: /);
      assert.match(await refusal('proposals:\n  - narration: Mara smiles.\n    expect: nothing\n    says: smile\n'), /eval\.yaml: proposals\.0: says: an item that expects nothing has no words to carry/);
    });
  });

  it('names the file and the question when the set expects a file the campaign does not have', async () => {
    fs.writeFileSync(path.join(dir, 'eval.yaml'), 'questions:\n  - ask: Who rules?\n    expect: characters/queen.md\n');
    const { code, stderr } = await runCaptured(['eval', dir, '--model', 'm', '--base-url', 'http://127.0.0.1:9'], dir);
    assert.equal(code, 2);
    assert.match(stderr, /eval\.yaml: questions\.0\.expect names 'characters\/queen\.md', which is no indexed file of this campaign/);
    fs.writeFileSync(path.join(dir, 'eval.yaml'), 'questions:\n  - ask: Who rules?\n    answer: nobody\n');
    const wrong = await runCaptured(['eval', dir, '--model', 'm', '--base-url', 'http://127.0.0.1:9'], dir);
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /eval\.yaml: questions\.0/);
  });
});
