import path from 'node:path';
import { Emitter, type FileChange, type Workspace } from '../../src/session/workspace';
import type { Clock } from '../../src/session/indexingQueue';

/** Files held in memory, with the change events an editor's watcher would send. */
export class MemoryWorkspace implements Workspace {
  readonly files = new Map<string, string>();
  private readonly changes = new Emitter<FileChange>();
  readonly onDidChange = this.changes.event;

  constructor(readonly root: string) {}

  abs(rel: string): string {
    return path.join(this.root, ...rel.split('/'));
  }

  /** Writes a file and sends the event the watcher would (created or changed). */
  write(rel: string, text: string): void {
    const file = this.abs(rel);
    const kind = this.files.has(file) ? 'changed' : 'created';
    this.files.set(file, text);
    this.changes.fire({ kind, path: file });
  }

  /** Deletes a file or a whole folder; like a real watcher, a folder arrives as one event. */
  delete(rel: string): void {
    const target = this.abs(rel);
    for (const file of [...this.files.keys()]) if (file === target || file.startsWith(target + path.sep)) this.files.delete(file);
    this.changes.fire({ kind: 'deleted', path: target });
  }

  /** A folder moved in with files inside: one created event for the folder. */
  addFolder(rel: string, files: Record<string, string>): void {
    for (const [name, text] of Object.entries(files)) this.files.set(this.abs(`${rel}/${name}`), text);
    this.changes.fire({ kind: 'created', path: this.abs(rel) });
  }

  /** A rename: deleted at the old path, created at the new one. */
  rename(from: string, to: string): void {
    const text = this.files.get(this.abs(from))!;
    this.delete(from);
    this.write(to, text);
  }

  /** An event with no change to the files (the index's own database writes). */
  touch(rel: string): void {
    this.changes.fire({ kind: 'changed', path: this.abs(rel) });
  }

  listFiles(folder: string): Promise<string[]> {
    return Promise.resolve([...this.files.keys()].filter((f) => f.startsWith(folder + path.sep)).sort());
  }

  readFile(file: string): Promise<Uint8Array> {
    const text = this.files.get(file);
    return text === undefined ? Promise.reject(new Error(`${file}: no such file`)) : Promise.resolve(Buffer.from(text));
  }

  stat(file: string): Promise<{ type: 'file' | 'directory' } | undefined> {
    if (this.files.has(file)) return Promise.resolve({ type: 'file' });
    const isFolder = [...this.files.keys()].some((f) => f.startsWith(file + path.sep));
    return Promise.resolve(isFolder ? { type: 'directory' } : undefined);
  }
}

/** Timers that run only when the test moves time on. */
export class ManualClock implements Clock {
  private now = 0;
  private nextId = 1;
  private readonly timers = new Map<number, { at: number; run: () => void }>();

  setTimeout(run: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.set(id, { at: this.now + ms, run });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  get pending(): number {
    return this.timers.size;
  }

  /** Moves time on by `ms`, running every timer that falls due, in order. */
  advance(ms: number): void {
    this.now += ms;
    for (;;) {
      const due = [...this.timers.entries()].filter(([, t]) => t.at <= this.now).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) return;
      this.timers.delete(due[0]);
      due[1].run();
    }
  }
}
