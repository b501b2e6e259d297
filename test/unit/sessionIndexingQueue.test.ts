import assert from 'node:assert/strict';
import path from 'node:path';
import { IndexingQueue, FILE_DEBOUNCE_MS, type Indexer, type IndexState } from '../../src/session/indexingQueue';
import { ManualClock, MemoryWorkspace } from '../support/memoryWorkspace';

const ROOT = path.resolve('/campaigns/westhaven');

/**
 * A small real indexer over the in-memory workspace: the index maps each source path to its text. Each
 * file of a full import waits at `hold` while one is set, so a test can act while an import is running.
 */
class MemoryIndexer implements Indexer {
  readonly index = new Map<string, string>();
  /** The paths of every single-file pass, in order. */
  readonly passes: string[][] = [];
  imports = { started: 0, finished: 0 };
  clears = 0;
  private hold: { reached: () => void; release: Promise<void> } | undefined;

  constructor(private readonly workspace: MemoryWorkspace) {}

  /** Holds the next full import at its first file; resolves once it is there, with the function that lets it go on. */
  holdImport(): { reached: Promise<void>; release: () => void } {
    let release!: () => void;
    let reached!: () => void;
    const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
    this.hold = { reached, release: new Promise<void>((resolve) => (release = resolve)) };
    return { reached: reachedPromise, release };
  }

  async importAll(signal: AbortSignal, onProgress: (state: IndexState) => void): Promise<void> {
    this.imports.started++;
    const files = (await this.workspace.listFiles(ROOT)).map((f) => this.rel(f)).filter((rel) => this.isCandidate(rel));
    for (const [done, rel] of files.entries()) {
      const hold = this.hold;
      if (hold) {
        this.hold = undefined;
        hold.reached();
        await hold.release;
      }
      signal.throwIfAborted();
      this.index.set(rel, Buffer.from(await this.workspace.readFile(this.workspace.abs(rel))).toString());
      onProgress({ kind: 'indexing', done: done + 1, total: files.length, path: rel });
    }
    for (const rel of this.index.keys()) if (!files.includes(rel)) this.index.delete(rel);
    this.imports.finished++;
  }

  async indexFiles(paths: readonly string[], signal: AbortSignal): Promise<string[]> {
    this.passes.push([...paths]);
    for (const rel of paths) {
      signal.throwIfAborted();
      const text = this.workspace.files.get(this.workspace.abs(rel));
      if (text === undefined) this.index.delete(rel);
      else this.index.set(rel, text);
    }
    return [...paths];
  }

  async rebuildAll(signal: AbortSignal, onProgress: (state: IndexState) => void): Promise<void> {
    this.clears++;
    this.index.clear();
    await this.importAll(signal, onProgress);
  }

  indexedPaths(): string[] {
    return [...this.index.keys()];
  }

  isCandidate(rel: string): boolean {
    return /\.(md|txt)$/.test(rel) && !rel.startsWith('drafts/');
  }

  private rel(file: string): string {
    return path.relative(ROOT, file).split(path.sep).join('/');
  }
}

