// Indexing: parsing and chunking files into passages, and the derived SQLite index (index.db) they are written to.
export { passageLabel } from './chunker';
export { SOURCE_EXTENSIONS, documentKind, importCampaign, indexFile, isCandidateSource } from './importer';
export type { FileOutcome, ImportOptions, ImportReport } from './importer';
export { INDEX_MIGRATIONS } from './indexSchema';
export { PLAY_MIGRATIONS } from './playSchema';
export { DamagedPlayError, describePlayProblem, playDataProblem, readStoredStatSchema, storyProblem, turnLinkProblem } from './playStory';
export type { PlayStoryProblem } from './playStory';
export { campaignStatus, findSource, locateCampaign, rebuildIndex, sourceStatus } from './operations';
export { inThreadParser, workerParser } from './parsePool';
export { inProcessWriter, workerWriter } from './indexWriter';
export type { IndexWriter } from './indexWriter';
export type { Parser } from './parsePool';
export { assertFts5, cachedStatement, migrate, openDatabase, statementCache } from './sqlite';
export type { Db, Migration } from './sqlite';
export { CJK_CHARS, CJK_RUN, ftsText } from './indexText';
export { KnowledgeStore } from './store';
export type { PassageRow } from './store';
