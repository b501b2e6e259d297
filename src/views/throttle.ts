import type * as vscode from 'vscode';

/**
 * How often the views redraw while a library is indexed: import progress, and the views that recompute
 * everything from the index (Problems, canon conflicts) while files are indexed one after another. Each
 * redraw re-reads the index on the extension host and sends the window new content to render.
 */
export const INDEX_CHANGE_REDRAW_MS = 500;

/**
 * `work` for a burst of calls, at most once every `ms`: the first call after a quiet spell runs it at once
 * (a single save is shown without delay), later ones within `ms` fold into one run when `ms` has passed,
 * so the last call is always followed by a run.
 */
export function throttled(work: () => void, ms: number): (() => void) & vscode.Disposable {
  let lastRun = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  let disposed = false;
  const run = (): void => {
    timer = undefined;
    lastRun = Date.now();
    work();
  };
  const call = (): void => {
    if (timer || disposed) return;
    const wait = lastRun + ms - Date.now();
    if (wait <= 0) run();
    else timer = setTimeout(run, wait);
  };
  return Object.assign(call, {
    dispose: () => {
      disposed = true;
      clearTimeout(timer);
    },
  });
}
