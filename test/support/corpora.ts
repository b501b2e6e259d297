import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * The checkout: the nearest folder above this file with the project's package.json. Bundled suites run from
 * .e2e/suite and .e2e/smoke/suite, at different depths, so a fixed number of `..` named the wrong folder.
 */
function findRepoRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest) && (JSON.parse(fs.readFileSync(manifest, 'utf8')) as { name?: string }).name === 'adventure-storyteller') return dir;
    if (path.dirname(dir) === dir) throw new Error(`no adventure-storyteller package.json above ${from}`);
  }
}

export const REPO_ROOT = findRepoRoot(__dirname);
export const EXAMPLE_CAMPAIGN = path.join(REPO_ROOT, 'fixtures', 'example-campaign');

/** ../shared/corpora beside the checkout a local clone was made from (a CI clone in a temp folder). */
function besideOrigin(): string | undefined {
  try {
    const origin = execFileSync('git', ['-C', REPO_ROOT, 'remote', 'get-url', 'origin'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return path.isAbsolute(origin) ? path.resolve(origin, '..', 'shared', 'corpora') : undefined;
  } catch {
    return undefined;
  }
}

let corporaRoot: string | undefined;

/**
 * The real material in ../shared/corpora (see ../shared/corpora/README.md): STORYTELLER_CORPORA when set,
 * else beside this checkout, else beside the checkout it was cloned from.
 */
export function corpusPath(...parts: string[]): string {
  corporaRoot ??= [process.env.STORYTELLER_CORPORA, path.resolve(REPO_ROOT, '..', 'shared', 'corpora'), besideOrigin()].find(
    (dir): dir is string => dir !== undefined && dir !== '' && fs.existsSync(dir),
  );
  const dir = corporaRoot && path.join(corporaRoot, ...parts);
  if (!dir || !fs.existsSync(dir)) {
    throw new Error(`real corpus missing: ${parts.join('/')} (tests expect ../shared/corpora beside the checkout or its origin, or STORYTELLER_CORPORA)`);
  }
  return dir;
}

/**
 * Copy `k` of the D&D SRD written into `folder`, its files' mtimes `mtime` when given; returns how many files
 * it wrote. Copy 0 is the SRD itself; in copy k every body line (one with a letter or digit, not a heading or a
 * code fence) ends "Volume k.", so no passage of one copy repeats another's and the importer keeps them all,
 * as it would a real library that large.
 */
export function writeSrdCopy(folder: string, k: number, mtime?: Date): number {
  const source = corpusPath('dnd-srd-5.1');
  const rels = (fs.readdirSync(source, { recursive: true, encoding: 'utf8' }) as string[]).filter((f) => /\.(md|txt)$/i.test(f));
  const body = (line: string): boolean => /[\p{L}\p{N}]/u.test(line) && !/^\s*(#|```|~~~)/.test(line);
  for (const rel of rels) {
    const text = fs.readFileSync(path.join(source, rel), 'utf8');
    const target = path.join(folder, rel);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, k === 0 ? text : text.replace(/[^\r\n]+/g, (line) => (body(line) ? `${line.trimEnd()} Volume ${k}.` : line)));
    if (mtime) fs.utimesSync(target, mtime, mtime);
  }
  return rels.length;
}