describe('session indexing queue (in-memory workspace, manual clock)', () => {
  let workspace: MemoryWorkspace;
  let clock: ManualClock;
  let indexer: MemoryIndexer;
  let queue: IndexingQueue;

  beforeEach(() => {
    workspace = new MemoryWorkspace(ROOT);
    clock = new ManualClock();
    indexer = new MemoryIndexer(workspace);
    queue = new IndexingQueue(ROOT, workspace, indexer, { clock });
  });
  afterEach(() => queue.close());

  /** Lets the change handlers (which may stat and list) run, then moves time past the quiet period. */
  const settle = async (): Promise<void> => {
    await new Promise((resolve) => setImmediate(resolve));
    clock.advance(FILE_DEBOUNCE_MS);
    await queue.idle();
  };

  it('turns a burst of saves to one file into one reindex of its last content', async () => {
    for (let i = 1; i <= 5; i++) {
      workspace.write('characters/mara.md', `# Mara\n\nAge: ${30 + i}`);
      clock.advance(FILE_DEBOUNCE_MS - 1);
    }
    assert.equal(indexer.passes.length, 0, 'nothing runs while the file keeps changing');
    await settle();
    assert.deepEqual(indexer.passes, [['characters/mara.md']]);
    assert.equal(indexer.index.get('characters/mara.md'), '# Mara\n\nAge: 35');
  });

  it('debounces per path: a quiet file is indexed while another keeps changing', async () => {
    workspace.write('a.md', 'A');
    clock.advance(FILE_DEBOUNCE_MS / 2);
    workspace.write('b.md', 'B1');
    clock.advance(FILE_DEBOUNCE_MS / 2);
    await queue.idle();
    assert.deepEqual(indexer.passes, [['a.md']]);
    workspace.write('b.md', 'B2');
    await settle();
    assert.deepEqual(indexer.passes, [['a.md'], ['b.md']]);
    assert.equal(indexer.index.get('b.md'), 'B2');
  });

  it('follows a rename: the old path leaves the index and the new one is indexed', async () => {
    workspace.write('places/abbey.md', '# The Old Abbey');
    await settle();
    workspace.rename('places/abbey.md', 'places/old-abbey.md');
    await settle();
    assert.deepEqual([...indexer.index.keys()], ['places/old-abbey.md']);
  });

  it('removes every source under a deleted folder, from one folder event', async () => {
    workspace.write('characters/mara.md', 'Mara');
    workspace.write('characters/aldric.md', 'Aldric');
    workspace.write('places/abbey.md', 'Abbey');
    await settle();
    workspace.delete('characters');
    await settle();
    assert.deepEqual([...indexer.index.keys()], ['places/abbey.md']);
  });

  it('indexes the files of a folder that arrives as one created event', async () => {
    workspace.addFolder('lore', { 'gods.md': 'Gods', 'notes.bin': 'x', 'deep/river.md': 'River' });
    await settle();
    assert.deepEqual([...indexer.index.keys()].sort(), ['lore/deep/river.md', 'lore/gods.md']);
  });

  it("ignores the index's own files: database writes and the .storyteller folder never queue work", async () => {
    for (const rel of ['.storyteller/index.db', '.storyteller/index.db-wal', '.storyteller/play.db-journal', 'index.db', 'play.db-wal', '.storyteller/notes.md']) {
      workspace.touch(rel);
    }
    await settle();
    assert.equal(clock.pending, 0);
    assert.deepEqual(indexer.passes, []);
  });

  it('a rebuild while importing cancels the import; the rebuilt index is whole', async () => {
    for (const name of ['a', 'b', 'c']) workspace.files.set(workspace.abs(`${name}.md`), name);
    const held = indexer.holdImport();
    const first = queue.reindex();
    await held.reached;
    const rebuilt = queue.rebuild();
    held.release();
    assert.equal(await first, false, 'the replaced import does not finish');
    assert.equal(await rebuilt, true);
    assert.deepEqual(indexer.imports, { started: 2, finished: 1 });
    assert.equal(indexer.clears, 1);
    assert.deepEqual([...indexer.index.keys()].sort(), ['a.md', 'b.md', 'c.md']);
    assert.equal(queue.state.kind, 'ready');
  });

  it('close cancels the running import, drops queued work and stops listening', async () => {
    workspace.files.set(workspace.abs('a.md'), 'a');
    const held = indexer.holdImport();
    const running = queue.reindex();
    const queued = queue.reindexFile(workspace.abs('a.md'));
    await held.reached;
    const closed = queue.close();
    held.release();
    await closed;
    assert.equal(await running, false);
    assert.equal(await queued, false);
    assert.deepEqual(indexer.imports, { started: 1, finished: 0 });
    assert.deepEqual(indexer.passes, []);
    workspace.write('b.md', 'b');
    await settle();
    assert.equal(clock.pending, 0, 'a closed queue schedules nothing');
    assert.deepEqual(indexer.passes, []);
  });

  it('runs one task at a time: a save during a full import is indexed after it, with its new text', async () => {
    workspace.files.set(workspace.abs('a.md'), 'old');
    const held = indexer.holdImport();
    const running = queue.reindex();
    await held.reached;
    workspace.write('a.md', 'new');
    clock.advance(FILE_DEBOUNCE_MS);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(indexer.passes, [], 'the save waits for the import');
    held.release();
    assert.equal(await running, true);
    await queue.idle();
    assert.deepEqual(indexer.passes, [['a.md']]);
    assert.equal(indexer.index.get('a.md'), 'new');
  });
});
