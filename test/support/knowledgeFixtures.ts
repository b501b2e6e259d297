import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCampaign, type Campaign } from '../../src/knowledge/campaign/campaign';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { estimateTokens } from '../../src/knowledge/campaign/tokens';
import { indexKnowledge } from '../../src/story/indexKnowledge';
import type { KnowledgePort } from '../../src/story/ports';
import { CHUNKING_VERSION, PARSER_VERSION, type PassageRecord, type SourceRecord } from '../../src/knowledge/campaign/types';
import { EXAMPLE_CAMPAIGN } from './corpora';

/** A source written straight into the store, for tests that exercise retrieval without the importer. */
export interface FixtureSource {
  path: string;
  /** One passage per entry: `[heading trail, text]`. */
  passages: [string[], string][];
  class?: SourceRecord['class'];
  enabled?: boolean;
  visibility?: SourceRecord['visibility'];
  alwaysInclude?: boolean;
  priority?: SourceRecord['priority'];
  tags?: string[];
  entities?: string[];
  lexicalState?: SourceRecord['lexicalState'];
}

const sha = (text: string) => crypto.createHash('sha256').update(text).digest('hex');

export function writeFixtureSource(store: KnowledgeStore, fixture: FixtureSource): SourceRecord {
  const content = fixture.passages.map(([, text]) => text).join('\n\n');
  const now = '2026-01-01T00:00:00.000Z';
  const source: SourceRecord = {
    id: `${store.campaignId}:${fixture.path}`,
    campaignId: store.campaignId,
    path: fixture.path,
    title: fixture.path.replace(/\.md$/, ''),
    class: fixture.class ?? 'canon',
    classOrigin: { kind: 'front-matter' },
    enabled: fixture.enabled ?? true,
    visibility: fixture.visibility ?? 'normal',
    alwaysInclude: fixture.alwaysInclude ?? false,
    priority: fixture.priority ?? 'normal',
    scope: null,
    tags: fixture.tags ?? [],
    entities: fixture.entities ?? [],
    notes: null,
    sha256: sha(content),
    size: content.length,
    mtimeMs: 0,
    importedAt: now,
    updatedAt: now,
    parserVersion: PARSER_VERSION,
    chunkingVersion: CHUNKING_VERSION,
    lexicalState: fixture.lexicalState ?? 'ready',
    semanticState: 'off',
    duplicateOf: null,
    issues: [],
  };
  let line = 1;
  const passages: PassageRecord[] = fixture.passages.map(([headingPath, text], index) => {
    const lines = text.split('\n').length;
    const passage: PassageRecord = {
      id: `${source.id}#${index}`,
      sourceId: source.id,
      campaignId: store.campaignId,
      index,
      class: source.class,
      headingPath,
      text,
      tokenCount: estimateTokens(text),
      contentHash: sha(text),
      startLine: line,
      endLine: line + lines - 1,
    };
    line += lines + 1;
    return passage;
  });
  store.writeSource(source, content, passages);
  return source;
}

export function storeWith(campaignId: string, fixtures: FixtureSource[]): KnowledgeStore {
  const store = KnowledgeStore.inMemory(campaignId);
  for (const f of fixtures) writeFixtureSource(store, f);
  return store;
}

/**
 * A temporary campaign holding copies of real corpora (`folder → corpus`), imported by the real importer
 * into an on-disk index, as a writer's own library would be. `dispose` removes it all.
 */
export async function importCorpora(
  id: string,
  folders: Record<string, { corpus: string; class: SourceRecord['class'] }>,
): Promise<{ campaign: Campaign; store: KnowledgeStore; dispose: () => void }> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `st-${id}-`));
  const rules = Object.entries(folders).map(([folder, f]) => `  ${folder}: ${f.class}`);
  fs.writeFileSync(path.join(root, 'campaign.yaml'), `id: ${id}\ntitle: ${id}\nfolders:\n${rules.join('\n')}\n`);
  for (const [folder, f] of Object.entries(folders)) fs.cpSync(f.corpus, path.join(root, folder), { recursive: true });
  const campaign = loadCampaign(root);
  const store = KnowledgeStore.open(campaign);
  await importCampaign(campaign, store);
  return {
    campaign,
    store,
    dispose: () => {
      store.close();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Adds `copies` more copies of every source under `copyN/` paths, bypassing the importer's de-duplication. */
export function replicateSources(store: KnowledgeStore, copies: number): void {
  const sources = store.listSources();
  store.db.transaction(() => {
    for (let copy = 1; copy <= copies; copy++) {
      for (const source of sources) {
        const id = `${source.id}~${copy}`;
        const passages = store.listPassages(source.id).map((p) => ({ ...p, id: `${p.id}~${copy}`, sourceId: id }));
        store.writeSource({ ...source, id, path: `copy${copy}/${source.path}`, duplicateOf: null }, store.getSourceContent(source.id) ?? '', passages);
      }
    }
  })();
}

/** An independent copy of a store's index in a new temporary file, so a test can change it freely. */
export function cloneStore(store: KnowledgeStore): { store: KnowledgeStore; dispose: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-clone-'));
  const indexPath = path.join(dir, 'index.db');
  fs.writeFileSync(indexPath, store.db.serialize());
  const clone = KnowledgeStore.open({ id: store.campaignId, indexPath });
  return {
    store: clone,
    dispose: () => {
      clone.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A copy of the example campaign, indexed by the real importer, with the story engine's port over it:
 * story tests see what a writer's play would see. Edits go through the files and a reindex.
 */
export class IndexedExampleCampaign {
  private constructor(
    readonly campaign: Campaign,
    readonly store: KnowledgeStore,
  ) {}

  static async open(): Promise<IndexedExampleCampaign> {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'st-example-'));
    fs.cpSync(EXAMPLE_CAMPAIGN, root, { recursive: true });
    const campaign = loadCampaign(root);
    const indexed = new IndexedExampleCampaign(campaign, KnowledgeStore.open(campaign));
    await importCampaign(campaign, indexed.store);
    return indexed;
  }

  get port(): KnowledgePort {
    return indexKnowledge(this.store);
  }

  /** Writes (or with `null` deletes) a campaign file and reindexes, as the watcher would. */
  async edit(rel: string, content: string | null): Promise<void> {
    const file = path.join(this.campaign.root, ...rel.split('/'));
    if (content === null) fs.rmSync(file);
    else fs.writeFileSync(file, content);
    await importCampaign(this.campaign, this.store);
  }

  dispose(): void {
    this.store.close();
    fs.rmSync(this.campaign.root, { recursive: true, force: true });
  }
}
