// The campaign `npm start` opens: a copy of the example in an ignored folder, so what a writer adds or plays
// there never changes the tracked fixture the tests read.
import fs from 'node:fs';
import path from 'node:path';

/**
 * Workspace settings of the copy. A browser workbench saves after every pause by default, and each save
 * rewrites and reindexes a campaign file while the writer is still typing; here the writer saves.
 */
export const DEMO_WORKSPACE_SETTINGS = { 'files.autoSave': 'off' };

/**
 * Copies `fixture` to `target` when `target` is missing (without the fixture's index, if it has one) and
 * returns whether it did; an existing copy is the writer's and is left as it is.
 */
export function ensureDemoCampaign(fixture: string, target: string): boolean {
  if (fs.existsSync(target)) return false;
  const partial = `${target}.partial`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.cpSync(fixture, partial, { recursive: true, filter: (src) => path.basename(src) !== '.storyteller' });
  fs.mkdirSync(path.join(partial, '.vscode'), { recursive: true });
  fs.writeFileSync(path.join(partial, '.vscode', 'settings.json'), `${JSON.stringify(DEMO_WORKSPACE_SETTINGS, null, 2)}\n`);
  // Renamed into place whole, so an interrupted copy is never taken for the writer's campaign.
  fs.renameSync(partial, target);
  return true;
}
