import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveBackend, toolChatFor, type ModelBackend } from '../../src/models';
import { openSession, type CampaignSession } from '../../src/session';
import { proposeCanonUpdates, type ProposalSet } from '../../src/story';
import type { Adventure } from '../../src/story';
import { FakeOllama, unusedLoopbackUrl } from '../support/fakeOllama';
import { FakeOpenAI } from '../support/fakeOpenAI';
import { playScene, writePlayedCampaign } from '../support/playedCampaign';

/** A propose_edit call as a test writes it: arguments as an object, or as the raw text a broken model sends. */
type Call = { name: string; arguments: Record<string, unknown> | string };

/** One kind of server the model drafts on: its fake, the model it serves, and how a reply of tool calls is scripted. */
interface Provider {
  name: string;
  model: string;
  backend(): ModelBackend;
  /** Scripts the next reply: these calls, natively in the provider's own wire format. */
  reply(calls: Call[]): void;
  /** Scripts the next reply as plain text (the JSON reply protocol, or a model that is done). */
  text(text: string): void;
  /** Scripts the next reply as a server failure. */
  fail(): void;
  /** The server refuses requests with tools from now on, as it does for a model without them. */
  refuseTools(): void;
  /** The messages of the n-th chat request, as the server received them. */
  sent(n: number): { role: string; content: string | null }[];
  close(): Promise<void>;
}

async function ollama(): Promise<Provider> {
  const fake = await FakeOllama.start({ chatModels: ['llama3.2'], capabilities: ['completion', 'tools'] });
  return {
    name: 'Ollama',
    model: 'llama3.2',
    backend: () => resolveBackend('ollama', fake.url),
    // Ollama sends arguments as an object; a string is what a broken model's arguments look like on the wire.
    reply: (calls) => fake.queue({ toolCalls: calls.map((c) => ({ name: c.name, arguments: c.arguments })) }),
    text: (text) => fake.queue({ chunks: [text] }),
    fail: () => fake.queue({ status: 500, error: 'model runner has unexpectedly stopped' }),
    refuseTools: () => (fake.capabilities = ['completion']),
    sent: (n) => (fake.requestsTo('/api/chat')[n]!.body as { messages: { role: string; content: string }[] }).messages,
    close: () => fake.close(),
  };
}

async function openai(): Promise<Provider> {
  const fake = await FakeOpenAI.start({ chatModels: { 'qwen2.5-7b-instruct': 32768 } });
  return {
    name: 'OpenAI-compatible',
    model: 'qwen2.5-7b-instruct',
    backend: () => resolveBackend('openai-compatible', fake.baseUrl),
    reply: (calls) =>
      fake.queue({ argumentPiece: 4096, toolCalls: calls.map((c) => ({ name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) })) }),
    text: (text) => fake.queue({ chunks: [text] }),
    fail: () => fake.queue({ status: 500, error: 'model runner has unexpectedly stopped' }),
    refuseTools: () => (fake.refuseTools = "tools param requires --jinja flag"),
    // The requests the model answered: one with tools that the server refused is not among them.
    sent: (n) => {
      const answered = fake.requestsTo('/v1/chat/completions').filter((r) => fake.refuseTools === undefined || (r.body as { tools?: unknown }).tools === undefined);
      return (answered[n]!.body as { messages: { role: string; content: string | null }[] }).messages;
    },
    close: () => fake.close(),
  };
}

const KIND = {
  file: 'characters/mara.md',
  old_text: 'She is kind to travellers, curt with the\nwatch,',
  new_text: 'She is kind to travellers, owes Tomas a favour, and is curt with the\nwatch,',
  reason: 'Mara owes Tomas after turn 3',
  turns: [3],
};
const LANDING = {
  file: 'places/smugglers-landing.md',
  old_text: '',
  new_text: '---\ntitle: Smugglers’ Landing\nentities: [Smugglers’ Landing]\n---\n# Smugglers’ Landing\n\nWhere Tomas ties up below the broken bridge.\n',
  reason: 'A new place named in turn 3',
  turns: [3],
};
const GATE = { file: 'places/north-gate.md', old_text: 'never shut in living memory.', new_text: 'shut by the watch since the night Tomas came through.', reason: 'The gate was shut in turn 3', turns: [3] };
const edit = (args: Record<string, unknown> | string): Call => ({ name: 'propose_edit', arguments: args });

const modelProposals = (set: ProposalSet) => set.proposals.filter((p) => p.origin === 'model' || p.reason.includes('The gate was shut')).map((p) => p.file);

