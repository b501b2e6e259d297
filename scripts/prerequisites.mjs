// What the machine needs before the long steps, checked in the first second with plain Node (no packages):
//   node scripts/prerequisites.mjs start   what `npm start` needs: a C++ toolchain and libkrb5's headers to build
//                                          code-server's native modules (skipped once code-server is installed)
//   node scripts/prerequisites.mjs test    the same, and Chromium, which drives the workbench in the tests
//   node scripts/prerequisites.mjs test --apt-packages   prints only the Debian packages missing (for .ci/run)
// On a miss it prints the one line that installs what is missing, and exits 1 before anything is downloaded.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const CHROMIUM = '/usr/bin/chromium';
// Runs on whatever Node the machine has before `npm ci` brings Node 24, so nothing newer than Node 18 here.
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CODE_SERVER = path.join(ROOT, '.cache', 'code-server', 'node_modules', 'code-server', 'out', 'node', 'entry.js');

function onPath(command) {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => dir !== '' && fs.existsSync(path.join(dir, command)));
}

/** Each need: what it is for, whether it is there, and the Debian package that brings it. */
function needs(purpose) {
  const building = !fs.existsSync(CODE_SERVER);
  return [
    { what: 'a C++ compiler (g++)', package: 'g++', present: () => onPath('g++') || onPath('c++'), wanted: building },
    { what: 'make', package: 'make', present: () => onPath('make'), wanted: building },
    { what: 'python3 (node-gyp)', package: 'python3', present: () => onPath('python3'), wanted: building },
    { what: "libkrb5's headers (/usr/include/gssapi)", package: 'libkrb5-dev', present: () => fs.existsSync('/usr/include/gssapi/gssapi.h') || fs.existsSync('/usr/include/gssapi.h'), wanted: building },
    { what: `Chromium (${CHROMIUM})`, package: 'chromium', present: () => fs.existsSync(CHROMIUM), wanted: purpose === 'test' },
  ].filter((need) => need.wanted && !need.present());
}

function main() {
  const purpose = process.argv[2] === 'test' ? 'test' : 'start';
  const missing = needs(purpose);
  if (process.argv.includes('--apt-packages')) {
    console.log(missing.map((need) => need.package).join(' '));
  } else if (missing.length > 0) {
    const why = purpose === 'test' ? 'npm test builds code-server (VS Code in a browser) once and drives it with Chromium' : 'npm start builds code-server (VS Code in a browser) once';
    console.error(`Missing: ${missing.map((need) => need.what).join(', ')}. ${why}. Install with:\n\n  sudo apt-get install -y ${missing.map((need) => need.package).join(' ')}\n`);
    if (!fs.existsSync('/etc/debian_version')) console.error("(Package names are Debian's and Ubuntu's; other systems name them alike.)");
    process.exit(1);
  }
}

// Run as a script, not when scripts/codeServer.ts imports the Chromium path.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
