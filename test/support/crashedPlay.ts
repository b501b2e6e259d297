import { spawn } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT } from './corpora';

export interface CrashedTurn {
  action: string;
  /** Text streamed and saved before the crash; without it the turn was still pending. */
  streamed?: string;
}

/**
 * Turns a process left in play.db when it was killed mid-generation: another process writes them (each the
 * child of the one before, the first after `parentId`) and dies by kill -9. Returns their ids.
 */
export async function turnsLeftByCrash(playPath: string, adventureId: string, parentId: string | null, turns: CrashedTurn[]): Promise<string[]> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'crashMidTurn.ts'), playPath, adventureId, parentId ?? '', JSON.stringify(turns)], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_code, sig) => resolve(sig)));
  if (signal !== 'SIGKILL') throw new Error(`the crashing process ended without being killed: ${err}`);
  return JSON.parse(out) as string[];
}
