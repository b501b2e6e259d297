import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import { EXIT } from '../../src/cli/command';
import { makeCampaign, removeDir, writeFile } from '../support/campaignDirs';
import { runCaptured } from '../support/cliRun';
import { closeLoopback, listenOnLoopback } from '../support/loopback';

/**
 * Campaign folders as writers really have them (editors on Windows, Obsidian, Hugo, Word exports, symlinked
 * shared folders), through the CLI a writer runs: each file either just works or is named with its reason,
 * and nothing else in the campaign is lost. Every file carries a made-up word, so a search proves it is in.
 */

const index = (root: string, ...flags: string[]) => runCaptured(['index', root, '--workers', '0', ...flags], '/');

async function found(root: string, word: string): Promise<string[]> {
  const result = await runCaptured(['search', word, '--campaign', root, '--json'], '/');
  assert.equal(result.code, EXIT.ok, result.stderr);
  return [...new Set((JSON.parse(result.stdout) as { hits: { sourcePath: string }[] }).hits.map((r) => r.sourcePath))];
}

interface Listed {
  path: string;
  class: string;
  title: string;
  lexicalState: string;
  issues: { code: string; message: string; line?: number }[];
}

async function sources(root: string): Promise<Map<string, Listed>> {
  const result = await runCaptured(['sources', root, '--json'], '/');
  assert.equal(result.code, EXIT.ok, result.stderr);
  return new Map((JSON.parse(result.stdout) as { sources: Listed[] }).sources.map((s) => [s.path, s]));
}

const REPO = path.resolve(__dirname, '..', '..');

/**
 * Node (with tsx) in a child process, its output read by `reader`. `unprivileged`: bound by file permissions —
 * root (CI containers) is never refused a read, so it gives up the capabilities that override them. It stays
 * root otherwise: another user could not reach a checkout in a private folder (`mktemp -d` makes them 0700).
 */
