// The CLI as a campaign's CI gets it: `npm pack`'s tarball, installed offline into a fresh prefix, run with
// the project's Node 24 on a copy of the example campaign. A bundle that reaches for the checkout, or a file
// the `files` list leaves out, fails here.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { npmEnv } from '../../scripts/codeServer';
import { requireBuiltCli } from './attacks/attackSupport';
import { EXAMPLE_CAMPAIGN, REPO_ROOT } from '../support/corpora';

/** What the package may hold: the CLI's bundles, its parse worker, and the notes npm always adds. */
const RUNTIME = ['CHANGELOG.md', 'LICENSE', 'README.md', 'dist/cli-run.js', 'dist/cli.js', 'dist/parse-worker.js', 'package.json'];

describe('the CLI package (npm pack)', function () {
  this.timeout(300_000);
  let work: string;
  let packed: string[];
  let storyteller: string;
  let campaign: string;
  let installed: string;

  before(() => {
    requireBuiltCli();
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'st-pack-'));
    // Its one runtime dependency (and that one's) are packed from the checkout too: npm's cache after `npm ci`
    // holds their tarballs but not the registry's metadata an offline install of a version range needs.
    const pack = (folder: string) => JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', work, folder], { cwd: REPO_ROOT, env: npmEnv(), encoding: 'utf8' })) as { filename: string; files: { path: string }[] }[];
    const [cli] = pack('.');
    packed = cli!.files.map((f) => f.path).sort();
    const tarballs = [cli!, ...pack('./node_modules/better-sqlite3'), ...pack('./node_modules/node-addon-api')].map((t) => path.join(work, t.filename));
    const prefix = path.join(work, 'prefix');
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--prefix', prefix, ...tarballs], { cwd: work, env: npmEnv(), stdio: 'pipe' });
    storyteller = path.join(prefix, 'node_modules', '.bin', 'storyteller');
    installed = path.join(prefix, 'node_modules', 'adventure-storyteller');
    campaign = path.join(work, 'campaign');
    fs.cpSync(EXAMPLE_CAMPAIGN, campaign, { recursive: true, filter: (src) => path.basename(src) !== '.storyteller' });
  });

  after(() => fs.rmSync(work, { recursive: true, force: true }));

  /** Runs the installed `storyteller` as a shell would, its `#!/usr/bin/env node` finding the project's Node 24 first on PATH. */
  function run(...args: string[]) {
    const result = spawnSync(storyteller, args, { cwd: work, env: npmEnv(), encoding: 'utf8' });
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  it('holds the runtime only: no sources, tests, benches, fixtures or source maps', () => {
    assert.deepEqual(packed, RUNTIME);
  });

  it('ships production bundles (npm pack builds them first): minified, pointing at no source map', () => {
    for (const bundle of packed.filter((f) => f.endsWith('.js'))) {
      const code = fs.readFileSync(path.join(installed, bundle), 'utf8');
      assert.doesNotMatch(code, /sourceMappingURL=/, `${bundle} points at a map the package does not hold`);
      const lines = code.split('\n');
      assert.ok(code.length / lines.length > 200, `${bundle} is minified (${lines.length} lines for ${code.length} characters)`);
      // One character outside Latin-1 and V8 holds the whole source two bytes a character.
      const wide = /[\u0080-\uffff]/.exec(code);
      assert.equal(wide, null, `${bundle} holds '${wide?.[0]}' at ${wide?.index}: bundles are ASCII only`);
    }
  });

  it('indexes, searches and lints the example campaign from the installed copy, with exit codes a CI reads', () => {
    const index = run('index', campaign);
    assert.equal(index.code, 0, index.stderr);
    assert.match(index.stdout, /The Westhaven Campaign \(westhaven\): 7 files — 7 indexed/);
    const search = run('search', 'night watch captain', '--campaign', campaign, '--json');
    assert.equal(search.code, 0, search.stderr);
    assert.match(search.stdout, /canon\.md/);
    const lint = run('lint', campaign);
    assert.equal(lint.code, 0, lint.stderr);
    assert.match(lint.stdout, /0 errors, 0 warnings/);
    fs.writeFileSync(path.join(campaign, 'broken.md'), '---\nclass: [canon\n---\nA note whose front matter does not parse.\n');
    const findings = run('lint', campaign);
    assert.equal(findings.code, 1, 'a finding fails the CI step');
    assert.match(findings.stdout + findings.stderr, /broken\.md/);
  });
});
