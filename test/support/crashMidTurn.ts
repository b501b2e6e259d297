// Run as its own process by `turnsLeftByCrash`: writes turns into play.db as a turn in flight does, then dies by kill -9.
import { PlayStore } from '../../src/story/playStore';
import type { CrashedTurn } from './crashedPlay';

const [file, adventureId, parentId, turnsJson] = process.argv.slice(2) as [string, string, string, string];
const store = new PlayStore(file);
const ids: string[] = [];
let parent: string | null = parentId || null;
for (const spec of JSON.parse(turnsJson) as CrashedTurn[]) {
  const turn = store.createTurn({ adventureId, parentId: parent, action: { kind: 'do', text: spec.action }, model: 'llama3.2', stateAfter: {} });
  if (spec.streamed !== undefined) {
    store.markStreaming(turn.id);
    store.saveProgress(turn.id, spec.streamed);
  }
  ids.push(turn.id);
  parent = turn.id;
}
process.stdout.write(JSON.stringify(ids), () => process.kill(process.pid, 'SIGKILL'));
