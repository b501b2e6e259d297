// Campaign files: campaign.yaml, how a file is classified, its front matter, decoding, and the shared vocabulary.
export { CAMPAIGN_FILE, CampaignError, DATA_DIR, findCampaignRoot, loadCampaign } from './campaign';
export type { Campaign } from './campaign';
export { classifySource, describeClassOrigin, isUnder } from './classify';
export type { Classification } from './classify';
export { DEFAULT_SIZE_CAP_BYTES, decodeSource, oversizeIssue } from './decode';
export { ReadRefusedError, readFileBounded } from './boundedRead';
export { frontMatterData, splitFrontMatter, withFrontMatterField, withFrontMatterListItem } from './frontMatter';
export { atxHeading } from './markdown';
export type { AtxHeading } from './markdown';
export type { FrontMatter, FrontMatterSplit } from './frontMatter';
export { ALWAYS_INCLUDED_SQL, ELIGIBLE_SQL, alwaysIncludeStanding, isAlwaysIncluded, sourceExclusion, standingFlags } from './sourceRules';
export type { EligibilityFields, ReadingStage, SourceExclusion } from './sourceRules';
export { pathInside, unsafeRelativePath } from './paths';
export { applyTextEdit, changeBetween } from './textEdit';
export type { TextEdit } from './textEdit';
export { estimateTokens } from './tokens';
export { CHUNKING_VERSION, KNOWLEDGE_CLASSES, PARSER_VERSION, PRIORITIES, SCOPES, VISIBILITIES } from './types';
export type { ClassOrigin, DraftPassage, KnowledgeClass, LexicalState, PassageRecord, Priority, SemanticState, SourceIssue, SourceRecord } from './types';
