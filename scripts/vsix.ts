// Where `npm run package` puts a VSIX, and which better-sqlite3 binary each platform's VSIX carries.
import path from 'node:path';
import { PROJECT_ROOT, readManifest } from './codeServer';

/** vsce's platform targets that better-sqlite3 ships a prebuilt binary for, with that binary's name. */
export const PREBUILDS: Record<string, string> = {
  'linux-x64': 'linux-x64',
  'linux-arm64': 'linux-arm64',
  'alpine-x64': 'linuxmusl-x64',
  'alpine-arm64': 'linuxmusl-arm64',
  'darwin-x64': 'darwin-x64',
  'darwin-arm64': 'darwin-arm64',
  'win32-x64': 'win32-x64',
  'win32-arm64': 'win32-arm64',
};

export function thisMachinesTarget(): string {
  if (process.platform === 'linux') {
    // glibc's version is in the process report; a musl libc leaves it out (Alpine).
    const { header } = process.report.getReport() as { header: { glibcVersionRuntime?: string } };
    return `${header.glibcVersionRuntime ? 'linux' : 'alpine'}-${process.arch}`;
  }
  return `${process.platform}-${process.arch}`;
}

/** The VSIX for `target` (undefined: every platform's binaries) in dist/. */
export function vsixFile(target: string | undefined): string {
  const manifest = readManifest(PROJECT_ROOT);
  return path.join(PROJECT_ROOT, 'dist', `${manifest.name}-${manifest.version}-${target ?? 'universal'}.vsix`);
}
