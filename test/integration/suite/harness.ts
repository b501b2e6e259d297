// Helpers for suite files running inside the extension host.
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { HARNESS_CONFIG_ENV, type DriverStep, type HarnessConfig, type ScreenshotReply, type ScreenshotRequest } from '../protocol';

export const EXTENSION_ID = 'storyteller.adventure-storyteller';

export function harnessConfig(): HarnessConfig {
  const file = process.env[HARNESS_CONFIG_ENV];
  if (!file) throw new Error(`${HARNESS_CONFIG_ENV} is not set: the suite runs only under test/integration/run.ts`);
  return JSON.parse(fs.readFileSync(file, 'utf8')) as HarnessConfig;
}

let sequence = 0;

/**
 * Asks the driver for a screenshot of the workbench (and of every webview frame) named `name`, and
 * returns what it saw. Waits a moment first so the workbench has painted the last change.
 */
export async function capture(name: string, settleMs = 500, steps: DriverStep[] = [], locate: string[] = []): Promise<ScreenshotReply> {
  await sleep(settleMs);
  const config = harnessConfig();
  const base = path.join(config.requestDir, `${String(++sequence).padStart(2, '0')}-${name.replace(/[^a-z0-9-]+/gi, '-')}`);
  const request: ScreenshotRequest = { name: path.basename(base), steps, locate };
  fs.writeFileSync(`${base}.tmp`, JSON.stringify(request));
  fs.renameSync(`${base}.tmp`, `${base}.request.json`);
  const reply = await waitFor(() => {
    const file = `${base}.reply.json`;
    return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as ScreenshotReply) : undefined;
  }, 30_000, `the driver's screenshot ${name}`);
  if (reply.stepError) throw new Error(`driver step failed for ${name}: ${reply.stepError}`);
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
