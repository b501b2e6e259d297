// Campaign health: lint's checks over files and the index, and their report.
export { campaignHealth, healthSummary, indexHealth, openReadOnly, passageRetrievalCounts, retrievingTurnCount } from './health';
export { campaignFileFinding, summarizeFindings } from './lint';
export type { Finding, FindingSeverity, LintReport } from './lint';
export { groupRepeats, repeatGroupMessage } from './repeats';
export type { Repeat, RepeatFindings, RepeatGroup } from './repeats';