const WITHOUT_PERMISSION_OVERRIDE = ['setpriv', '--bounding-set=-dac_override,-dac_read_search', '--inh-caps=-dac_override,-dac_read_search', '--'];
function runNode(args: string[], options: { unprivileged?: boolean; reader?: (stdout: NodeJS.ReadableStream) => void } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const asUser = options.unprivileged && process.getuid?.() === 0 ? WITHOUT_PERMISSION_OVERRIDE : [];
  const [program, ...rest] = [...asUser, process.execPath, '--import', 'tsx', ...args];
  const child = spawn(program!, rest, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  options.reader?.(child.stdout);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** The CLI's own entry, as a shell runs it: an error it throws ends it as it would a writer's. */
const runEntry = (argv: string[], options: Parameters<typeof runNode>[1] = {}) => runNode([path.join(REPO, 'src/cli/main.ts'), ...argv], options);

describe('real files a writer has', () => {
  let root: string;
  afterEach(() => removeDir(root));

  it('reads CRLF, old-Mac and mixed line endings and a UTF-8 byte-order mark, with lines as the editor shows them', async () => {
    root = makeCampaign({
      'crlf.md': '# Harbor\r\n\r\nThe harbormoot keeps the ledgers.\r\n\r\n## Docks\r\n\r\nShips dock at dawn by the quaywright.\r\n',
      'mixed.md': '# Mixed\r\nlanterns of the glimmerhall\nmore lanterns\r\rthe old mac line\n',
      'bom.md': Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('---\ntitle: The Brass Automaton\nclass: reference\n---\n# Bommed\n\nThe cogsinger hums.\n')]),
    });
    const result = await index(root);
    assert.equal(result.code, EXIT.ok, result.stdout);
    assert.match(result.stdout, /3 indexed, .* 0 with errors/);
    assert.deepEqual(await found(root, 'quaywright'), ['crlf.md']);
    assert.deepEqual(await found(root, 'glimmerhall'), ['mixed.md']);
    const bom = (await sources(root)).get('bom.md')!;
    assert.deepEqual([bom.title, bom.class], ['The Brass Automaton', 'reference'], 'front matter after a byte-order mark is read');
    const passages = await runCaptured(['passages', 'crlf.md', '--campaign', root], '/');
    assert.match(passages.stdout, /lines 3–7/, 'CRLF counts one line per line break');
  });

  it('names the encoding of UTF-16 (with or without a byte-order mark) and Windows-1252 files, and indexes the rest', async () => {
    const text = '# Sixteen\n\nThe tidewitch speaks.\n';
    root = makeCampaign({
      'utf16-bom.md': Buffer.from(`\ufeff${text}`, 'utf16le'),
      'utf16le.md': Buffer.from(text, 'utf16le'),
      'utf16be.md': Buffer.from(text, 'utf16le').swap16(),
      'word-export.md': Buffer.from('# Caf\xe9 Notes\n\nThe \x93smuggler\x92s\x94 den.\n', 'latin1'),
      'good.md': '# Good\n\nThe saltreeve waits.\n',
    });
    const result = await index(root);
    assert.equal(result.code, EXIT.findings);
    assert.match(result.stdout, /error +utf16-bom\.md:1 +file is UTF-16, not UTF-8; re-save it as UTF-8/);
    assert.match(result.stdout, /error +utf16le\.md:1 +file is UTF-16 \(little-endian, without a byte-order mark\), not UTF-8/);
    assert.match(result.stdout, /error +utf16be\.md:1 +file is UTF-16 \(big-endian, without a byte-order mark\), not UTF-8/);
    assert.match(result.stdout, /error +word-export\.md:1 +file is not valid UTF-8 \(first bad byte on line 1\): byte 0xE9 after '# Caf', which Windows-1252 reads as 'é'/);
    assert.deepEqual(await found(root, 'saltreeve'), ['good.md']);
  });

  it('names the encoding of a campaign.yaml saved as UTF-16 or Windows-1252, and an empty one, instead of misreading it', async () => {
    root = makeCampaign({ 'good.md': '# Good\n\nThe saltreeve waits.\n' });
    const yaml = path.join(root, 'campaign.yaml');
    for (const [content, reason] of [
      [Buffer.from('\ufeffid: test\ntitle: Test\n', 'utf16le'), /campaign\.yaml:1 +error +file is UTF-16, not UTF-8; re-save it as UTF-8/],
      [Buffer.from('id: test\ntitle: Caf\xe9 Tales\n', 'latin1'), /campaign\.yaml:2 +error +file is not valid UTF-8 \(first bad byte on line 2\): byte 0xE9 after 'title: Caf'/],
      [Buffer.alloc(0), /campaign\.yaml +error +title: missing: a campaign\.yaml needs at least a title: line/],
    ] as const) {
      fs.writeFileSync(yaml, content);
      const result = await runCaptured(['lint', root], '/');
      assert.equal(result.code, EXIT.findings, result.stdout);
      assert.match(result.stdout, reason);
    }
  });

  it('front matter as writers write it: none, only front matter, TOML, and --- as a scene break on line 1', async () => {
    root = makeCampaign({
      'empty.md': '',
      'only-front-matter.md': '---\ntitle: Placeholder\n---\n',
      'hugo.md': '+++\ntitle = "The Toml Fox"\nclass = "reference"\ntags = ["fox", "woods"]\nclas = "typo"\n[params]\nclass = "canon"\n+++\n# Fox\n\nThe vulpinmark runs.\n',
      'hugo-odd.md': '+++\nclass = """\ncanon"""\n+++\nThe oddtoml line.\n',
      'scene.md': '---\n\nThe story opens with a rule on the moorwatch.\n\nLater the hounds bay.\n',
      'never-closed.md': '---\ntitle: Forgot to close\nThe nocloseword paragraph.\n',
      'good.md': '# Good\n\nThe saltreeve waits.\n',
    });
    const result = await index(root);
    assert.equal(result.code, EXIT.findings);
    assert.match(result.stdout, /warning +empty\.md +file is empty: nothing to index/);
    assert.match(result.stdout, /warning +only-front-matter\.md +file has no text to index/);
    assert.match(result.stdout, /warning +hugo\.md:5 +unknown front matter key 'clas' is ignored; did you mean 'class'\?/);
    assert.match(result.stdout, /error +never-closed\.md:1 +front matter opened with --- on line 1 is never closed by a --- line/);
    const listed = await sources(root);
    const hugo = listed.get('hugo.md')!;
    assert.deepEqual([hugo.title, hugo.class], ['The Toml Fox', 'reference'], "TOML's class is read; the [params] table's is not the file's");
    assert.equal(listed.get('hugo-odd.md')!.class, 'canon', 'a multi-line string is read as TOML reads it');
    assert.deepEqual(await found(root, 'vulpinmark'), ['hugo.md']);
    assert.deepEqual(await found(root, 'moorwatch'), ['scene.md'], 'a --- opening prose is a thematic break, and the file is indexed');
    assert.equal(listed.get('scene.md')!.issues.length, 0);
    assert.deepEqual(await found(root, 'saltreeve'), ['good.md']);
  });

  it('indexes prose between two --- scene breaks when the file opens with one', async () => {
    root = makeCampaign({ 'scenes.md': '---\n\nThe scene opens on the moorwatch.\n\n---\n\nLater the houndbay echoes.\n' });
    const result = await index(root);
    assert.equal(result.code, EXIT.ok, result.stdout);
    assert.deepEqual(await found(root, 'moorwatch'), ['scenes.md'], 'prose between scene breaks is not front matter');
    assert.deepEqual(await found(root, 'houndbay'), ['scenes.md']);
  });

  it('refuses a 5 MB file over the size cap by its size alone, and indexes it once the cap is raised', async function () {
    this.timeout(180_000); // a real 5 MB parse, on a machine other work shares
    const paragraph = (i: number) => `The caravan ${i} crosses the salt flats with spice and silk, and the wind carries sand over the old roads.`;
    const prose = Array.from({ length: 48_000 }, (_, i) => paragraph(i)).join('\n\n');
    root = makeCampaign({ 'caravans.md': `# Caravans\n\n${prose}\n\nAt the end lies the dunesea.\n`, 'good.md': '# Good\n\nThe saltreeve waits.\n' });
    const capped = await index(root);
    assert.equal(capped.code, EXIT.findings);
    assert.match(capped.stdout, /error +caravans\.md +file is 5\.\d MiB, over the campaign's 1\.0 MiB cap \(size_cap_bytes in campaign\.yaml\); split it or raise the cap/);
    assert.deepEqual(await found(root, 'saltreeve'), ['good.md']);
    fs.appendFileSync(path.join(root, 'campaign.yaml'), 'size_cap_bytes: 8000000\n');
    const raised = await index(root);
    assert.equal(raised.code, EXIT.ok, raised.stdout);
    assert.deepEqual(await found(root, 'dunesea'), ['caravans.md']);
  });

  it('indexes very long lines, deep nesting, HTML, Obsidian callouts and embeds, footnotes and tables, fetching nothing they name', async () => {
    const { server, port } = await listenOnLoopback();
    const fetched: string[] = [];
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      fetched.push(req.url ?? '');
      res.end();
    });
    const url = `http://127.0.0.1:${port}`;
    try {
      root = makeCampaign({
        'long-line.md': `# Long\n\n${'word '.repeat(60_000)}longlinemark\n`,
        'no-spaces.md': `# Unbroken\n\n${'x'.repeat(200_000)}\n\nThe unbrokenmark follows.\n`,
        'nested.md': `# Nested\n\n${Array.from({ length: 150 }, (_, i) => `${'  '.repeat(i)}- level ${i} of the nestwell\n`).join('')}\n${'> '.repeat(300)}deepquotemark\n`,
        'html.md': `# Gate\n\n<script>fetch("${url}/script")</script>\n\n<img src="${url}/pixel.png">\n\n![map](${url}/map.png)\n\n<div>\nThe gatewarden of the duke.\n</div>\n`,
        'obsidian.md': `# Lighthouse\n\n> [!note] The beaconward\n> The keeper is blind.\n\n![[map.png]]\n![[${url}/embed.png]]\n![[Other Page#Heading]]\n`,
        'notes.md': '# Relic\n\nThe relic[^1] is cursed.\n\n[^1]: Found in the barrowdeep.\n',
        'table.md': '# Commands\n\n| cmd | what |\n|---|---|\n| `a|b` | pipemark in code |\n| x \\| y | escaped |\n',
      });
      const result = await index(root);
      assert.equal(result.code, EXIT.ok, result.stdout);
      for (const [word, file] of [
        ['longlinemark', 'long-line.md'],
        ['unbrokenmark', 'no-spaces.md'],
        ['nestwell', 'nested.md'],
        ['deepquotemark', 'nested.md'],
        ['gatewarden', 'html.md'],
        ['beaconward', 'obsidian.md'],
        ['barrowdeep', 'notes.md'],
        ['pipemark', 'table.md'],
      ]) {
        assert.deepEqual(await found(root, word!), [file], word);
      }
      assert.equal((await runCaptured(['context', 'I knock at the gate of the gatewarden', '--campaign', root], '/')).code, EXIT.ok);
      assert.equal((await runCaptured(['lint', root], '/')).code, EXIT.ok);
      assert.deepEqual(fetched, [], 'nothing a file names is fetched');
    } finally {
      await closeLoopback(server);
    }
  });

  it('file and folder names in any script, with spaces and #, a folder named like a file, a name that is not UTF-8, one with a line break', async () => {
    root = makeCampaign({
      'emoji 🐉 dragon.md': '# 🐉 Dragon 龍\n\nThe wyrmkeep sleeps under 東京.\n',
      '名前/人物.md': '# 人物\n\n侍 guards the shirokeep.\n',
      'with space #hash.md': '# Hash\n\nThe hashmoot tavern.\n',
      'x.md/inner.md': '# Inner\n\nInside the foldermark.\n',
    });
    const result = await index(root);
    assert.equal(result.code, EXIT.ok, result.stdout);
    assert.match(result.stdout, /4 files — 4 indexed/);
    assert.deepEqual(await found(root, 'wyrmkeep'), ['emoji 🐉 dragon.md']);
    assert.deepEqual(await found(root, 'shirokeep'), ['名前/人物.md']);
    assert.deepEqual(await found(root, 'hashmoot'), ['with space #hash.md']);
    assert.deepEqual(await found(root, 'foldermark'), ['x.md/inner.md']);
    const passages = await runCaptured(['passages', 'with space #hash.md', '--campaign', root], '/');
    assert.equal(passages.code, EXIT.ok, passages.stdout);
    // A name in Latin-1 bytes, as an old zip unpacks it: no UTF-8 name can open it.
    fs.writeFileSync(Buffer.from(path.join(root, 'caf\xe9.md'), 'latin1'), '# Cafe\n\nThe latinname file.\n');
    const latin = await index(root);
    assert.equal(latin.code, EXIT.findings);
    assert.match(latin.stdout, /error +caf\uFFFD\.md +its name is not valid UTF-8 \(saved by a system using another encoding\), so it cannot be opened by that name; rename it/);
    // A line break in a name would print as two lines, the second one forged by whoever named the file.
    writeFile(root, 'notes.md\n  error    canon.md  forged.md', '---\nclass: lore\n---\nThe forgedname file.\n');
    const forged = await index(root);
    assert.match(forged.stdout, /error +notes\.md\\u000a {2}error {4}canon\.md {2}forged\.md:2 +front matter 'class' is 'lore'/);
    assert.doesNotMatch(forged.stdout, /^ +error +canon\.md/m, 'no line is forged');
    const listed = await runCaptured(['sources', root], '/');
    assert.match(listed.stdout, /notes\.md\\u000a {2}error {4}canon\.md/);
    assert.deepEqual(await found(root, 'wyrmkeep'), ['emoji 🐉 dragon.md'], 'the other files stay indexed');
  });

  it('symlinks: one inside is read once, outside and broken ones are named and refused, loops end, a pipe does not hang', async () => {
    root = makeCampaign({ 'harbor.md': '# Harbor\n\nThe harbormoot meets.\n' });
    const outside = makeCampaign({ 'secret.md': '# Secret\n\nThe outsidemark must not leak.\n' });
    try {
      fs.symlinkSync('harbor.md', path.join(root, 'link-to-harbor.md'));
      fs.symlinkSync(path.join(outside, 'secret.md'), path.join(root, 'leak.md'));
      fs.symlinkSync(outside, path.join(root, 'shared'));
      fs.symlinkSync('loop-b.md', path.join(root, 'loop-a.md'));
      fs.symlinkSync('loop-a.md', path.join(root, 'loop-b.md'));
      fs.symlinkSync('nowhere.md', path.join(root, 'broken.md'));
      fs.symlinkSync('.', path.join(root, 'self'));
      fs.mkdirSync(path.join(root, 'deeper'));
      fs.symlinkSync('..', path.join(root, 'deeper', 'up'));
      execFileSync('mkfifo', [path.join(root, 'pipe.md')]);
      writeFile(root, '.git/notes.md', '# Git\n\nThe gitmark.\n');
      writeFile(root, 'node_modules/pkg/readme.md', '# Package\n\nThe modulemark.\n');
      const result = await index(root);
      assert.equal(result.code, EXIT.findings);
      assert.match(result.stdout, /warning +link-to-harbor\.md +the same file as harbor\.md \(reached through a symlink\), indexed under that name; not indexed twice/);
      assert.match(result.stdout, /error +leak\.md +symlink points outside the campaign \(to .*secret\.md\); refused/);
      assert.match(result.stdout, /error +shared +symlink points outside the campaign/);
      assert.match(result.stdout, /error +loop-a\.md +symlink loops back on itself/);
      assert.match(result.stdout, /error +broken\.md +symlink leads nowhere/);
      assert.deepEqual(await found(root, 'harbormoot'), ['harbor.md']);
      assert.deepEqual(await found(root, 'outsidemark'), []);
      const listed = await sources(root);
      assert.deepEqual(
        [...listed.keys()].filter((p) => /pipe|git|node_modules|self|deeper/.test(p)),
        [],
        'a pipe, .git, node_modules and looping folders are not sources',
      );
    } finally {
      removeDir(outside);
    }
  });

  it('a symlink that sorts before its target is the duplicate, not the file it leads to, and stays so as the file changes', async () => {
    root = makeCampaign({
      'z-real.md': '# Harbor\n\nThe harbormoot meets.\n',
      'z-lore/mara.md': '# Mara\n\nSister Mara keeps the cryptkey.\n',
      'lore-copy.md': '# Copy\n\nA true copy, not a link, of the longshanty.\n',
      'zz-copy.md': '# Copy\n\nA true copy, not a link, of the longshanty.\n',
    });
    fs.symlinkSync('z-real.md', path.join(root, 'a-link.md'));
    fs.symlinkSync('z-lore', path.join(root, 'a-lore'));
    const first = await index(root);
    assert.equal(first.code, EXIT.ok, first.stdout);
    assert.match(first.stdout, /warning +a-link\.md +the same file as z-real\.md \(reached through a symlink\), indexed under that name; not indexed twice/);
    assert.match(first.stdout, /warning +a-lore\/mara\.md +the same file as z-lore\/mara\.md \(reached through a symlink\)/);
    assert.match(first.stdout, /warning +zz-copy\.md +same content as lore-copy\.md/, 'two real files: the first in path order still holds');
    const states = (listed: Map<string, Listed>) => Object.fromEntries([...listed].map(([p, s]) => [p, s.lexicalState]));
    const expected = { 'a-link.md': 'duplicate', 'a-lore/mara.md': 'duplicate', 'lore-copy.md': 'ready', 'z-lore/mara.md': 'ready', 'z-real.md': 'ready', 'zz-copy.md': 'duplicate' };
    assert.deepEqual(states(await sources(root)), expected);
    assert.deepEqual(await found(root, 'harbormoot'), ['z-real.md']);
    assert.deepEqual(await found(root, 'cryptkey'), ['z-lore/mara.md']);

    // Edited through the link, as an editor opening either name writes the one file.
    fs.writeFileSync(path.join(root, 'a-link.md'), '# Harbor\n\nThe harbormoot meets at the tidegate.\n');
    const second = await index(root);
    assert.equal(second.code, EXIT.ok, second.stdout);
    assert.deepEqual(states(await sources(root)), expected);
    assert.deepEqual(await found(root, 'tidegate'), ['z-real.md']);
  });

  it('a damaged index (a half-copied file, a sync conflict) is moved aside, named, and rebuilt from the files by the command that finds it', async () => {
    root = makeCampaign({ 'harbor.md': '# Harbor\n\nThe harbormoot meets.\n' });
    assert.equal((await index(root)).code, EXIT.ok);
    const indexPath = path.join(root, '.storyteller', 'index.db');
    const damage = (text: string) => {
      for (const suffix of ['-wal', '-shm']) fs.rmSync(`${indexPath}${suffix}`, { force: true });
      fs.writeFileSync(indexPath, text);
    };
    damage('SQLite format 3\0 but not really: the rest of the file never arrived');
    const search = await runEntry(['search', 'harbormoot', '--campaign', root]);
    assert.equal(search.code, EXIT.ok, search.stderr);
    assert.match(search.stderr, /^storyteller search: the index was damaged; it was moved to .*index\.db\.damaged-[\dT-]+Z and rebuilt from the campaign's files\n$/);
    assert.match(search.stdout, /1 result\(s\) for "harbormoot"[^]*harbor\.md/, 'answered from the files, not from an empty index');
    assert.equal(fs.readdirSync(path.dirname(indexPath)).filter((f) => f.startsWith('index.db.damaged-')).length, 1, 'the damaged file is kept aside, not deleted');
    const next = await runEntry(['sources', root]);
    assert.equal(next.code, EXIT.ok, next.stderr);
    assert.equal(next.stderr, '', 'the next command reads the rebuilt index as it is');
    assert.match(next.stdout, /1 sources, 1 retrievable passages/);
    damage('damaged again');
    const rebuilt = await index(root);
    assert.equal(rebuilt.code, EXIT.ok, rebuilt.stdout);
    assert.match(rebuilt.stderr, /storyteller index: the index was damaged; it was moved to .*index\.db\.damaged-.* and rebuilt from the campaign's files/);
    assert.deepEqual(await found(root, 'harbormoot'), ['harbor.md']);
  });

  it('an index left empty (a damaged one moved aside by a process that then stopped) is built from the files before a read answers', async () => {
    root = makeCampaign({ 'harbor.md': '# Harbor\n\nThe harbormoot meets.\n', 'crypt.md': '# Crypt\n\nThe bronze door of the cryptkeep.\n' });
    assert.equal((await index(root)).code, EXIT.ok);
    const indexPath = path.join(root, '.storyteller', 'index.db');
    for (const suffix of ['-wal', '-shm']) fs.rmSync(`${indexPath}${suffix}`, { force: true });
    fs.writeFileSync(indexPath, 'damaged');
    // What the extension or an older CLI leaves when stopped right after moving a damaged index aside.
    const moved = await runNode(['-e', `require('./src/knowledge/indexing/store').KnowledgeStore.open({ id: 'test', indexPath: ${JSON.stringify(indexPath)} }).close()`]);
    assert.equal(moved.code, 0, moved.stderr);
    assert.equal(fs.readdirSync(path.dirname(indexPath)).filter((f) => f.startsWith('index.db.damaged-')).length, 1);
    const context = await runEntry(['context', 'the bronze door', '--campaign', root]);
    assert.equal(context.code, EXIT.ok, context.stderr);
    assert.equal(context.stderr, "storyteller context: the index held nothing; it was built from the campaign's 2 files\n");
    assert.match(context.stdout, /crypt\.md/);
    assert.deepEqual(await found(root, 'harbormoot'), ['harbor.md']);
  });

  it('names the index folder a read-only campaign cannot write, instead of SQLite\'s words alone', async () => {
    root = makeCampaign({ 'harbor.md': '# Harbor\n\nThe harbormoot meets.\n' });
    assert.equal((await index(root)).code, EXIT.ok);
    fs.chmodSync(path.join(root, '.storyteller'), 0o555);
    try {
      const result = await runEntry(['search', 'harbormoot', '--campaign', root], { unprivileged: true });
      assert.equal(result.code, EXIT.failure);
      assert.match(result.stderr, /index\.db: cannot be written \(.*\); the campaign's \.storyteller folder must be writable by you/);
    } finally {
      fs.chmodSync(path.join(root, '.storyteller'), 0o755);
    }
  });

  it('ends quietly when the program reading its output stops early (| head)', async () => {
    root = makeCampaign(Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`tales/tale-${i}.md`, `# Tale ${i}\n\nThe harbormoot of tale ${i}. ${'More words of the tale. '.repeat(100)}\n`])));
    assert.equal((await index(root)).code, EXIT.ok);
    const result = await runEntry(['search', 'harbormoot', '--campaign', root, '--limit', '100', '--json'], {
      reader: (stdout) => stdout.once('data', () => (stdout as NodeJS.ReadableStream & { destroy(): void }).destroy()),
    });
    assert.equal(result.stderr, '', 'no stack trace');
    assert.equal(result.code, EXIT.ok);
  });

  it('names an unreadable file and an unreadable folder, and indexes everything else', async () => {
    root = makeCampaign({ 'locked.md': '# Locked\n\nThe lockmark.\n', 'vault/inner.md': '# Vault\n\nThe vaultmark.\n', 'open.md': '# Open\n\nThe openmark.\n' });
    fs.chmodSync(path.join(root, 'locked.md'), 0o000);
    fs.chmodSync(path.join(root, 'vault'), 0o000);
    try {
      const result = await runEntry(['index', root, '--workers', '0'], { unprivileged: true });
      assert.equal(result.code, EXIT.findings, result.stdout);
      assert.match(result.stdout, /error +locked\.md +file cannot be read: permission to read it was refused/);
      assert.match(result.stdout, /error +vault +folder cannot be read: permission to read it was refused; none of its files are indexed/);
      assert.match(result.stdout, /1 indexed/);
      // The editor lists a folder moved into the campaign the same way: the readable files despite the locked one.
      const workspace = JSON.stringify(path.join(REPO, 'src/session/workspace.ts'));
      const list = `const { DiskWorkspace } = require(${workspace}); new DiskWorkspace().listFiles(process.argv[1]).then((f) => process.stdout.write(JSON.stringify(f)));`;
      const listed = await runNode(['-e', list, root], { unprivileged: true });
      const names = (JSON.parse(listed.stdout) as string[]).map((f) => path.relative(root, f));
      assert.ok(names.includes('open.md') && names.includes('locked.md'), names.join(', '));
    } finally {
      fs.chmodSync(path.join(root, 'vault'), 0o755);
    }
  });
});
