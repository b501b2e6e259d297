import fs from 'node:fs';
import path from 'node:path';
import { loadCampaign, pathInside } from '../campaign';
import { DEFAULT_SIZE_CAP_BYTES, ReadRefusedError, decodeSource, oversizeIssue, readFileBounded } from '../campaign';
import { withFrontMatterField } from '../campaign';
import { createFile, writeFailure } from '../files';
import { documentKind } from '../indexing';
import type { KnowledgeClass } from '../campaign';
import { normalizeCampaignFolder } from './lorebookImport';

export interface FileImportOptions {
  campaignRoot: string;
  class: KnowledgeClass;
  /** Files above this are refused; default: the campaign's own cap, else the default cap. */
  sizeCapBytes?: number;
  /** Campaign-relative folder the copies go to (created when missing); default: the campaign folder itself. */
  folder?: string;
}

export interface ImportedFile {
  /** The file that was read. */
  file: string;
  /** Campaign-relative POSIX path of the copy. */
  path: string;
  /** The original name was taken in the campaign, so the copy got a numbered one. */
  renamed: boolean;
}

export interface RefusedFile {
  file: string;
  reason: string;
}

export interface FileImportResult {
  written: ImportedFile[];
  refused: RefusedFile[];
}

/** `stem.ext`, then `stem-2.ext`, `stem-3.ext`…: the first name not taken (compared case-insensitively, as macOS and Windows do). */
function freeName(name: string, taken: Set<string>): string {
  const ext = path.extname(name);
  const stem = name.slice(0, name.length - ext.length);
  let candidate = name;
  for (let n = 2; taken.has(candidate.toLowerCase()); n++) candidate = `${stem}-${n}${ext}`;
  return candidate;
}

/** Reads one file and returns the text to write, or why it cannot be a source of this campaign. */
function prepare(file: string, campaignRoot: string, cls: KnowledgeClass, sizeCap: number): { text: string } | { reason: string } {
  if (!documentKind(path.basename(file))) return { reason: 'is not a markdown or text file (.md, .markdown, .txt)' };
  if (pathInside(campaignRoot, file) !== undefined) return { reason: 'is already inside the campaign' };
  let bytes: Buffer;
  try {
    bytes = readFileBounded(file, sizeCap);
  } catch (error) {
    if (!(error instanceof ReadRefusedError)) throw error;
    return { reason: error.size !== undefined ? oversizeIssue(error.size, sizeCap).message : `cannot be read: ${error.message}` };
  }
  const decoded = decodeSource(bytes, sizeCap);
  if (!decoded.ok) return { reason: decoded.issue.message };
  try {
    return { text: withFrontMatterField(decoded.text, 'class', cls) };
  } catch (error) {
    return { reason: (error as Error).message };
  }
}

/**
 * Copies writer-chosen files into the campaign folder as sources of the chosen class (written into each
 * copy's front matter; the originals are only read). A file that cannot be a source (not text, not UTF-8,
 * over the size cap, broken front matter) is refused with the reason and nothing is written for it; a
 * name already taken in the campaign gets a numbered one, so no existing file is ever overwritten.
 */
export function importFilesIntoCampaign(files: readonly string[], options: FileImportOptions): FileImportResult {
  const campaign = loadCampaign(options.campaignRoot);
  const sizeCap = options.sizeCapBytes ?? campaign.sizeCapBytes ?? DEFAULT_SIZE_CAP_BYTES;
  const folder = options.folder ? normalizeCampaignFolder(options.folder) : '';
  const into = path.join(campaign.root, ...folder.split('/').filter(Boolean));
  fs.mkdirSync(into, { recursive: true });
  const taken = new Set(fs.readdirSync(into).map((n) => n.toLowerCase()));
  const result: FileImportResult = { written: [], refused: [] };
  for (const file of files.map((f) => path.resolve(f))) {
    const prepared = prepare(file, campaign.root, options.class, sizeCap);
    if ('reason' in prepared) {
      result.refused.push({ file, reason: prepared.reason });
      continue;
    }
    const name = freeName(path.basename(file), taken);
    try {
      // Create-only: a file that appeared since the folder was listed is never overwritten.
      createFile(path.join(into, name), prepared.text);
    } catch (error) {
      const reason = (error as NodeJS.ErrnoException).code === 'EEXIST' ? 'the name was taken while importing' : writeFailure(error);
      result.refused.push({ file, reason: `could not be written as ${name} (${reason})` });
      continue;
    }
    taken.add(name.toLowerCase());
    result.written.push({ file, path: folder ? `${folder}/${name}` : name, renamed: name !== path.basename(file) });
  }
  return result;
}
