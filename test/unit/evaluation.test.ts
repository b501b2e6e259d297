import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultSettings, openSession, type CampaignSession } from '../../src/session';
import { EvalSetError, renderEvalMarkdown } from '../../src/story/evaluation';
import { FakeOllama } from '../support/fakeOllama';
import { offersTool } from '../support/fakeModelServer';

/**
 * The research evaluation the extension's "Evaluate Research on This Campaign" runs: through the campaign's
 * session, for the narrator model and server its settings name, on the example campaign's starter eval.yaml
 * against a scripted Ollama. It checks the wire and the arithmetic, never a model's quality.
 */
describe('evaluating research through the campaign session', () => {
  let dir: string;
  let fake: FakeOllama;
  let session: CampaignSession;
  let contextWindow: number;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-evaluation-'));
    fs.cpSync(path.resolve(__dirname, '../../fixtures/example-campaign'), dir, { recursive: true });
    fake = await FakeOllama.start({ chatModels: ['llama3.2'], capabilities: ['completion', 'tools'], contextLength: 4096 });
    contextWindow = 0;
    session = openSession(dir, { settings: () => defaultSettings({ ollamaHost: fake.url, narratorModel: 'llama3.2', researchContextWindow: contextWindow }, {}) });
    await session.reindex();
  });
  afterEach(async () => {
    await session.close();
    await fake.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("scores the narrator model's research against today's selection and renders the table a writer reads", async () => {
    const store = session.store;
    const aldric = store.listPassages(store.getSourceByPath('characters/brother-aldric.md')!.id)[0]!;
    // The first question: it keeps the passage that answers it; every other question and both off-topic ones: nothing.
    fake.queue({ toolCalls: [{ name: 'finish', arguments: { keep: [aldric.id], reason: 'he draws the circle' } }] }, ...Array.from({ length: 7 }, () => ({ toolCalls: [{ name: 'finish', arguments: { keep: [] } }] })));
    const report = await session.evaluateResearch();
    assert.deepEqual([report.questions, report.offTopic, report.set], [6, 2, path.join(dir, 'eval.yaml')]);
    assert.deepEqual(report.rows.map((r) => r.name), ["today's selection", 'llama3.2 (research)']);
    const research = report.rows[1]!;
    assert.deepEqual(research.scores.recall, { at1: 1 / 6, at3: 1 / 6, at5: 1 / 6 });
    assert.deepEqual(research.scores.offTopicNothing, { right: 2, of: 2 });
    assert.deepEqual(research.research!.ran, { native: 8, json: 0, lexical: 0 });
    const chats = fake
      .requestsTo('/api/chat')
      .filter((r) => offersTool(r, 'finish'))
      .map((r) => r.body as { model: string; options: { num_ctx?: number } });
    assert.equal(chats.length, 8, 'one research request per question, on the narrator server the settings name');
    assert.ok(chats.every((c) => c.model === 'llama3.2' && c.options.num_ctx === 4096), 'the narrator model, fitted to the window the server reports');

    const markdown = renderEvalMarkdown(report, 'llama3.2 on Westhaven');
    const lines = markdown.split('\n');
    assert.equal(lines[0], '# Research evaluation: llama3.2 on Westhaven');
    const header = lines.find((l) => l.startsWith('|') && l.includes('R@1'))!;
    assert.match(lines[lines.indexOf(header) + 1]!, /^\| -+ \| -+: \|/, 'a markdown table: the numbers right-aligned');
    assert.match(lines.find((l) => l.startsWith('| llama3.2 (research)'))!, /\|\s+0\.17 \|\s+0\.17 \|\s+0\.17 \|\s+2\/2 \|\s+0\/8 \|\s+8\/0\/0 \|/);
    assert.ok(lines.some((l) => l.startsWith("| today's selection")));
    assert.match(markdown, /## llama3\.2: per question\n\n- Who draws the broken circle on the doorposts\? — ran native, 1 step\(s\); kept Brother Aldric/);
    // The starter set's played exchanges, which the scripted model answers in prose: nothing proposed, each said.
    assert.match(lines.find((l) => l.startsWith('| llama3.2 (proposals)'))!, /\|\s+0\/2 \|\s+0 \|\s+1\/1 \|\s+0 \|\s+0 \|/);
    assert.match(markdown, /## llama3\.2: per played exchange\n\n- Exchange 1 \(.*\) — missed characters\/mara\.md says "capital"; proposed nothing\n/);
    assert.match(markdown, /- Exchange 3 \(.*\) — expected nothing; proposed nothing\n/);
  });

  it('takes the research context window from the settings when one is set', async () => {
    contextWindow = 2048;
    fake.queue(...Array.from({ length: 8 }, () => ({ toolCalls: [{ name: 'finish', arguments: { keep: [] } }] })));
    await session.evaluateResearch();
    const research = fake.requestsTo('/api/chat').filter((r) => offersTool(r, 'finish'));
    assert.equal(research.length, 8);
    assert.ok(research.every((r) => (r.body as { options: { num_ctx?: number } }).options.num_ctx === 2048));
  });

  it('scores the consistency check on the conflicts the set names: the patterns, and the model on Ollama', async () => {
    // A drifted campaign: the infirmary's page gives Mara another age than her own page does.
    fs.writeFileSync(path.join(dir, 'places', 'infirmary.md'), '---\ntitle: The Infirmary\n---\n# The Infirmary\n\n## Sister Mara\n\n- **Age:** 41\n- **Home:** the Old Abbey\n');
    fs.appendFileSync(path.join(dir, 'eval.yaml'), 'conflicts:\n  - between: [places/infirmary.md, characters/mara.md]\n');
    await session.reindex();
    fake.queue(...Array.from({ length: 8 }, () => ({ toolCalls: [{ name: 'finish', arguments: { keep: [] } }] })));
    // Every pair of passages gets the same answer: each quote pair is kept only where both quotes are really there.
    fake.defaultReply = {
      chunks: [
        JSON.stringify({
          conflicts: [
            { entity: 'Mara', quote_a: 'Age:** 34', quote_b: 'Age:** 41', explanation: 'two ages' },
            { entity: 'Mara', quote_a: 'Keeper of the Old Abbey', quote_b: 'Mara holds the only key', explanation: 'not a contradiction the writer named' },
          ],
        }),
      ],
    };
    const report = await session.evaluateResearch();
    const consistency = report.consistency!;
    assert.equal(consistency.known, 1);
    assert.equal(consistency.byPatterns, 1, 'the patterns see the two ages');
    const [model] = consistency.models;
    assert.deepEqual([model!.model, model!.found, model!.unexpected, model!.failedPairs], ['llama3.2', 1, 1, 0]);
    assert.ok(model!.pairs >= 2);
    const markdown = renderEvalMarkdown(report, 'llama3.2 on Westhaven');
    assert.match(markdown, /Consistency check on 1 known conflict\(s\):\n- the patterns \(Conflicts view, storyteller lint\) find 1\/1\n- llama3\.2 finds 1\/1, suggests 1 no known conflict names; \d+\/\d+ passage pairs answered/);
  });

  it('refuses a known conflict naming a file the campaign does not have', async () => {
    fs.appendFileSync(path.join(dir, 'eval.yaml'), 'conflicts:\n  - between: [canon.md, places/atlantis.md]\n');
    await assert.rejects(session.evaluateResearch(), /eval\.yaml: conflicts\.0\.between names 'places\/atlantis\.md', which is no indexed file of this campaign/);
  });

  it('names the question set and the reason when the campaign has none, and asks no model', async () => {
    fs.rmSync(path.join(dir, 'eval.yaml'));
    await assert.rejects(session.evaluateResearch(), (error: Error) => error instanceof EvalSetError && error.message.startsWith(`${path.join(dir, 'eval.yaml')}: cannot read the question set (ENOENT)`));
    assert.equal(fake.requestsTo('/api/chat').length, 0);
  });
});