for (const start of [ollama, openai]) {
  describe(`canon proposals drafted by a model on a loopback ${start === ollama ? 'Ollama' : 'OpenAI-compatible'} server`, () => {
    let dir: string;
    let root: string;
    let session: CampaignSession;
    let adventure: Adventure;
    let server: Provider;

    beforeEach(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-propose-model-'));
      root = path.join(dir, 'campaign');
      writePlayedCampaign(root);
      session = openSession(root);
      await session.reindex();
      adventure = playScene(session);
      server = await start();
    });
    afterEach(async () => {
      await server.close();
      await session.close();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    const propose = (model = server.model, backend = server.backend()) =>
      proposeCanonUpdates({ campaign: session.campaign, store: session.store, play: session.play, adventure: session.play.adventure(adventure.id) }, { client: toolChatFor(backend), model });
    const read = (rel: string) => fs.readFileSync(path.join(root, ...rel.split('/')), 'utf8');

    it('several calls in one reply, each checked: an edit in bounds, a new file, the same edit twice (one proposal), a locked file (a new file that supersedes it)', async () => {
      server.reply([edit(KIND), edit(LANDING), edit(KIND), edit(GATE)]);
      server.text('Those are all the changes.');
      const set = await propose();
      assert.equal(set.drafting, `${server.model} drafted 4 of 4 proposed edits through native tool calls; the deterministic rules added 5`);
      assert.deepEqual(set.refused, []);
      assert.deepEqual(modelProposals(set).sort(), ['characters/mara.md', 'places/north-gate-update.md', 'places/smugglers-landing.md']);
      const kind = set.proposals.find((p) => p.origin === 'model' && p.file === 'characters/mara.md')!;
      assert.deepEqual([kind.oldText, kind.newText, kind.turns.map((t) => t.number)], [KIND.old_text, KIND.new_text, [3]]);
      assert.deepEqual(kind.evidence, ['turn 3: I bargain with Tomas the Smuggler at the north gate']);
      // The new file is canon because the code says so, with the turn it came from.
      assert.equal(set.proposals.find((p) => p.file === 'places/smugglers-landing.md')!.newText, LANDING.new_text.replace('---\n#', 'class: canon\nfrom_turn: The Night Watch, turn 3\n---\n#'));
      const gate = set.proposals.find((p) => p.file === 'places/north-gate-update.md')!;
      assert.equal(gate.supersedes, 'places/north-gate.md');
      assert.match(gate.newText, /shut by the watch since the night Tomas came through\.\n$/);
      assert.equal(set.proposals.some((p) => p.file === 'places/north-gate.md'), false, 'the locked file is never edited');
      // The model heard an answer to each call, in the conversation the server received next.
      const answers = server.sent(1).filter((m) => m.role === 'tool').map((m) => m.content);
      assert.deepEqual(answers, Array(4).fill('accepted: the writer will review it'));
      const prompt = server.sent(0).map((m) => m.content).join('\n');
      assert.match(prompt, /<file path="characters\/mara\.md">/);
      assert.doesNotMatch(prompt, /Medieval taverns|Fog and bells/, 'reference and inspiration are never shown');
    });

    it('a later reply that fails keeps the edits already checked, and the output says where it stopped', async () => {
      server.reply([edit(KIND)]);
      server.fail();
      const set = await propose();
      assert.match(set.drafting, /drafted 1 of 1 proposed edits through native tool calls; reply 2 failed \(.*model runner has unexpectedly stopped\); the deterministic rules added 5$/);
      assert.deepEqual(modelProposals(set), ['characters/mara.md']);
    });

    it('every call out of bounds is refused with its reason, and the model is told it; nothing leaves the campaign; a new page goes without what only the writer sets', async () => {
      const outside = path.join(dir, 'outside');
      fs.mkdirSync(outside);
      fs.symlinkSync(outside, path.join(root, 'linked'));
      const before = read('places/old-abbey.md');
      server.reply([
        edit({ file: '../outside.md', old_text: '', new_text: 'x', reason: 'escape', turns: [] }),
        edit({ file: '/etc/passwd', old_text: 'root', new_text: 'x', reason: 'escape', turns: [] }),
        edit({ file: 'linked/escape.md', old_text: '', new_text: '# Escape\n', reason: 'through a link', turns: [] }),
        edit({ file: '.VSCode/tasks.md', old_text: '', new_text: '# Tasks\n', reason: 'another spelling of .vscode', turns: [] }),
        edit({ file: 'places/old-abbey.md', old_text: 'The abbey has a moat.', new_text: 'It has no moat.', reason: 'invented', turns: [1] }),
        edit({ file: 'reference.md', old_text: 'A rural tavern', new_text: 'A tavern', reason: 'shorter', turns: [1] }),
        edit({ file: 'characters/mara.md', old_text: 'title: Sister Mara', new_text: 'title: Sister Mara\nclass: reference', reason: 'demote', turns: [1] }),
        edit({ file: 'places/ferry.md', old_text: '', new_text: '---\nlocked: true\n---\n# The Ferry\n', reason: 'protect it', turns: [2] }),
        edit({ file: 'places/ford.md', old_text: '', new_text: '+++\nclass = "reference"\n+++\n# The Ford\n', reason: 'a ford', turns: [2] }),
        edit({ file: 'characters/mara.md', old_text: '- **Home:** the Old Abbey', new_text: '- **Home:** the ferry house', reason: 'moved', turns: [9] }),
        edit(server.name === 'Ollama' ? { file: ['characters/mara.md'], new_text: 'x' } : '{"file": "characters/mara.md", "old_text": '),
        { name: 'delete_file', arguments: { file: 'canon.md' } },
      ]);
      const set = await propose();
      assert.match(set.drafting, new RegExp(`^${server.model.replaceAll('.', '\\.')} drafted 1 of 12 proposed edits through native tool calls`));
      const refusals = set.refused.map((r) => `${r.file}: ${r.refusal}`);
      assert.deepEqual(refusals.slice(0, 9), [
        "../outside.md: the path has an empty, '.' or '..' segment: only files inside the campaign may be edited",
        '/etc/passwd: the path is absolute: only files inside the campaign may be edited',
        `linked/escape.md: the path leads outside the campaign through a symbolic link (to ${fs.realpathSync(outside)})`,
        ".VSCode/tasks.md: the path '.VSCode' is .vscode in another spelling (file systems that fold case or Unicode read it so), which is a folder imported content never writes into",
        'places/old-abbey.md: the text to replace is not in the file',
        'reference.md: it is reference, not canon: reference and inspiration files are never edited',
        "characters/mara.md: front matter 'class' decides what the file is: the writer's to set, never a proposal's",
        'places/ford.md: the new file\'s front matter cannot take class and from_turn: front matter is TOML (+++); edit it by hand, or write it as YAML between --- lines',
        'characters/mara.md: no turn 9 in this branch (it has 3)',
      ]);
      assert.match(refusals[9]!, /^: the arguments are not a propose_edit call \((file: |.*JSON)/);
      assert.equal(refusals[10], ': there is no tool named "delete_file"');
      const answers = server.sent(1).filter((m) => m.role === 'tool').map((m) => m.content!);
      assert.equal(answers.length, 12);
      assert.deepEqual(answers.filter((a) => !a.startsWith('refused: ')), ["accepted without the front matter locked (the writer's to set): the writer will review it"]);
      // The deterministic proposals stand beside the refusals, and the ferry's page without its lock.
      assert.equal(set.proposals.length, 6);
      const ferry = set.proposals.find((p) => p.origin === 'model')!;
      assert.deepEqual([ferry.file, ferry.newText, ferry.dropped?.fields], ['places/ferry.md', '---\nclass: canon\nfrom_turn: The Night Watch, turn 2\n---\n# The Ferry\n', ['locked']]);
      assert.deepEqual(fs.readdirSync(outside), [], 'nothing written outside');
      assert.equal(read('places/old-abbey.md'), before);
    });

    it('a huge reply is cut at its bound: the call it carried is refused, the rules still propose', async () => {
      server.reply([edit({ ...KIND, new_text: 'x'.repeat(200_000) })]);
      const set = await propose();
      assert.match(set.drafting, /drafted 0 of 1 proposed edits through native tool calls; reply 1 was cut at its length limit \(4096 tokens\)/);
      assert.equal(set.refused.length, 1);
      // Whole in Ollama's one line, or streamed until the client stopped reading: either way too long to take.
      assert.match(set.refused[0]!.refusal, /^the call's arguments are \d+ characters; at most 32000 are allowed; the reply was cut at its length limit$/);
      assert.equal(set.proposals.length, 5);
    });

    it('a server without tools is asked in the JSON reply protocol, its calls checked the same way, and the output says so', async () => {
      server.refuseTools();
      server.text(JSON.stringify({ tool_calls: [{ name: 'propose_edit', arguments: KIND }, { name: 'propose_edit', arguments: { ...GATE, file: '../north-gate.md' } }] }));
      server.text('{"content": "That is all."}');
      const set = await propose();
      assert.equal(set.drafting, `${server.model} drafted 1 of 2 proposed edits through the JSON reply protocol (its server takes no tools); the deterministic rules added 5`);
      assert.deepEqual(modelProposals(set), ['characters/mara.md']);
      assert.deepEqual(set.refused.map((r) => r.refusal), ["the path has an empty, '.' or '..' segment: only files inside the campaign may be edited"]);
      const system = server.sent(0)[0]!.content!;
      assert.match(system, /Reply with one JSON object and nothing else/);
    });

    it('a model that answers the JSON protocol in prose leaves the deterministic proposals, and says why', async () => {
      server.refuseTools();
      server.text('Mara is older now, and the bridge is gone.');
      const set = await propose();
      assert.match(set.drafting, new RegExp(`^deterministic: ${server.model.replaceAll('.', '\\.')} could not draft \\(the model on .* did not answer in the JSON reply protocol: "Mara is older now`));
      assert.equal(set.proposals.length, 5);
    });

    it('a server that cannot be reached leaves the deterministic proposals, and says why', async () => {
      const down = await unusedLoopbackUrl();
      const set = await propose(server.model, server.name === 'Ollama' ? resolveBackend('ollama', down) : resolveBackend('openai-compatible', `${down}/v1`));
      assert.match(set.drafting, new RegExp(`^deterministic: ${server.model.replaceAll('.', '\\.')} could not draft \\(.*127\\.0\\.0\\.1`));
      assert.equal(set.proposals.length, 5);
    });
  });
}
