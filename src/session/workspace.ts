import fs from 'node:fs';
import path from 'node:path';

/** What happened to a path: a folder arrives as one event for everything under it. */
export interface FileChange {
  kind: 'created' | 'changed' | 'deleted';
  /** Absolute path. */
  path: string;
}

export interface Listener<T> {
  (event: T): void;
}

export interface Subscription {
  dispose(): void;
}

/**
 * The files a campaign session sees, in the shape of the markdown language service's workspace: the core
 * asks it for files and stats and listens to its change events; the VS Code adapter (or a test's in-memory
 * workspace) only supplies them.
 */
export interface Workspace {
  /** Every file under `folder` (absolute paths), recursively; empty when the folder is gone. */
  listFiles(folder: string): Promise<string[]>;
  readFile(file: string): Promise<Uint8Array>;
  /** undefined when nothing is there. */
  stat(file: string): Promise<{ type: 'file' | 'directory' } | undefined>;
  onDidChange(listener: Listener<FileChange>): Subscription;
}

/** A plain event source: listeners run in order, and one that throws does not stop the others. */
export class Emitter<T> {
  private readonly listeners = new Set<Listener<T>>();

  readonly event = (listener: Listener<T>): Subscription => {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };

  fire(value: T): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(value);
      } catch (error) {
        console.error(error);
      }
    }
  }

  dispose(): void {
    this.listeners.clear();
  }
}

/**
 * The disk as a workspace. It has no watcher of its own: the CLI reads once, and the extension forwards
 * VS Code's watcher events with `fire`.
 */
export class DiskWorkspace implements Workspace {
  private readonly changes = new Emitter<FileChange>();
  readonly onDidChange = this.changes.event;

  fire(change: FileChange): void {
    this.changes.fire(change);
  }

  /**
   * Folder by folder: one that cannot be read (no permission) is passed over, not the whole listing lost
   * with it (a recursive readdir fails entirely); the next full index run names it.
   */
  async listFiles(folder: string): Promise<string[]> {
    let entries: fs.Dirent[];
    try {
      entries = await fs.promises.readdir(folder, { withFileTypes: true });
    } catch {
      return [];
    }
    const files: string[] = [];
    for (const entry of entries) {
      const full = path.join(folder, entry.name);
      if (entry.isDirectory()) files.push(...(await this.listFiles(full)));
      else if (entry.isFile()) files.push(full);
    }
    return files;
  }

  readFile(file: string): Promise<Uint8Array> {
    return fs.promises.readFile(file);
  }

  async stat(file: string): Promise<{ type: 'file' | 'directory' } | undefined> {
    try {
      const stat = await fs.promises.stat(file);
      return { type: stat.isDirectory() ? 'directory' : 'file' };
    } catch {
      return undefined;
    }
  }
}
