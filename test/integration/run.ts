// Integration tests in a real VS Code: code-server headless on loopback, the built extension and a
// test-only runner extension in a fresh extensions dir, a fresh user-data dir, a copy of the example
// campaign as the one folder of a workspace, the workbench opened in Chromium. The runner executes the mocha suite inside
// the extension host; this driver answers its screenshot requests and reports its results.
//   npm run test:integration [-- --grep <pattern>]
// With --smoke it installs the VSIX `npm run package` made for this machine instead, with code-server's
// --install-extension, and runs test/integration/smoke against that installed copy: what a writer gets.
//   npm run test:smoke
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { chromium, type Browser, type Page } from 'playwright-core';
import {
  CHROMIUM_ARGS,
  MissingPieceError,
  PROJECT_ROOT,
  ensureCodeServer,
  freePort,
  installBuiltExtension,
  installVsix,
  installedExtensionDir,
  launchCodeServer,
  readManifest,
  requireChromium,
  type RunningCodeServer,
} from '../../scripts/codeServer';
import { thisMachinesTarget, vsixFile } from '../../scripts/vsix';
import { PROBE_TIMEOUT_MS, locate, runSteps, settleFrames } from './driver';
import { AFTER_STEPS_BUDGET_MS, type HarnessConfig, type ScreenshotReply, type ScreenshotRequest, type SuiteResults } from './protocol';
import { within } from './within';

/**
 * Only a guard against a hung workbench: each test has its own timeout. The suite takes ~8 minutes on an
 * idle 2-core machine; under three other builds it outgrew 10 (295 of ~400 screenshots by then).
 */
const SUITE_TIMEOUT_MS = 40 * 60_000;
/** Reading the whole workbench's text, or taking its picture. */
const WORKBENCH_TIMEOUT_MS = 10_000;
const SMOKE = process.argv.includes('--smoke');
const RUN_DIR = path.join(PROJECT_ROOT, '.e2e', ...(SMOKE ? ['smoke'] : []));
const ARTIFACTS_DIR = path.join(PROJECT_ROOT, 'artifacts', ...(SMOKE ? ['smoke'] : []));
const SUITE_DIR = path.join(PROJECT_ROOT, 'test', 'integration', SMOKE ? 'smoke' : 'suite');
const FIXTURE = path.join(PROJECT_ROOT, 'fixtures', 'example-campaign');

const cleanups: (() => Promise<void> | void)[] = [];

async function cleanUp(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) {
    try {
      await cleanup();
    } catch (error) {
      console.error(`cleanup failed: ${String(error)}`);
    }
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    void cleanUp().then(() => process.exit(130));
  });
}

function grepArgument(): string | undefined {
  const at = process.argv.indexOf('--grep');
  return at >= 0 ? process.argv[at + 1] : undefined;
}

/**
 * The suite's `better-sqlite3` is the installed extension's own copy. Two copies would load two SQLite
 * libraries into the extension host, and a connection one closes drops the other's file locks on the same
 * database (sqlite.org/howtocorrupt.html, §2.2.1): a test reading play.db corrupted the extension's.
 */
function sharedSqlite(extensionDir: string): esbuild.Plugin {
  return {
    name: 'shared-sqlite',
    setup(build) {
      build.onResolve({ filter: /^better-sqlite3$/ }, () => ({ path: path.join(extensionDir, 'node_modules', 'better-sqlite3'), external: true }));
    },
  };
}

/** Suite files are TypeScript; the extension host loads plain CommonJS, with `vscode` left to it. */
async function buildSuite(outDir: string, extensionDir: string): Promise<string[]> {
  const entries = fs.readdirSync(SUITE_DIR).filter((f) => f.endsWith('.test.ts')).sort();
  if (entries.length === 0) throw new MissingPieceError(`no *.test.ts files in ${SUITE_DIR}`);
  await esbuild.build({
    entryPoints: entries.map((f) => path.join(SUITE_DIR, f)),
    outdir: outDir,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node22',
    sourcemap: 'inline',
    external: ['vscode', 'mocha'],
    plugins: [sharedSqlite(extensionDir)],
    logLevel: 'warning',
  });
  return entries.map((f) => path.join(outDir, f.replace(/\.ts$/, '.js')));
}

