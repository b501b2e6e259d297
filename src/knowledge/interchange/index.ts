// Interchange: campaign bundles, lorebooks (SillyTavern, Character Cards, CharX, NovelAI, Agnai, RisuAI) and files brought into a campaign.
export { BUNDLE_EXTENSION, BundleError, bundleImportReport, describePlayData, exportCampaignBundle, importCampaignBundle, type ExportSource } from './bundle';
export type { ExportSummary, ImportBundleSummary, LeftOut } from './bundle';
export { importFilesIntoCampaign } from './fileImport';
export type { FileImportResult } from './fileImport';
export { LorebookError } from './lorebook';
export { exportCampaignWorldInfo, worldInfoExportReport } from './lorebookExport';
export type { WorldInfoExportResult } from './lorebookExport';
export { DEFAULT_LORE_FOLDER, importLorebookFile, lorebookImportReport } from './lorebookImport';
export type { LorebookImportResult } from './lorebookImport';
