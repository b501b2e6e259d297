import fs from 'node:fs';
import path from 'node:path';
import { DATA_DIR } from './campaign';

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
 * Folders a writer's tools run or trust what is inside of (git's config and hooks, editor tasks, CI
 * workflows, installed packages) and the product's own data folder: never written from someone else's names.
 */
const PROTECTED_FOLDERS = ['.git', '.vscode', '.github', 'node_modules', DATA_DIR];

/** Names Windows opens as a device whatever the extension (`CON.md` is the console); superscript digits count. */
const DEVICE_NAME = /^(con|prn|aux|nul|com[0-9]|lpt[0-9]|conin\$|conout\$)$/;

/**
 * A name as the strictest file system compares it: Unicode-compatible form (a full-width `Ｇ` or a superscript
 * `¹` is the plain character), invisible code points dropped (macOS ignores some), case folded.
 */
function foldedName(segment: string): string {
  return segment.normalize('NFKC').replace(/\p{Default_Ignorable_Code_Point}/gu, '').toLowerCase();
}

/**
 * Why one segment of a path someone else wrote could name something else on some writer's machine, or
 * undefined when it names only itself everywhere.
 */
function unsafeSegment(segment: string): string | undefined {
  if (/[. ]$/.test(segment)) return 'ends in a dot or a space, which Windows drops (so `.git.` is `.git` there)';
  const folded = foldedName(segment);
  const protectedFolder = PROTECTED_FOLDERS.find((name) => name === folded);
  if (protectedFolder !== undefined) {
    return `${segment === protectedFolder ? 'is' : `is ${protectedFolder} in another spelling (file systems that fold case or Unicode read it so), which is`} a folder imported content never writes into`;
  }
  const stem = folded.split('.')[0]!.trimEnd();
  if (DEVICE_NAME.test(stem)) return `is a name Windows reserves for a device (${stem.toUpperCase()}), whatever its extension`;
  if (/~[0-9]+$/.test(stem)) return 'has the shape of a Windows short name (like GIT~1), which can name another file there';
  return undefined;
}

/**
 * Why a well-formed campaign-relative POSIX path someone else wrote (a bundle member, a lorebook's folder or
 * entry, a proposal) must not be written, or undefined when it may: a segment that is a protected folder in any
 * spelling, a Windows device or short name, or one Windows would trim. Check `unsafeRelativePath` first.
 */
export function unsafeName(p: string): string | undefined {
  for (const segment of p.split('/')) {
    const why = unsafeSegment(segment);
    if (why) return `'${segment}' ${why}`;
  }
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
