import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A real campaign folder in a temp dir: `files` maps campaign-relative paths to their content. */
export function makeCampaign(files: Record<string, string | Uint8Array>, campaignYaml = 'id: test\ntitle: Test Campaign\n'): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'st-campaign-'));
  fs.writeFileSync(path.join(root, 'campaign.yaml'), campaignYaml);
  for (const [rel, content] of Object.entries(files)) writeFile(root, rel, content);
  return root;
}

export function writeFile(root: string, rel: string, content: string | Uint8Array): void {
  const file = path.join(root, ...rel.split('/'));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
}

export function removeDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}
