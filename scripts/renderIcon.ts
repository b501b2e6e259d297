// Draws media/icon.png (the Marketplace and Open VSX icon, 128×128) from media/icon.svg in headless Chromium:
//   npx tsx scripts/renderIcon.ts
// The PNG is committed; run this again after changing the SVG.
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS, PROJECT_ROOT, requireChromium } from './codeServer';

const SIZE = 128;

async function main(): Promise<void> {
  const svg = fs.readFileSync(path.join(PROJECT_ROOT, 'media', 'icon.svg'), 'utf8');
  const browser = await chromium.launch({ executablePath: requireChromium(), args: CHROMIUM_ARGS, headless: true });
  try {
    const page = await browser.newPage({ viewport: { width: SIZE, height: SIZE }, deviceScaleFactor: 1 });
    await page.setContent(`<html><body style="margin:0;background:transparent">${svg}</body></html>`);
    await page.locator('svg').screenshot({ path: path.join(PROJECT_ROOT, 'media', 'icon.png'), omitBackground: true });
  } finally {
    await browser.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
