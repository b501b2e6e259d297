import path from 'node:path';
import type { SourceIssue, SourceRecord } from '../campaign';

/** One source that repeats text another source already indexes, with the issue the index recorded for it. */
export interface Repeat {
  source: SourceRecord;
  issue: SourceIssue;
}

/** Reference or inspiration files of one folder repeating text held in the same folder(s). */
export interface RepeatGroup {
  /** The folder of the repeating files ('' for the campaign folder). */
  folder: string;
  /** The folders of the files holding the text, in order. */
  holderFolders: string[];
  /** Path order. */
  repeats: Repeat[];
}

export interface RepeatFindings {
  /** Canon repeating text: each on its own, since two canon files saying one thing may drift apart. */
  canon: Repeat[];
  /** Every other repeat, grouped by its folder and the folders its text is held in. */
  groups: RepeatGroup[];
}

const folderOf = (relPath: string): string => path.posix.dirname(relPath).replace(/^\.$/, '');

/**
 * Groups the repeats of a campaign so that material repeating itself by the hundred (the SRD's "(Alt)"
 * folders compile the files of their sibling folders) is a handful of findings, not one per file: the
 * repeats of one folder whose text is held in the same folders are one group.
 * `holderLinks` are the index's per-passage holders; a whole-file duplicate names its holder itself.
 */
export function groupRepeats(sources: readonly SourceRecord[], holderLinks: readonly { sourceId: string; holderId: string }[]): RepeatFindings {
  const pathOf = new Map(sources.map((s) => [s.id, s.path]));
  const holderFolders = new Map<string, Set<string>>();
  const link = (sourceId: string, holderId: string) => {
    const holder = pathOf.get(holderId);
    if (holder === undefined) return;
    const folders = holderFolders.get(sourceId) ?? new Set<string>();
    folders.add(folderOf(holder));
    holderFolders.set(sourceId, folders);
  };
  for (const { sourceId, holderId } of holderLinks) link(sourceId, holderId);
  for (const source of sources) if (source.duplicateOf) link(source.id, source.duplicateOf);

  const repeats: Repeat[] = sources.flatMap((source) => source.issues.filter((issue) => issue.code === 'duplicate').map((issue) => ({ source, issue })));
  const groups = new Map<string, RepeatGroup>();
  for (const repeat of repeats.filter((r) => r.source.class !== 'canon')) {
    const folder = folderOf(repeat.source.path);
    const held = [...(holderFolders.get(repeat.source.id) ?? [])].sort();
    const key = JSON.stringify([folder, held]);
    const group = groups.get(key) ?? { folder, holderFolders: held, repeats: [] };
    group.repeats.push(repeat);
    groups.set(key, group);
  }
  const byPath = (a: Repeat, b: Repeat) => a.source.path.localeCompare(b.source.path);
  for (const group of groups.values()) group.repeats.sort(byPath);
  return {
    canon: repeats.filter((r) => r.source.class === 'canon'),
    groups: [...groups.values()].sort((a, b) => byPath(a.repeats[0]!, b.repeats[0]!)),
  };
}

const folderName = (folder: string): string => folder || 'the campaign folder';

/** What a group of several repeats says in one line; a single repeat keeps its own message. */
export function repeatGroupMessage(group: RepeatGroup): string {
  if (group.repeats.length === 1) return group.repeats[0]!.issue.message;
  const sameFolder = group.holderFolders.length === 1 && group.holderFolders[0] === group.folder;
  const held = sameFolder ? 'other files there' : group.holderFolders.length > 0 ? group.holderFolders.map(folderName).join(', ') : 'other files';
  return `${group.repeats.length} files in ${folderName(group.folder)} repeat text already indexed from ${held}; it is indexed once, nothing to fix`;
}
