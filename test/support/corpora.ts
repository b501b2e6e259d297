import fs from 'node:fs';
import path from 'node:path';

/** The real material in ../shared/corpora beside the project checkout (see ../shared/corpora/README.md). */
export function corpusPath(...parts: string[]): string {
  const dir = path.resolve(__dirname, '..', '..', '..', 'shared', 'corpora', ...parts);
  if (!fs.existsSync(dir)) {
    throw new Error(`real corpus missing: ${dir} (tests expect ../shared/corpora beside the checkout)`);
  }
  return dir;
}

export const REPO_ROOT = path.resolve(__dirname, '..', '..');
export const EXAMPLE_CAMPAIGN = path.join(REPO_ROOT, 'fixtures', 'example-campaign');
