// One implementation of "run this extension in a real VS Code": used by `npm start` and by the
// integration harness. code-server is VS Code served to a browser, with the real Node extension host.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { CHROMIUM } from './prerequisites.mjs';

export const PROJECT_ROOT = path.resolve(__dirname, '..');
export const CODE_SERVER_VERSION = '4.139.1';
/** Flags that keep a headless Chromium from phoning home or needing a GPU/sandbox (see ENVIRONMENT.md). */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

const CACHE_DIR = path.join(PROJECT_ROOT, '.cache');

export class MissingPieceError extends Error {}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): void {
  const result = spawnSync(command, args, { cwd, env, stdio: 'inherit' });
  if (result.status !== 0) {
    throw new MissingPieceError(`\`${command} ${args.join(' ')}\` failed in ${cwd} (exit ${result.status ?? result.signal})`);
  }
}

/**
 * npm with the running Node (24, from node_modules/.bin) first on PATH, so native builds target it. The
 * outer npm's own variables are dropped: under `npm test` they describe the npm that started us (and its
 * Node, which may be older), and code-server's postinstall reads the Node version from npm_config_user_agent.
 */
export function npmEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)));
  return { ...env, PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}` };
}

function installInto(dir: string, spec: string, extraArgs: string[] = []): void {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), '{ "private": true }\n');
  // npm 11 skips dependencies' install scripts by default, and code-server's postinstall runs further npm
  // installs that build VS Code's native modules: allowed for these pinned tools only, nested installs too.
  const env = { ...npmEnv(), npm_config_dangerously_allow_all_scripts: 'true' };
  run('npm', ['install', '--no-audit', '--no-fund', '--no-save', ...extraArgs, spec], dir, env);
}

/**
 * Headers of the running Node, for code-server's native modules. `npm ci` leaves them in the node
 * package; an `npm install` later prunes that copy, so fall back to a cached install of the same version.
 */
function nodeHeadersDir(): string {
  const arch = `node-${process.platform}-${process.arch}`;
  const bundled = path.join(PROJECT_ROOT, 'node_modules', 'node', 'node_modules', arch);
  if (fs.existsSync(path.join(bundled, 'include', 'node', 'node.h'))) return bundled;
  const cached = path.join(CACHE_DIR, 'node-headers', 'node_modules', arch);
  if (!fs.existsSync(path.join(cached, 'include', 'node', 'node.h'))) {
    console.log(`Installing Node ${process.versions.node} headers into ${path.relative(PROJECT_ROOT, cached)} (once)…`);
    installInto(path.join(CACHE_DIR, 'node-headers'), `${arch}@${process.versions.node}`);
  }
  return cached;
}

/** The code-server binary, installed once into .cache/code-server (610 MB; 2 to 12 minutes on 2 cores, see docs/development.md). */
export function ensureCodeServer(): string {
  const dir = path.join(CACHE_DIR, 'code-server');
  const bin = path.join(dir, 'node_modules', 'code-server', 'out', 'node', 'entry.js');
  const marker = path.join(dir, `installed-${CODE_SERVER_VERSION}`);
  if (fs.existsSync(bin) && fs.existsSync(marker)) return bin;
  if (Number(process.versions.node.split('.')[0]) < 24) {
    throw new MissingPieceError(`code-server must be installed with Node 24, but this is Node ${process.versions.node}: run through npm (npm test / npm start)`);
  }
  console.log(`Installing code-server ${CODE_SERVER_VERSION} into ${path.relative(PROJECT_ROOT, dir)} (once: a download and native builds, 2 to 12 minutes on 2 cores)…`);
  try {
    installInto(dir, `code-server@${CODE_SERVER_VERSION}`, [`--nodedir=${nodeHeadersDir()}`]);
  } catch (error) {
    throw new MissingPieceError(
      `${(error as Error).message}\ncode-server's native modules need a C++ toolchain and libkrb5-dev ` +
        '(apt-get install -y g++ make python3 libkrb5-dev).',
    );
  }
  if (!fs.existsSync(bin)) throw new MissingPieceError(`code-server installed, but ${bin} is missing`);
  fs.writeFileSync(marker, new Date().toISOString());
  return bin;
}

export function requireChromium(): string {
  if (!fs.existsSync(CHROMIUM)) {
    throw new MissingPieceError(`${CHROMIUM} not found: install Debian's Chromium (apt-get install -y chromium)`);
  }
  return CHROMIUM;
}

interface ExtensionManifest {
  publisher: string;
  name: string;
  version: string;
}

export function readManifest(dir: string): ExtensionManifest {
  return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as ExtensionManifest;
}

export function extensionId(manifest: ExtensionManifest): string {
  return `${manifest.publisher}.${manifest.name}`;
}

/** The extension's own bundles in dist/ (dist/cli.js and dist/cli-run.js are the CLI's). */
export const EXTENSION_BUNDLES = ['extension.js', 'parse-worker.js', 'index-worker.js', 'openai.js', 'webview.js', 'graph.js', 'map.js'];

/**
 * Besides the manifest, the bundles and better-sqlite3's binary, what the extension needs at run time: one
 * list for the VSIX (scripts/package.ts) and for the copy `npm start` and the workbench suite install, so a
 * file the checkout has and the VSIX lacks fails the smoke suite instead of a writer's first start.
 * better-sqlite3 stays unbundled (it finds its binary by path; its one dependency, node-addon-api, is
 * build-time headers).
 */
