import fs from 'node:fs';
import path from 'node:path';

/**
 * `file`'s path from `root` in POSIX form when it is `root` itself ('') or lies inside it; undefined when it
 * lies outside (up through `..`, or on another drive). A name that only starts with dots (`..notes.md`) is inside.
 */
export function pathInside(root: string, file: string): string | undefined {
  const rel = path.relative(root, file);
  if (path.isAbsolute(rel) || rel === '..' || rel.startsWith(`..${path.sep}`)) return undefined;
  return rel.split(path.sep).join('/');
}

/**
 * Why a campaign-relative POSIX path written by someone else (a bundle, an option) could land anywhere but
 * inside the campaign, or undefined when it cannot: relative, no `.`/`..` or empty segments, no drive
 * letter, no backslash, no NUL or control characters.
 */
export function unsafeRelativePath(p: string): string | undefined {
  if (p === '') return 'is empty';
  if ([...p].some((ch) => ch.charCodeAt(0) < 0x20)) return 'contains a NUL or control character';
  if (p.includes('\\')) return 'contains a backslash';
  if (p.startsWith('/') || /^[A-Za-z]:/.test(p)) return 'is absolute';
  if (p.split('/').some((s) => s === '' || s === '.' || s === '..')) return "has an empty, '.' or '..' segment";
  return undefined;
}

/**
 * Why writing the campaign-relative `relPath` would land outside `root` through a symbolic link (the file
 * itself, or the deepest folder of it that exists), or undefined when it stays inside. `relPath` must
 * already have passed unsafeRelativePath.
 */
export function linkLeavingCampaign(root: string, relPath: string): string | undefined {
  const realRoot = fs.realpathSync(root);
  let existing = path.join(root, ...relPath.split('/'));
  while (existing !== root && !fs.existsSync(existing)) existing = path.dirname(existing);
  const real = fs.realpathSync(existing);
  return pathInside(realRoot, real) === undefined ? `leads outside the campaign through a symbolic link (to ${real})` : undefined;
}
