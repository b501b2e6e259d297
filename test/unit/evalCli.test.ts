import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCaptured } from '../support/cliRun';
import { FakeOllama } from '../support/fakeOllama';
import { FakeOpenAI } from '../support/fakeOpenAI';

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
      const asked = fake.requestsTo('/api/chat').map((r) => r.body as { options: { num_ctx?: number } });
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
      const tools = fake.requestsTo('/v1/chat/completions').map((r) => (r.body as { tool_choice?: string }).tool_choice);
      assert.ok(tools.every((t) => t === 'required'), 'each research request asks for a tool call');
    } finally {
      await fake.close();
    }
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
