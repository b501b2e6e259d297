import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { runCli } from '../../src/cli/run';
import { EXIT } from '../../src/cli/command';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { PlayStore } from '../../src/story/playStore';
import { FakeOllama } from '../support/fakeOllama';

function capture(): { stream: Writable; text: () => string } {
  let out = '';
  return {
    stream: new Writable({
      write(chunk: Buffer, _enc, done) {
        out += chunk.toString('utf8');
        done();
      },
    }),
    text: () => out,
  };
}

describe('storyteller play', () => {
  let dir: string;
  let fake: FakeOllama;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-play-'));
    fs.cpSync(path.resolve(__dirname, '../../fixtures/example-campaign'), dir, { recursive: true });
    fake = await FakeOllama.start();
  });
  afterEach(async () => {
    await fake.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const play = async (lines: string[]) => {
    const stdout = capture();
    const stderr = capture();
    const code = await runCli(['play', dir, '--host', fake.url, '--model', 'llama3.2'], {
      stdout: stdout.stream,
      stderr: stderr.stream,
      cwd: dir,
      stdin: Readable.from(lines.map((l) => `${l}\n`)),
    });
    return { code, out: stdout.text(), err: stderr.text() };
  };

  it('plays turns from a piped stream: streams, retries, undoes, shows context and tree, and keeps it all in play.db', async () => {
    fake.queue({ chunks: ['The bells ', 'ring under the fog.'] }, { chunks: ['A second telling.'] }, { chunks: ['Mara looks up.'] });
    const { code, out, err } = await play(['listen for the bells', '/retry', '/context ask Mara about the crypt', '/say Hello, Mara.', '/undo', '/tree', '/quit', 'never played']);
    assert.equal(code, EXIT.ok, err);
    assert.match(out, /The bells ring under the fog\.\n/);
    assert.match(out, /A second telling\.\n/);
    assert.match(out, /Context: \d+ of 7168 tokens \(model context 8192, 1024 kept for the reply\)/);
    assert.match(out, /Sent the same every turn:\n {4}Narrator /);
    // The header names the adventure; its short id appears only as what --adventure takes back.
    assert.match(out, /^The Westhaven Campaign — new adventure — narrator llama3\.2 on Ollama at \S+\. \/help for commands; play it again with --adventure [0-9a-f]{8}\.\n/);
    assert.match(out, /Mara looks up\./);
    assert.match(out, /Back at turn 1: listen for the bells/);
    assert.match(out, /\n {2}[0-9a-f]{8} do: listen for the bells\n▶ [0-9a-f]{8} do: listen for the bells\n {2}[0-9a-f]{8} say: Hello, Mara\./, 'a lone reply goes on at its turn\'s indent');
    assert.equal(fake.requestsTo('/api/chat').length, 3, 'the line after /quit is not played');
    const store = new PlayStore(path.join(dir, '.storyteller', 'play.db'));
    const [adventure] = store.listAdventures('westhaven');
    assert.equal(store.allTurns(adventure!.id).length, 3);
    store.close();
  });

  it('uses the campaign index when there is one, and says so when there is none', async () => {
    const without = await play(['/context ask Sister Mara about her ledger']);
    assert.doesNotMatch(without.out, /Canon sources/);
    const campaign = loadCampaign(dir);
    const index = KnowledgeStore.open(campaign);
    await importCampaign(campaign, index);
    index.close();
    const { out } = await play(['/context ask Sister Mara about her ledger']);
    assert.match(out, /Always-included canon +\d+ \/ \d+ tokens/);
    assert.match(out, /Canon sources +\d+ \/ \d+ tokens/);
  });

  it('rebuilds a damaged index before playing, so the narrator is fed the campaign, not an empty library', async () => {
    const campaign = loadCampaign(dir);
    const index = KnowledgeStore.open(campaign);
    await importCampaign(campaign, index);
    index.close();
    for (const suffix of ['-wal', '-shm']) fs.rmSync(`${campaign.indexPath}${suffix}`, { force: true });
    fs.writeFileSync(campaign.indexPath, 'a sync conflict left this');
    const { out, err } = await play(['/context ask Sister Mara about her ledger']);
    assert.match(err, /^storyteller play: the index was damaged; it was moved to .*index\.db\.damaged-\S+ and rebuilt from the campaign's files\n$/);
    assert.match(out, /Canon sources +\d+ \/ \d+ tokens/);
  });

  it('says what failed and keeps the action when the model is missing', async () => {
    const stdout = capture();
    const code = await runCli(['play', dir, '--host', fake.url, '--model', 'qwen-missing'], {
      stdout: stdout.stream,
      stderr: capture().stream,
      cwd: dir,
      stdin: Readable.from(['open the door\n', '/tree\n']),
    });
    assert.equal(code, EXIT.ok);
    assert.match(stdout.text(), /✖ .*`ollama pull qwen-missing`.* — your action is saved; \/retry to try again/);
    assert.match(stdout.text(), /▶ [0-9a-f]{8} do: open the door \[error\]/);
  });

  it('names the folder when it is not a campaign', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'st-noplay-'));
    const stderr = capture();
    const code = await runCli(['play', empty], { stdout: capture().stream, stderr: stderr.stream, cwd: empty, stdin: Readable.from([]) });
    assert.equal(code, EXIT.failure);
    assert.match(stderr.text(), /campaign\.yaml: no campaign\.yaml here/);
    fs.rmSync(empty, { recursive: true, force: true });
  });
});
