import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { THIS_PROCESS, WriteConflictError, createFile, finishInterruptedWrites, replaceFile, writeFileSet } from '../../src/knowledge/files';
import { REPO_ROOT } from '../support/corpora';
import { until } from './attacks/attackSupport';

/**
 * The one writer, killed while it writes (a separate process, SIGKILL at varied moments): a file holds its
 * old content or its new one, never a part; a set ends none or all once the next run finishes it.
 */

const WRITER = path.join(REPO_ROOT, 'src', 'knowledge', 'files', 'index.ts');
/** Generation n's content: its number, then a body whose length depends on n, so a part of one is never another. */
const content = (n: number) => `gen ${n}\n${'x'.repeat(100_000 + (n % 7) * 30_000)}\n`;
const generationOf = (text: string): number => {
  const n = Number(/^gen (\d+)\n/.exec(text)?.[1]);
  assert.equal(text, content(n), `a whole generation, not a part (${text.length} bytes)`);
  return n;
};

/** Starts a process that writes generation after generation with the writer, printing each number once it is written. */
function writeForever(mode: 'file' | 'set', root: string) {
  const script = `
    const fs = require('node:fs');
    const path = require('node:path');
    const { replaceFile, writeFileSet } = require(${JSON.stringify(WRITER)});
    const content = ${content.toString()};
    const root = ${JSON.stringify(root)};
    const files = ['a.md', 'b.md', 'deep/er/c.md'];
    for (let n = 1; ; n++) {
      if (${JSON.stringify(mode)} === 'file') replaceFile(path.join(root, 'a.md'), content(n));
      else writeFileSet(root, path.join(root, '.storyteller'), files.map((f) => ({ path: f, data: content(n), ...(n === 1 ? { create: true } : { expect: content(n - 1) }) })));
      fs.writeSync(1, n + '\\n');
    }`;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let written = 0;
  let err = '';
  child.stdout.on('data', (c: Buffer) => (written = Math.max(written, ...c.toString().trim().split('\n').map(Number))));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exit = new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_code, signal) => resolve(signal)));
  return { child, written: () => written, err: () => err, exit };
}

const leftovers = (root: string): string[] =>
  (fs.readdirSync(root, { recursive: true }) as string[]).filter((f) => f.endsWith('.storyteller-tmp') || f.split(path.sep).includes('writes') && f.endsWith('.json'));

