import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkArchitecture } from '../../scripts/architecture.mjs';

/** A small project tree: each key a file under the root, each value its text. */
function tree(files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'storyteller-house-'));
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  }
  return root;
}

describe('the house rules (scripts/architecture.mjs, read by the lint rules)', () => {
  const roots: string[] = [];
  after(() => roots.forEach((root) => fs.rmSync(root, { recursive: true, force: true })));

  const house = {
    'src/models/index.ts': "export { ask } from './client';\n",
    'src/models/client.ts': 'export const ask = () => 1;\n',
    'src/knowledge/retrieval/index.ts': "export { search } from './search';\n",
    'src/knowledge/retrieval/search.ts': "import { ask } from '../../models';\nexport const search = () => ask();\n",
    'src/story/engine.ts': "import type { Turn } from './types';\nimport { search } from '../knowledge/retrieval';\nexport const turn = (t: Turn) => search() + t.n;\n",
    'src/story/types.ts': 'export interface Turn { n: number }\n',
    'src/session/session.ts': "import { turn } from '../story/engine';\nexport const play = () => turn({ n: 1 });\n",
    'src/cli/play.ts': "import { play } from '../session/session';\nimport { ask } from '../models';\nexport const run = () => play() + ask();\n",
  };

  it('finds nothing in a house whose imports all run down, skipping layers or not', () => {
    const root = tree(house);
    roots.push(root);
    assert.deepEqual(checkArchitecture(root), { cycles: [], upward: [] });
  });

  it('finds an import that runs up a layer, naming both ends', () => {
    const root = tree({ ...house, 'src/models/client.ts': "import type { Turn } from '../story/types';\nexport const ask = (t?: Turn) => t?.n ?? 1;\n" });
    roots.push(root);
    const { upward, cycles } = checkArchitecture(root);
    assert.deepEqual(upward, [{ from: 'src/models/client.ts', to: 'src/story/types.ts', fromLayer: 'models', toLayer: 'story' }]);
    assert.deepEqual(cycles, []);
  });

  it('finds a circle of files, type-only imports and re-exports included, however long', () => {
    const root = tree({
      ...house,
      'src/story/types.ts': "import type { Mood } from './mood';\nexport interface Turn { n: number; mood?: Mood }\n",
      'src/story/mood.ts': "export type { Weather as Mood } from './weather';\n",
      'src/story/weather.ts': "import type { Turn } from './types';\nexport type Weather = Turn['n'];\n",
    });
    roots.push(root);
    const { cycles, upward } = checkArchitecture(root);
    assert.deepEqual(cycles, [['src/story/mood.ts', 'src/story/types.ts', 'src/story/weather.ts']]);
    assert.deepEqual(upward, []);
  });

  it('finds a circle through a room entry, and a file importing itself', () => {
    const root = tree({
      ...house,
      'src/models/client.ts': "import { ask as again } from './index';\nexport const ask = (): number => again();\n",
      'src/story/types.ts': "import type { Turn as Self } from './types';\nexport interface Turn { n: number; next?: Self }\n",
    });
    roots.push(root);
    assert.deepEqual(checkArchitecture(root).cycles, [['src/models/client.ts', 'src/models/index.ts'], ['src/story/types.ts']]);
  });

  it('holds for this project: no upward import, no circle', () => {
    assert.deepEqual(checkArchitecture(path.resolve(__dirname, '../..')), { cycles: [], upward: [] });
  });
});
