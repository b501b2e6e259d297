import type { Database } from 'better-sqlite3';

/** The floor's search on an open database (see floor.mjs): a line's rowids by FTS5 bm25 top 20, null for a line with no words. */
export function floorSearcher(db: Database): (line: string) => number[] | null;
