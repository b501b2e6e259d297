import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');
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
