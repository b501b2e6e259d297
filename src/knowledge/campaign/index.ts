// Campaign files: campaign.yaml, how a file is classified, its front matter, decoding, and the shared vocabulary.
export { CAMPAIGN_FILE, CampaignError, DATA_DIR, EVAL_FILE, WORLD_INFO_DEFAULTS, findCampaignRoot, loadCampaign } from './campaign';
export type { Campaign, WorldInfoSettings } from './campaign';
export { classifySource, describeClassOrigin, isUnder } from './classify';
export type { Classification } from './classify';
export { DEFAULT_SIZE_CAP_BYTES, decodeSource, oversizeIssue } from './decode';
export { ReadRefusedError, readFailureReason, readFileBounded } from './boundedRead';
export {
  FRONT_MATTER_KEYS,
  WRITER_ONLY_FIELDS,
  changedWriterOnlyFields,
  frontMatterBlock,
  frontMatterData,
  splitFrontMatter,
  withFrontMatterField,
  withFrontMatterListItem,
  withoutFrontMatterFields,
  writerOnlyField,
  writerOnlyFieldsOf,
} from './frontMatter';
export { atxHeading } from './markdown';
export type { AtxHeading } from './markdown';
export type { FrontMatter, FrontMatterBlock, FrontMatterSplit, StatedField, WriterOnlyField } from './frontMatter';
export { ALWAYS_INCLUDED_SQL, ELIGIBLE_SQL, alwaysIncludeStanding, isAlwaysIncluded, sourceExclusion, standingFlags } from './sourceRules';
export type { EligibilityFields, ReadingStage, SourceExclusion } from './sourceRules';
export { linkLeavingCampaign, pathInside, unsafeName, unsafeRelativePath } from './paths';
export { applyTextEdit, changeBetween } from './textEdit';
export type { TextEdit } from './textEdit';
export { countWords, estimateTokens, tokensFor } from './tokens';
export { CHUNKING_VERSION, KNOWLEDGE_CLASSES, PARSER_VERSION, PRIORITIES, SCOPES, SELECTIVE_LOGIC, VISIBILITIES } from './types';
export type { ClassOrigin, DraftPassage, KnowledgeClass, LexicalState, PassageRecord, Priority, SelectiveLogic, SemanticState, SourceIssue, SourceRecord } from './types';
export { regexKeyIssues, triggersOf, worldInfoOf } from './triggers';
export { isRegexKey, refusedRegexKeys, regexKey, regexKeyRefusal } from './patterns';
export type { CompiledPattern, FilePattern } from './patterns';
export type { SourceTriggers, WorldInfoFields } from './triggers';
export { parseStatSchema, StatSchemaError } from './statSchema';
export type { StatDef, StatSchema } from './statSchema';