async function installRunner(extensionsDir: string, config: HarnessConfig): Promise<void> {
  const source = path.join(PROJECT_ROOT, 'test', 'integration', 'runner-extension');
  const manifest = readManifest(source);
  const target = path.join(extensionsDir, `${manifest.publisher}.${manifest.name}-${manifest.version}`);
  fs.mkdirSync(target, { recursive: true });
  fs.copyFileSync(path.join(source, 'package.json'), path.join(target, 'package.json'));
  await esbuild.build({
    entryPoints: [path.join(source, 'runner.ts')],
    outfile: path.join(target, 'runner.js'),
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node22',
    external: ['vscode'],
    logLevel: 'warning',
  });
  fs.writeFileSync(path.join(target, 'harness.json'), JSON.stringify(config, null, 2));
}

/** Counts every request that reaches it: imported content must never make the workbench fetch anything. */
async function startTracker(): Promise<{ port: number; hits: () => string[] }> {
  const seen: string[] = [];
  const server = http.createServer((request, response) => {
    seen.push(`${request.method} ${request.url}`);
    response.writeHead(204).end();
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port, hits: () => [...seen] };
}

async function answerScreenshot(page: Page, request: ScreenshotRequest, dialogs: string[], trackerHits: () => number): Promise<ScreenshotReply> {
  let stepError: string | undefined;
  let typing: number[] = [];
  try {
    typing = await runSteps(page, request.steps ?? [], request.stepsDeadline);
  } catch (error) {
    stepError = (error as Error).message;
  }
  // Looking and taking pictures has its own budget after the steps, which the suite waits for too.
  const answerBy = Date.now() + AFTER_STEPS_BUDGET_MS;
  // At least 1 ms: Playwright reads a timeout of 0 as none at all.
  const allowed = (ms: number) => Math.max(Math.min(ms, answerBy - Date.now()), 1);
  await settleFrames(page);
  const located = await locate(page, request.locate ?? []);
  // Text first, pictures after: the suite decides on the text, so every picture is at least as new as it.
  const webviews = page.frames().filter((frame) => frame !== page.mainFrame());
  const read = await Promise.all(
    webviews.map((frame) =>
      Promise.all([
        within(frame.evaluate(() => document.body?.innerText ?? ''), PROBE_TIMEOUT_MS, "a frame's text"),
        within(frame.content(), PROBE_TIMEOUT_MS, "a frame's markup"),
      ])
        .then(([text, html]) => ({ frame, url: frame.url(), text, html }))
        // a frame that navigated or closed while we looked, or does not answer, is left out
        .catch(() => undefined),
    ),
  );
  const frames = read.filter((f) => f !== undefined);
  const workbenchText = await within(page.evaluate(() => document.body.innerText), allowed(WORKBENCH_TIMEOUT_MS), "the workbench's text");
  await settleFrames(page);
  const files: string[] = [];
  const workbench = path.join(ARTIFACTS_DIR, `${request.name}.png`);
  await page.screenshot({ path: workbench, timeout: allowed(WORKBENCH_TIMEOUT_MS) });
  files.push(workbench);
  let index = 0;
  for (const { frame, url, html } of frames) {
    // Webview content lives in the inner frame of each webview's iframe pair; the outer one frames it on screen.
    if (url.includes('fake.html') || html.length === 0) continue;
    try {
      const element = await within(frame.frameElement(), allowed(PROBE_TIMEOUT_MS), "a frame's element");
      const box = await within(element.boundingBox(), allowed(PROBE_TIMEOUT_MS), "a frame's box");
      if (box && box.width > 0 && box.height > 0) {
        const file = path.join(ARTIFACTS_DIR, `${request.name}.frame${++index}.png`);
        await element.screenshot({ path: file, timeout: allowed(WORKBENCH_TIMEOUT_MS) });
        files.push(file);
      }
    } catch {
      // a frame that navigated or closed while we looked, or past the budget: the workbench picture shows it
    }
  }
  return {
    files,
    workbenchText,
    frames: frames.map(({ url, text, html }) => ({ url, text, html })),
    dialogs: [...dialogs],
    trackerHits: trackerHits(),
    located,
    typing,
    ...(stepError ? { driverError: stepError } : {}),
  };
}

/** A reply saying the driver could not finish, so the suite fails on the reason instead of waiting it out. */
function failedAnswer(error: unknown, dialogs: string[], trackerHits: () => number): ScreenshotReply {
  return { files: [], workbenchText: '', frames: [], dialogs: [...dialogs], trackerHits: trackerHits(), located: {}, typing: [], driverError: `the driver could not finish: ${(error as Error).message}` };
}

async function main(): Promise<number> {
  const vsix = SMOKE ? vsixFile(thisMachinesTarget()) : undefined;
  if (vsix && !fs.existsSync(vsix)) throw new MissingPieceError(`${path.relative(PROJECT_ROOT, vsix)} is missing: the smoke suite installs the packaged extension (npm run package)`);
  if (!vsix && !fs.existsSync(path.join(PROJECT_ROOT, 'dist', 'extension.js'))) {
    throw new MissingPieceError('dist/ is missing: integration tests use the built extension (run npm test, which builds first)');
  }
  const chromiumPath = requireChromium();
  ensureCodeServer();

  fs.rmSync(RUN_DIR, { recursive: true, force: true });
  fs.rmSync(ARTIFACTS_DIR, { recursive: true, force: true });
  const dirs = {
    userData: path.join(RUN_DIR, 'user-data'),
    extensions: path.join(RUN_DIR, 'extensions'),
    workspace: path.join(RUN_DIR, 'workspace', path.basename(FIXTURE)),
    requests: path.join(RUN_DIR, 'requests'),
    suite: path.join(RUN_DIR, 'suite'),
  };
  for (const dir of Object.values(dirs)) fs.mkdirSync(dir, { recursive: true });
  fs.mkdirSync(ARTIFACTS_DIR, { recursive: true });
  fs.cpSync(FIXTURE, dirs.workspace, { recursive: true, filter: (src) => !src.includes(`${path.sep}.storyteller`) });

  // A workspace file holding the one campaign folder: a suite can add a second campaign beside it, as a
  // writer with several open would, without the reload that turning a folder window into a workspace costs.
  const workspaceFile = path.join(RUN_DIR, 'workspace', 'campaigns.code-workspace');
  fs.writeFileSync(workspaceFile, JSON.stringify({ folders: [{ path: dirs.workspace }] }, null, 2));

  const tracker = await startTracker();
  const resultsFile = path.join(RUN_DIR, 'results.json');
  const extensionDir = installedExtensionDir(dirs.extensions);
  const config: HarnessConfig = {
    resultsFile,
    suiteFiles: await buildSuite(dirs.suite, extensionDir),
    mochaPath: require.resolve('mocha/lib/mocha.cjs', { paths: [PROJECT_ROOT] }),
    testTimeoutMs: 60_000,
    grep: grepArgument(),
    requestDir: dirs.requests,
    artifactsDir: ARTIFACTS_DIR,
    workspace: dirs.workspace,
    workspaceFile,
    trackerPort: tracker.port,
  };
  // The runner first: installing a VSIX registers what the folder holds then, and nothing copied in later.
  await installRunner(dirs.extensions, config);
  if (vsix) installVsix(vsix, dirs.extensions, dirs.userData);
  else installBuiltExtension(dirs.extensions);

  const port = await freePort();
  const logFile = path.join(RUN_DIR, 'code-server.log');
  console.log(`code-server on 127.0.0.1:${port} (log: ${path.relative(PROJECT_ROOT, logFile)})`);
  const server: RunningCodeServer = await launchCodeServer({
    port,
    userDataDir: dirs.userData,
    extensionsDir: dirs.extensions,
    workspace: workspaceFile,
    logFile,
    // No Local History. VS Code copies every file it saves into it, holding that file's write lock for the
    // copy, and a copy whose source shrinks meanwhile never ends (Node 24's fs.copyFile spins at the early end
    // of file): a suite that rewrote a just-saved file on disk left every later save of it "Writing into file…".
    settings: { 'workbench.localHistory.enabled': false },
  });
  cleanups.push(() => server.stop());

  const browser: Browser = await chromium.launch({ executablePath: chromiumPath, args: CHROMIUM_ARGS, headless: true });
  cleanups.push(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const dialogs: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    void dialog.dismiss();
  });
  // The suite's own deadline bounds the first load: on a loaded 2-core machine the workbench can take longer
  // than Playwright's default 30 s to answer, and that is slowness, not failure.
  await page.goto(server.url, { timeout: SUITE_TIMEOUT_MS });

  const deadline = Date.now() + SUITE_TIMEOUT_MS;
  const answered = new Set<string>();
  while (!fs.existsSync(resultsFile)) {
    if (Date.now() > deadline) throw new Error(`no results after ${SUITE_TIMEOUT_MS / 60_000} minutes; see ${logFile}`);
    if (server.process.exitCode !== null) throw new Error(`code-server exited early (code ${server.process.exitCode}); see ${logFile}`);
    for (const file of fs.readdirSync(dirs.requests).filter((f) => f.endsWith('.request.json')).sort()) {
      if (answered.has(file)) continue;
      answered.add(file);
      const request = JSON.parse(fs.readFileSync(path.join(dirs.requests, file), 'utf8')) as ScreenshotRequest;
      const hits = () => tracker.hits().length;
      const reply = await answerScreenshot(page, request, dialogs, hits).catch((error: unknown) => failedAnswer(error, dialogs, hits));
      const replyFile = path.join(dirs.requests, file.replace('.request.json', '.reply.json'));
      fs.writeFileSync(`${replyFile}.tmp`, JSON.stringify(reply));
      fs.renameSync(`${replyFile}.tmp`, replyFile);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await page.screenshot({ path: path.join(ARTIFACTS_DIR, 'zz-final.png') });

  const results = JSON.parse(fs.readFileSync(resultsFile, 'utf8')) as SuiteResults;
  for (const test of results.tests) {
    const mark = test.state === 'passed' ? '✓' : test.state === 'failed' ? '✗' : '-';
    console.log(`  ${mark} ${test.title}${test.state === 'passed' ? ` (${test.durationMs} ms)` : ''}`);
    if (test.error) console.log(test.error.replace(/^/gm, '      '));
  }
  if (results.crash) console.log(`runner crashed:\n${results.crash}`);
  const hits = tracker.hits();
  let failed = results.failed;
  if (hits.length > 0) {
    failed += 1;
    console.log(`  ✗ the tracker server was contacted ${hits.length} time(s): ${hits.join(', ')}`);
  }
  console.log(`screenshots: ${path.relative(PROJECT_ROOT, ARTIFACTS_DIR)}/`);
  console.log(`${results.passed} passed, ${failed} failed`);
  return failed > 0 || results.tests.length === 0 ? 1 : 0;
}

main()
  .then(async (code) => {
    await cleanUp();
    process.exit(code);
  })
  .catch(async (error: unknown) => {
    await cleanUp();
    console.error(error instanceof MissingPieceError ? `integration tests cannot run: ${error.message}` : error);
    console.log('0 passed, 1 failed');
    process.exit(1);
  });