export const SHIPPED_FILES = [
  'README.md',
  'LICENSE',
  'CHANGELOG.md',
  'media',
  'node_modules/better-sqlite3/package.json',
  'node_modules/better-sqlite3/LICENSE',
  'node_modules/better-sqlite3/lib',
  // The walkthrough copies it out of the extension folder.
  'fixtures/example-campaign',
];

/** Copies `rel` (a file or folder under `fromRoot`) to the same place under `toRoot`; a local index of the example is derived and never shipped. */
export function copyShipped(fromRoot: string, toRoot: string, rel: string): void {
  const from = path.join(fromRoot, rel);
  if (!fs.existsSync(from)) throw new MissingPieceError(`${rel} is missing: build first (npm run build), or run npm ci`);
  fs.cpSync(from, path.join(toRoot, rel), { recursive: true, dereference: true, filter: (src) => path.basename(src) !== '.storyteller' });
}

/** Where this extension's copy sits in an extensions folder, installed from the checkout or from its VSIX. */
export function installedExtensionDir(extensionsDir: string): string {
  const manifest = readManifest(PROJECT_ROOT);
  return path.join(extensionsDir, `${extensionId(manifest)}-${manifest.version}`);
}

/** Copies the built extension into `<extensionsDir>/<publisher>.<name>-<version>`, replacing any older copy. */
export function installBuiltExtension(extensionsDir: string): string {
  if (!fs.existsSync(path.join(PROJECT_ROOT, 'dist', 'extension.js'))) {
    throw new MissingPieceError('dist/extension.js is missing: build first (npm run build)');
  }
  const target = installedExtensionDir(extensionsDir);
  fs.rmSync(target, { recursive: true, force: true });
  // From the checkout: every platform's binary, and the bundles' source maps for readable stacks.
  const maps = EXTENSION_BUNDLES.map((bundle) => `dist/${bundle}.map`).filter((rel) => fs.existsSync(path.join(PROJECT_ROOT, rel)));
  const files = ['package.json', ...SHIPPED_FILES, 'node_modules/better-sqlite3/prebuilds', ...EXTENSION_BUNDLES.map((bundle) => `dist/${bundle}`), ...maps];
  for (const rel of files) copyShipped(PROJECT_ROOT, target, rel);
  return target;
}

/**
 * Installs a VSIX as a writer's VS Code does (code-server's --install-extension) into these folders, and
 * returns the installed copy's folder. Extensions copied into the folder before it are registered with it
 * (the install writes the folder's extensions.json; one copied in after that is never loaded).
 */
export function installVsix(vsix: string, extensionsDir: string, userDataDir: string): string {
  const entry = ensureCodeServer();
  run(process.execPath, [entry, '--extensions-dir', extensionsDir, '--user-data-dir', userDataDir, '--install-extension', vsix], PROJECT_ROOT, process.env);
  const installed = installedExtensionDir(extensionsDir);
  if (!fs.existsSync(path.join(installed, 'package.json'))) throw new MissingPieceError(`code-server installed ${vsix}, but not into ${installed}`);
  return installed;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface CodeServerOptions {
  port: number;
  userDataDir: string;
  extensionsDir: string;
  /** A folder, or a `.code-workspace` file. */
  workspace: string;
  /** Where code-server's own output goes; inherited when absent. */
  logFile?: string;
  env?: NodeJS.ProcessEnv;
  /** User settings of this run, beside the quiet ones, written with them into a fresh user-data dir. */
  settings?: Record<string, unknown>;
}

/** User settings that keep the workbench quiet and deterministic: no welcome page, no trust prompt. */
const QUIET_SETTINGS = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'security.workspace.trust.enabled': false,
  'telemetry.telemetryLevel': 'off',
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'update.mode': 'none',
  'chat.disableAIFeatures': true,
  'git.enabled': false,
  'git.openRepositoryInParentFolders': 'never',
};

export interface RunningCodeServer {
  url: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

export async function launchCodeServer(options: CodeServerOptions): Promise<RunningCodeServer> {
  const entry = ensureCodeServer();
  const settingsFile = path.join(options.userDataDir, 'User', 'settings.json');
  if (!fs.existsSync(settingsFile)) {
    fs.mkdirSync(path.dirname(settingsFile), { recursive: true });
    fs.writeFileSync(settingsFile, JSON.stringify({ ...QUIET_SETTINGS, ...options.settings }, null, 2));
  }
  const out = options.logFile ? fs.openSync(options.logFile, 'a') : 'inherit';
  const child = spawn(
    process.execPath,
    [
      entry,
      '--auth', 'none',
      '--bind-addr', `127.0.0.1:${options.port}`,
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--user-data-dir', options.userDataDir,
      '--extensions-dir', options.extensionsDir,
      options.workspace,
    ],
    // Its own process group, so stop() also ends the extension host and other children.
    { detached: true, stdio: ['ignore', out, out], env: { ...process.env, ...options.env } },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      return;
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }, 5000);
    await exited;
    clearTimeout(timer);
  };
  // A .code-workspace file opens as a (multi-root) workspace, where folders come and go without a reload.
  const query = options.workspace.endsWith('.code-workspace') ? 'workspace' : 'folder';
  const url = `http://127.0.0.1:${options.port}/?${query}=${encodeURIComponent(options.workspace)}`;
  await waitForHttp(`http://127.0.0.1:${options.port}/healthz`, child, 60_000);
  return { url, process: child, stop };
}

async function waitForHttp(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`code-server exited with code ${child.exitCode} before it listened`);
    try {
      const response = await fetch(url);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`code-server did not answer ${url} within ${timeoutMs / 1000}s`);
}
