import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { splitFrontMatter } from '../campaign';
import { LorebookError } from './lorebook';
import { KnowledgeStore } from '../indexing';
import type { SourceRecord } from '../campaign';

/**
 * A campaign's canon as a SillyTavern World Info file: one entry per Canon source, entities → `key`,
 * always_include → `constant`, enabled: false → `disable`, title → `comment`, the body (front matter
 * removed) → `content`. The other fields get SillyTavern's own defaults so the file behaves like a new book.
 */

export interface WorldInfoEntry {
  uid: number;
  key: string[];
  keysecondary: string[];
  comment: string;
  content: string;
  constant: boolean;
  disable: boolean;
  [field: string]: unknown;
}

export interface WorldInfoFile {
  entries: Record<string, WorldInfoEntry>;
}

export interface WorldInfoExportResult {
  file: string;
  entries: { uid: number; path: string; title: string }[];
  /** Canon sources with no entities, keyed by their title instead. */
  keyedByTitle: string[];
  /** Canon sources left out, and why. */
  skipped: { path: string; reason: string }[];
}

// SillyTavern's defaults for a new entry (as in its current World Info files).
const ST_ENTRY_DEFAULTS = {
  selective: true,
  selectiveLogic: 0,
  addMemo: true,
  order: 100,
  position: 0,
  excludeRecursion: false,
  preventRecursion: false,
  delayUntilRecursion: false,
  probability: 100,
  useProbability: true,
  depth: 4,
  group: '',
  groupOverride: false,
  groupWeight: 100,
  scanDepth: null,
  caseSensitive: null,
  matchWholeWords: null,
  useGroupScoring: null,
  automationId: '',
  role: null,
  vectorized: false,
  sticky: 0,
  cooldown: 0,
  delay: 0,
} as const;

/** World Info entries for Canon sources, in path order. `contentOf` gives a source's text as indexed. */
export function worldInfoFromSources(
  sources: readonly SourceRecord[],
  contentOf: (source: SourceRecord) => string | undefined,
): { file: WorldInfoFile; result: Omit<WorldInfoExportResult, 'file'> } {
  const result: Omit<WorldInfoExportResult, 'file'> = { entries: [], keyedByTitle: [], skipped: [] };
  const entries: Record<string, WorldInfoEntry> = {};
  for (const source of [...sources].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    if (source.class !== 'canon') continue;
    if (source.lexicalState === 'error') {
      result.skipped.push({ path: source.path, reason: 'the file could not be read or indexed' });
      continue;
    }
    if (source.duplicateOf !== null) {
      result.skipped.push({ path: source.path, reason: 'same content as another source, which is exported' });
      continue;
    }
    const content = contentOf(source);
    if (content === undefined) {
      result.skipped.push({ path: source.path, reason: 'no indexed text' });
      continue;
    }
    const uid = result.entries.length;
    if (source.entities.length === 0) result.keyedByTitle.push(source.path);
    entries[String(uid)] = {
      uid,
      key: source.entities.length > 0 ? [...source.entities] : [source.title],
      keysecondary: [],
      comment: source.title,
      content: splitFrontMatter(content).body,
      constant: source.alwaysInclude,
      disable: !source.enabled,
      ...ST_ENTRY_DEFAULTS,
      displayIndex: uid,
    };
    result.entries.push({ uid, path: source.path, title: source.title });
  }
  return { file: { entries }, result };
}

/**
 * Writes the campaign's canon as World Info to `outFile` (atomically; an existing file only with `force`).
 * It only reads the index the campaign session keeps, imported with the writer's settings.
 */
export function exportCampaignWorldInfo(store: KnowledgeStore, outFile: string, options: { force?: boolean } = {}): WorldInfoExportResult {
  const out = path.resolve(outFile);
  if (!options.force && fs.existsSync(out)) throw new LorebookError(out, 'already exists; choose another name or pass --force to replace it');
  const built = worldInfoFromSources(store.listSources(), (s) => store.getSourceContent(s.id));
  const temp = `${out}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    fs.writeFileSync(temp, `${JSON.stringify(built.file, null, 4)}\n`, { flag: 'wx' });
    fs.renameSync(temp, out);
  } catch (error) {
    fs.rmSync(temp, { force: true });
    throw new LorebookError(out, `could not write the World Info file (${error instanceof Error ? error.message : String(error)})`);
  }
  return { file: out, ...built.result };
}
