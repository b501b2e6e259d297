import { cachedStatement, type Db } from '../indexing';
import { CONFLICT_DECISIONS, keepDecision, type CanonConflict, type ConflictDecision } from './conflicts';
import type { FactStatement } from './facts';

/**
 * The writer's decisions about conflicts, in play.db (`conflict_decisions`): play data, not derived, so a
 * reindex or an index rebuild never forgets that a pair was ignored or a suggestion dismissed.
 */

export interface StoredConflictDecision {
  key: string;
  decision: ConflictDecision;
  note: string | null;
  createdAt: string;
}

export function loadConflictDecisions(playDb: Db, campaignId: string): Map<string, ConflictDecision> {
  // Every turn reads them (retrieval supersedes canon by them): compiled once.
  const rows = cachedStatement(playDb, 'SELECT conflict_key, decision FROM conflict_decisions WHERE campaign_id = ?')
    .all(campaignId) as { conflict_key: string; decision: string }[];
  const decisions = new Map<string, ConflictDecision>();
  for (const row of rows) {
    // A value written by a newer build is left in place and treated as "no decision" here.
    if ((CONFLICT_DECISIONS as readonly string[]).includes(row.decision)) decisions.set(row.conflict_key, row.decision as ConflictDecision);
  }
  return decisions;
}

export function listConflictDecisions(playDb: Db, campaignId: string): StoredConflictDecision[] {
  const rows = playDb
    .prepare('SELECT conflict_key, decision, note, created_at FROM conflict_decisions WHERE campaign_id = ? ORDER BY created_at, conflict_key')
    .all(campaignId) as { conflict_key: string; decision: ConflictDecision; note: string | null; created_at: string }[];
  return rows.map((r) => ({ key: r.conflict_key, decision: r.decision, note: r.note, createdAt: r.created_at }));
}

export function recordConflictDecision(
  playDb: Db,
  campaignId: string,
  key: string,
  decision: ConflictDecision,
  note: string | null = null,
  now: () => Date = () => new Date(),
): void {
  playDb
    .prepare(
      `INSERT INTO conflict_decisions (campaign_id, conflict_key, decision, note, created_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (campaign_id, conflict_key) DO UPDATE SET decision = excluded.decision, note = excluded.note, created_at = excluded.created_at`,
    )
    .run(campaignId, key, decision, note, now().toISOString());
}

/** The writer settles a conflict by keeping one statement: the other is sent as superseded, no file is edited. */
export function keepStatement(playDb: Db, campaignId: string, conflict: CanonConflict, statement: FactStatement): void {
  recordConflictDecision(playDb, campaignId, conflict.key, keepDecision(conflict, statement));
}

/** Un-ignores a pair (or un-dismisses a suggestion): it is shown again. */
export function clearConflictDecision(playDb: Db, campaignId: string, key: string): boolean {
  return playDb.prepare('DELETE FROM conflict_decisions WHERE campaign_id = ? AND conflict_key = ?').run(campaignId, key).changes > 0;
}
