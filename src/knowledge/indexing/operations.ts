import fs from 'node:fs';
import path from 'node:path';
import { CampaignError, ELIGIBLE_SQL, findCampaignRoot, loadCampaign, pathInside, sourceExclusion, type Campaign } from '../campaign';
import { importCampaignUnlocked, indexFile, type ImportOptions, type ImportReport } from './importer';
import { withIndexLock } from './indexLock';
import { KnowledgeStore } from './store';
import type { LexicalState, SemanticState, SourceRecord } from '../campaign';

/** The campaign containing `start` (a folder or file), searching upwards; a clear error when there is none. */
export function locateCampaign(start: string): Campaign {
  const root = findCampaignRoot(start);
  if (!root) throw new CampaignError(path.resolve(start), 'no campaign.yaml here or in any folder above it');
  return loadCampaign(root);
}

/**
 * Deletes a source: its file (through `removeFile`, so the extension can move it to the trash instead),
 * then its row, passages and index rows. Turn snapshots in the play database keep the text they were given.
 * Duplicates that left content out because this source held it are indexed in its place.
 */
export async function deleteSource(
  campaign: Campaign,
  store: KnowledgeStore,
  sourceId: string,
  options: ImportOptions & { removeFile?: (absPath: string) => Promise<void> } = {},
): Promise<ImportReport> {
  const source = store.getSource(sourceId);
  if (!source) throw new Error(`no source ${sourceId} in campaign ${campaign.id}`);
  const removeFile = options.removeFile ?? ((file: string) => fs.promises.rm(file, { force: true }));
  await removeFile(path.join(campaign.root, ...source.path.split('/')));
  return indexFile(campaign, store, source.path, options);
}

/**
 * Empties the derived index and imports every file again, as one transaction on a connection of its own:
 * every reader — `store`, a search in another process — keeps the whole old index until the new one is
 * complete and committed, and a failure or a crash leaves the old one as it was. Sources' files and the play
 * database are not touched; embeddings survive because they are keyed by passage content.
 */
export function rebuildIndex(campaign: Campaign, store: KnowledgeStore, options: ImportOptions = {}): Promise<ImportReport> {
  return withIndexLock(
    store.db,
    async () => {
      const builder = store.db.memory ? store : KnowledgeStore.open({ id: store.campaignId, indexPath: store.db.name });
      builder.db.exec('BEGIN IMMEDIATE');
      try {
        builder.clear();
        const report = await importCampaignUnlocked(campaign, builder, options);
        builder.db.exec('COMMIT');
        return report;
      } catch (error) {
        if (builder.db.inTransaction) builder.db.exec('ROLLBACK');
        throw error;
      } finally {
        if (builder !== store) builder.close();
      }
    },
    { onWait: options.onLockWait, signal: options.signal },
  );
}

export interface CampaignStatus {
  campaignId: string;
  sources: number;
  /** Passages available to lexical retrieval (of enabled, ready sources). */
  passages: number;
  enabled: number;
  disabled: number;
  lexical: Record<LexicalState, number>;
  semantic: Record<SemanticState, number>;
  errors: number;
  warnings: number;
  /** Latest update of any source, ISO time; null for an empty index. */
  updatedAt: string | null;
}

/** Lexical and semantic readiness reported separately: the vectors failing does not stop the library. */
export function campaignStatus(store: KnowledgeStore): CampaignStatus {
  const sources = store.listSources();
  const status: CampaignStatus = {
    campaignId: store.campaignId,
    sources: sources.length,
    passages: (
      store.db
        .prepare(
          `SELECT count(*) n FROM passages p JOIN sources s ON s.id = p.source_id
           WHERE s.campaign_id = @campaign AND ${ELIGIBLE_SQL}`,
        )
        .get({ campaign: store.campaignId, stage: 'narrator' }) as { n: number }
    ).n,
    enabled: 0,
    disabled: 0,
    lexical: { pending: 0, ready: 0, error: 0, duplicate: 0 },
    semantic: { off: 0, pending: 0, ready: 0, error: 0, stale: 0 },
    errors: 0,
    warnings: 0,
    updatedAt: null,
  };
  for (const s of sources) {
    if (s.enabled) status.enabled++;
    else status.disabled++;
    status.lexical[s.lexicalState]++;
    status.semantic[s.semanticState]++;
    status.errors += s.issues.filter((i) => i.severity === 'error').length;
    status.warnings += s.issues.filter((i) => i.severity === 'warning').length;
    if (!status.updatedAt || s.updatedAt > status.updatedAt) status.updatedAt = s.updatedAt;
  }
  return status;
}

export interface SourceStatus {
  lexical: LexicalState;
  semantic: SemanticState;
  passages: number;
  /** True when retrieval may use this source's passages. */
  retrievable: boolean;
}

export function sourceStatus(store: KnowledgeStore, source: SourceRecord): SourceStatus {
  const passages = (store.db.prepare('SELECT count(*) n FROM passages WHERE source_id = ?').get(source.id) as { n: number }).n;
  return {
    lexical: source.lexicalState,
    semantic: source.semanticState,
    passages,
    retrievable: sourceExclusion(source, 'narrator') === null && passages > 0,
  };
}

/** A source named by its id or by its path (campaign-relative, or any path to the file on disk). */
export function findSource(campaign: Campaign, store: KnowledgeStore, idOrPath: string, cwd: string): SourceRecord | undefined {
  const byId = store.getSource(idOrPath);
  if (byId) return byId;
  const direct = store.getSourceByPath(idOrPath.split(path.sep).join('/'));
  if (direct) return direct;
  const relative = pathInside(campaign.root, path.resolve(cwd, idOrPath));
  return relative === undefined ? undefined : store.getSourceByPath(relative);
}
