// `npm run package [-- --target <vsce target> | --universal]`: the VSIX, from production bundles (minified, no
// source maps) and only what SHIPPED_FILES lists, with better-sqlite3's binary for one platform (this machine's
// by default) or, with --universal, all eight. vsce runs in a staging folder, not the checkout: package.json's
// `files` describes the CLI's npm package, and vsce refuses a folder with both `files` and a .vscodeignore.
// Prints the VSIX's path, size and contents, and the checks Open VSX's client makes before it uploads.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { unzipSync } from 'fflate';
import { EXTENSION_BUNDLES, MissingPieceError, PROJECT_ROOT, SHIPPED_FILES, copyShipped } from './codeServer';
import { PREBUILDS, thisMachinesTarget, vsixFile } from './vsix';

/** The manifest's fields only the checkout needs (building, testing, the CLI's npm package). */
const CHECKOUT_ONLY_FIELDS = ['scripts', 'devDependencies', 'files', 'bin', 'allowScripts'];

const STAGE = path.join(PROJECT_ROOT, '.package');

function chosenTarget(): string | undefined {
  if (process.argv.includes('--universal')) return undefined;
  const at = process.argv.indexOf('--target');
  const target = at >= 0 ? process.argv[at + 1] : thisMachinesTarget();
  if (!target || !(target in PREBUILDS)) {
    throw new MissingPieceError(`no better-sqlite3 binary for target '${target ?? ''}': use one of ${Object.keys(PREBUILDS).join(', ')}, or --universal`);
  }
  return target;
}

function run(command: string, args: string[], cwd: string): void {
  const result = spawnSync(command, args, { cwd, stdio: 'inherit' });
  if (result.status !== 0) throw new MissingPieceError(`\`${path.basename(command)} ${args.join(' ')}\` failed (exit ${result.status ?? result.signal})`);
}

/** The VSIX's manifest: the checkout's, without what only the checkout needs (its one dependency is better-sqlite3; the rest is bundled). */
function stagedManifest(): Record<string, unknown> {
  const manifest = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
  for (const field of CHECKOUT_ONLY_FIELDS) delete manifest[field];
  return manifest;
}

function stage(target: string | undefined): string {
  const dir = path.join(STAGE, target ?? 'universal');
  fs.rmSync(dir, { recursive: true, force: true });
  const bundles = path.join(dir, 'build');
  run(process.execPath, ['esbuild.mjs', '--production', `--outdir=${bundles}`], PROJECT_ROOT);
  for (const bundle of EXTENSION_BUNDLES) copyShipped(bundles, path.join(dir, 'dist'), bundle);
  fs.rmSync(bundles, { recursive: true });
  for (const rel of SHIPPED_FILES) copyShipped(PROJECT_ROOT, dir, rel);
  const prebuilds = target ? [`${PREBUILDS[target]}.node`] : fs.readdirSync(path.join(PROJECT_ROOT, 'node_modules/better-sqlite3/prebuilds'));
  for (const file of prebuilds) copyShipped(PROJECT_ROOT, dir, `node_modules/better-sqlite3/prebuilds/${file}`);
  // vsce asks `npm list` for the dependencies to ship; better-sqlite3's one (headers for a build from source)
  // must be there for npm to answer, and stays out of the VSIX.
  copyShipped(PROJECT_ROOT, dir, 'node_modules/node-addon-api/package.json');
  fs.writeFileSync(path.join(dir, '.vscodeignore'), 'node_modules/node-addon-api/**\n');
  fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(stagedManifest(), null, 2)}\n`);
  return dir;
}

/** What Open VSX's client checks before it uploads (ovsx has no offline verify; the registry checks the rest on publish). */
async function openVsxChecks(dir: string): Promise<void> {
  const ovsx = (await import('ovsx')) as { isLicenseOk(packagePath: string): Promise<boolean>; validateManifest(manifest: object): void };
  ovsx.validateManifest(JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as object);
  if (!(await ovsx.isLicenseOk(dir))) throw new MissingPieceError('Open VSX would refuse the VSIX: it has no license');
}

function kilobytes(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KB`;
}

async function main(): Promise<void> {
  const target = chosenTarget();
  const dir = stage(target);
  const out = vsixFile(target);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  const vsce = path.join(PROJECT_ROOT, 'node_modules', '.bin', 'vsce');
  run(vsce, ['package', ...(target ? ['--target', target] : []), '--out', out], dir);
  await openVsxChecks(dir);
  const entries = Object.entries(unzipSync(fs.readFileSync(out)));
  console.log(`\n${path.relative(PROJECT_ROOT, out)}: ${kilobytes(fs.statSync(out).size)} (${entries.length} files)`);
  for (const [name, data] of entries) console.log(`  ${kilobytes(data.length).padStart(10)}  ${name}`);
}

main().catch((error: unknown) => {
  console.error(error instanceof MissingPieceError ? `cannot package: ${error.message}` : error);
  process.exit(1);
});
