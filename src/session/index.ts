// The campaign session: one owner per campaign of its config, stores, indexing queue and story engine.
export { DEFAULTS, defaultSettings, resolveServers, type EmbeddingProvider, type StorytellerSettings } from './defaults';
export { FILE_DEBOUNCE_MS, IndexingQueue, isIndexFile, systemClock, type Clock, type IndexChange, type IndexState, type Indexer } from './indexingQueue';
export { CampaignSession, embedderFor, engineSettings, openSession, openSessionAt, type SessionLog, type SessionOptions } from './session';
export { DiskWorkspace, Emitter, type FileChange, type Workspace } from './workspace';
export { decideServerSources, SERVER_SETTINGS, serverUrlOf, UNTRUSTED_PROBLEM, type ServerSetting, type ServerSources, type SettingLayers, type WorkspaceServer } from './serverSources';
