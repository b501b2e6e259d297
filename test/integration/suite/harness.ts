// Helpers for suite files running inside the extension host.
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { AFTER_STEPS_BUDGET_MS, HARNESS_CONFIG_ENV, STEPS_BUDGET_MS, type DriverStep, type HarnessConfig, type ScreenshotReply, type ScreenshotRequest } from '../protocol';
import { within } from '../within';

export { within };

export const EXTENSION_ID = 'storyteller.adventure-storyteller';

export function harnessConfig(): HarnessConfig {
  const file = process.env[HARNESS_CONFIG_ENV];
  if (!file) throw new Error(`${HARNESS_CONFIG_ENV} is not set: the suite runs only under test/integration/run.ts`);
  return JSON.parse(fs.readFileSync(file, 'utf8')) as HarnessConfig;
}

let sequence = 0;

/**
 * Asks the driver for a screenshot of the workbench (and of every webview frame) named `name`, and
 * returns what it saw. Waits a moment first so the workbench has painted the last change. The steps have
 * `stepsBudgetMs` to find their elements and act (typing key by key on a loaded machine needs more).
 */
export async function capture(name: string, settleMs = 500, steps: DriverStep[] = [], locate: string[] = [], stepsBudgetMs = STEPS_BUDGET_MS): Promise<ScreenshotReply> {
  await sleep(settleMs);
  const config = harnessConfig();
  const base = path.join(config.requestDir, `${String(++sequence).padStart(2, '0')}-${name.replace(/[^a-z0-9-]+/gi, '-')}`);
  const request: ScreenshotRequest = { name: path.basename(base), steps, locate, stepsDeadline: Date.now() + stepsBudgetMs };
  fs.writeFileSync(`${base}.tmp`, JSON.stringify(request));
  fs.renameSync(`${base}.tmp`, `${base}.request.json`);
  // The driver answers within its two budgets; the margin is its last probe and writing the reply.
  const reply = await waitFor(() => {
    const file = `${base}.reply.json`;
    return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as ScreenshotReply) : undefined;
  }, stepsBudgetMs + AFTER_STEPS_BUDGET_MS + 10_000, `the driver's screenshot ${name}`);
  if (reply.driverError) throw new Error(`driver failed for ${name}: ${reply.driverError}`);
  return reply;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls until `probe` returns something other than undefined/false, or fails naming what it waited for. */
export async function waitFor<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    await sleep(100);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ''}`);
}

/** How long an index may take to do what a test queued; a test that queues the SRD waits in its own terms. */
const INDEX_SETTLE_MS = 45_000;

/** Waits until `index` (one campaign's, or every campaign's) has done what was queued, or fails naming it. */
export function settled(index: { idle(): Promise<void> }, what = 'the campaign index'): Promise<void> {
  return within(index.idle(), INDEX_SETTLE_MS, `${what} to settle`);
}

/** The extension, once VS Code has activated it on its own (by its activation events, not by the test). */
export async function activatedExtension(): Promise<vscode.Extension<unknown>> {
  const extension = vscode.extensions.getExtension(EXTENSION_ID);
  if (!extension) throw new Error(`${EXTENSION_ID} is not installed in this extension host`);
  return waitFor(() => extension.isActive && extension, 30_000, `${EXTENSION_ID} to activate`);
}

/** The text of the webview frames in a reply that contain `marker` (the play panel's inner document). */
export function webviewText(reply: ScreenshotReply, marker: string): string {
  return reply.frames.filter((f) => f.text.includes(marker)).map((f) => f.text).join('\n');
}

/** The themes a picture is looked at in: light, dark and high contrast. */
export const THEMES = [
  ['Default Light Modern', vscode.ColorThemeKind.Light],
  ['Default Dark Modern', vscode.ColorThemeKind.Dark],
  ['Default High Contrast', vscode.ColorThemeKind.HighContrast],
] as const;

/** Switches the workbench to `theme` and waits until it is on; `undefined` goes back to the default. */
export async function useTheme(theme: (typeof THEMES)[number][0] | undefined, kind?: vscode.ColorThemeKind): Promise<void> {
  await vscode.workspace.getConfiguration('workbench').update('colorTheme', theme, vscode.ConfigurationTarget.Global);
  if (kind !== undefined) await waitFor(() => vscode.window.activeColorTheme.kind === kind, 20_000, `the ${theme} theme`);
}
