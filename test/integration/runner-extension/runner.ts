// Test-only extension: on startup it runs the integration mocha suite inside the real extension host and
// writes the results to the file the harness waits for. Installed only by test/integration/run.ts.
import fs from 'node:fs';
import path from 'node:path';
import type * as vscode from 'vscode';
import type MochaType from 'mocha';
import { HARNESS_CONFIG_ENV, type HarnessConfig, type SuiteResults, type TestResult } from '../protocol';

export function activate(context: vscode.ExtensionContext): void {
  const configFile = path.join(context.extensionPath, 'harness.json');
  const config = JSON.parse(fs.readFileSync(configFile, 'utf8')) as HarnessConfig;
  // The suite's helpers (screenshots, tracker port) read the same config.
  process.env[HARNESS_CONFIG_ENV] = configFile;
  void runSuite(config).catch((error: unknown) => {
    writeResults(config, { tests: [], passed: 0, failed: 1, pending: 0, crash: String((error as Error).stack ?? error) });
  });
}

async function runSuite(config: HarnessConfig): Promise<void> {
  // mocha comes from the project's node_modules: the runner is never packaged.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Mocha = require(config.mochaPath) as typeof MochaType;
  const mocha = new Mocha({ ui: 'bdd', timeout: config.testTimeoutMs, color: false, ...(config.grep ? { grep: config.grep } : {}) });
  for (const file of config.suiteFiles) mocha.addFile(file);
  const tests: TestResult[] = [];
  await new Promise<void>((resolve) => {
    const runner = mocha.run(() => resolve());
    runner.on('pass', (test) => tests.push({ title: test.fullTitle(), state: 'passed', durationMs: test.duration ?? 0 }));
    runner.on('pending', (test) => tests.push({ title: test.fullTitle(), state: 'pending', durationMs: 0 }));
    runner.on('fail', (test, error: Error) =>
      tests.push({ title: test.fullTitle(), state: 'failed', durationMs: test.duration ?? 0, error: error.stack ?? String(error) }),
    );
  });
  const count = (state: TestResult['state']): number => tests.filter((t) => t.state === state).length;
  writeResults(config, { tests, passed: count('passed'), failed: count('failed'), pending: count('pending') });
}

function writeResults(config: HarnessConfig, results: SuiteResults): void {
  // Written whole under another name and renamed, so the harness never reads half a file.
  fs.writeFileSync(`${config.resultsFile}.tmp`, JSON.stringify(results, null, 2));
  fs.renameSync(`${config.resultsFile}.tmp`, config.resultsFile);
}

export function deactivate(): void {}