describe('the one writer', function () {
  this.timeout(120_000);
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-writer-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  // Kills after 0 to 40 finished writes, so they land in every step of one: writing the temp file, flushing, renaming.
  it('killed while rewriting a file, again and again: the file always holds a whole old or new content, never nothing', async () => {
    for (const after of [0, 1, 2, 5, 9, 14, 20, 27, 35, 40]) {
      const run = writeForever('file', dir);
      await until(() => run.written() >= after && fs.existsSync(path.join(dir, 'a.md')) || run.child.exitCode !== null, `${after} writes are done`);
      run.child.kill('SIGKILL');
      assert.equal(await run.exit, 'SIGKILL', run.err());
      const n = generationOf(fs.readFileSync(path.join(dir, 'a.md'), 'utf8'));
      assert.ok(n >= run.written(), `generation ${n} is at least the last reported one`);
    }
  });

  it('killed while writing a set of three files: after the next run finishes it, all three hold the same generation', async () => {
    let sawUnfinished = false;
    for (const [i, after] of [0, 0, 1, 2, 3, 5, 8, 12, 17, 23].entries()) {
      const root = path.join(dir, `run-${i}`);
      fs.mkdirSync(root);
      const run = writeForever('set', root);
      await until(() => run.written() >= after || run.child.exitCode !== null, `${after} sets are written`);
      run.child.kill('SIGKILL');
      assert.equal(await run.exit, 'SIGKILL', run.err());
      if (leftovers(root).length > 0) sawUnfinished = true;
      finishInterruptedWrites(root, path.join(root, '.storyteller'));
      assert.deepEqual(leftovers(root), [], 'no staged file or journal is left');
      const present = ['a.md', 'b.md', 'deep/er/c.md'].filter((f) => fs.existsSync(path.join(root, f)));
      if (present.length === 0) {
        assert.ok(!fs.existsSync(path.join(root, 'deep')), 'the folders the undone set made are gone');
        continue;
      }
      assert.equal(present.length, 3, 'none or all of the set');
      const generations = present.map((f) => generationOf(fs.readFileSync(path.join(root, f), 'utf8')));
      assert.equal(new Set(generations).size, 1, `one generation in all three: ${generations.join(', ')}`);
      assert.ok(generations[0]! >= run.written());
    }
    assert.ok(sawUnfinished, 'some kill landed inside a set');
  });

  it('create-only: never writes over a file, a link or a dangling link; the name is free again after a failure', () => {
    const file = path.join(dir, 'new.md');
    createFile(file, 'first');
    assert.throws(() => createFile(file, 'second'), { code: 'EEXIST' });
    assert.equal(fs.readFileSync(file, 'utf8'), 'first');
    fs.symlinkSync(path.join(dir, 'nowhere.md'), path.join(dir, 'dangling.md'));
    assert.throws(() => createFile(path.join(dir, 'dangling.md'), 'x'), { code: 'EEXIST' });
    assert.ok(!fs.existsSync(path.join(dir, 'nowhere.md')), 'nothing was written through the link');
    assert.deepEqual(leftovers(dir), []);
    replaceFile(file, 'third');
    assert.equal(fs.readFileSync(file, 'utf8'), 'third');
  });

  it('a set whose file changed, or whose new file appeared, writes nothing and names the file', () => {
    fs.writeFileSync(path.join(dir, 'a.md'), 'A as read');
    fs.writeFileSync(path.join(dir, 'a.md'), 'A changed by hand');
    const set = [
      { path: 'new/b.md', data: 'B', create: true },
      { path: 'a.md', data: 'A edited', expect: 'A as read' },
    ];
    assert.throws(() => writeFileSet(dir, path.join(dir, '.storyteller'), set), (e: unknown) => e instanceof WriteConflictError && /^a\.md changed while this was being written/.test(e.message));
    assert.equal(fs.readFileSync(path.join(dir, 'a.md'), 'utf8'), 'A changed by hand');
    assert.ok(!fs.existsSync(path.join(dir, 'new')), 'no folder or file of the set is left');
    assert.deepEqual(leftovers(dir), []);
  });

  it('finishing a killed set leaves a file changed by hand since as it is, and a journal never moves a file outside the campaign', () => {
    const dataDir = path.join(dir, '.storyteller');
    const journals = path.join(dataDir, 'writes');
    fs.mkdirSync(journals, { recursive: true });
    fs.writeFileSync(path.join(dir, 'a.md'), 'edited by hand after the kill');
    fs.writeFileSync(path.join(dir, '.a.md.0123456789ab.storyteller-tmp'), 'staged');
    fs.writeFileSync(path.join(dir, '.b.md.0123456789ab.storyteller-tmp'), 'staged b');
    const outside = path.join(os.tmpdir(), `st-writer-outside-${process.pid}.md`);
    const dead = JSON.stringify({ pid: 2 ** 22 + 7, host: os.hostname() });
    const files = [
      { path: 'a.md', temp: '.a.md.0123456789ab.storyteller-tmp', create: false, before: 'f'.repeat(64), after: 'e'.repeat(64) },
      { path: 'b.md', temp: '.b.md.0123456789ab.storyteller-tmp', create: true, after: 'e'.repeat(64) },
      { path: `../${path.basename(outside)}`, temp: '.a.md.0123456789ab.storyteller-tmp', create: true, after: 'e'.repeat(64) },
    ];
    fs.writeFileSync(path.join(journals, 'dead.json'), JSON.stringify({ owner: dead, state: 'commit', folders: [], files }));
    fs.writeFileSync(path.join(journals, 'alive.json'), JSON.stringify({ owner: THIS_PROCESS, state: 'commit', folders: [], files: [] }));
    const done = finishInterruptedWrites(dir, dataDir);
    assert.deepEqual(done.finished, ['b.md']);
    assert.deepEqual(done.skipped, ['a.md: changed since it was to be written; left as it is']);
    assert.equal(fs.readFileSync(path.join(dir, 'a.md'), 'utf8'), 'edited by hand after the kill');
    assert.equal(fs.readFileSync(path.join(dir, 'b.md'), 'utf8'), 'staged b');
    assert.ok(!fs.existsSync(outside));
    assert.deepEqual(fs.readdirSync(journals), ['alive.json'], 'a live writer\'s set is left to it');
  });
});
