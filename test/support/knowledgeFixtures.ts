import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { KnowledgeStore } from '../../src/knowledge/store';
import { estimateTokens } from '../../src/knowledge/tokens';
import { CHUNKING_VERSION, PARSER_VERSION, type PassageRecord, type SourceRecord } from '../../src/knowledge/types';

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
 * A folder of markdown written into the store one paragraph group per passage (~120 words), front matter
 * dropped. Stands in for the importer where a test needs real material rather than the importer's rules.
 */
export function writeFolderAsFixtures(
  store: KnowledgeStore,
  root: string,
  options: { class?: SourceRecord['class']; /** Prepended to each campaign-relative path. */ prefix?: string } = {},
): number {
  let count = 0;
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.md')) {
        const body = fs.readFileSync(full, 'utf8').replace(/^---\n[\s\S]*?\n---\n/, '');
        const passages: [string[], string][] = [];
        let heading: string[] = [];
        let buffer: string[] = [];
        const flush = () => {
          if (buffer.join(' ').trim()) passages.push([heading, buffer.join('\n\n')]);
          buffer = [];
        };
        for (const block of body.split(/\n\s*\n/)) {
          const h = /^(#+)\s+(.*)/.exec(block.trim());
          if (h) {
            flush();
            heading = [...heading.slice(0, h[1]!.length - 1), h[2]!];
            continue;
          }
          buffer.push(block.trim());
          if (buffer.join(' ').split(/\s+/).length > 120) flush();
        }
        flush();
        if (passages.length === 0) continue;
        writeFixtureSource(store, { path: `${options.prefix ?? ''}${path.relative(root, full).split(path.sep).join('/')}`, class: options.class ?? 'canon', passages });
        count++;
      }
    }
  };
  walk(root);
  return count;
}
