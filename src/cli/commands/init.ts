import fs from 'node:fs';
import path from 'node:path';
import { CAMPAIGN_FILE, DATA_DIR, DEFAULT_SIZE_CAP_BYTES, KNOWLEDGE_CLASSES, decodeSource, findCampaignRoot, loadCampaign, readFailureReason, splitFrontMatter, type KnowledgeClass } from '../../knowledge/campaign';
import { createFile } from '../../knowledge/files';
import { documentKind } from '../../knowledge/indexing';
import { EXIT, UsageError, emit, stringOption, type Command } from '../command';
import { oneLine } from '../terminalText';

/** What `init` found in a folder: the files the index would read, by folder, and the ones it would skip. */
interface FolderSurvey {
  folder: string;
  files: number;
  withFrontMatter: number;
}

interface Survey {
  folders: FolderSurvey[];
  skipped: { path: string; reason: string }[];
}

// The importer's own rules decide what is skipped: dot folders and files, node_modules, its data folder.
const NOT_WALKED = new Set([DATA_DIR, 'node_modules']);

function survey(root: string): Survey {
  const byFolder = new Map<string, FolderSurvey>();
  const skipped: Survey['skipped'] = [];
  const walk = (abs: string, rel: string): void => {
    for (const entry of fs.readdirSync(abs, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const relPath = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.name.startsWith('.') || NOT_WALKED.has(entry.name)) continue;
      if (entry.isDirectory()) {
        walk(path.join(abs, entry.name), relPath);
        continue;
      }
      if (!entry.isFile()) {
        skipped.push({ path: relPath, reason: entry.isSymbolicLink() ? 'a symbolic link (followed only when it stays inside the campaign)' : 'not a regular file' });
        continue;
      }
      if (!documentKind(relPath)) {
        skipped.push({ path: relPath, reason: `not markdown or text (${path.extname(entry.name) || 'no extension'}): only .md, .markdown and .txt are read` });
        continue;
      }
      let bytes: Buffer;
      try {
        bytes = fs.readFileSync(path.join(abs, entry.name));
      } catch (error) {
        skipped.push({ path: relPath, reason: `cannot be read: ${readFailureReason(error as NodeJS.ErrnoException)}` });
        continue;
      }
      const decoded = decodeSource(bytes, DEFAULT_SIZE_CAP_BYTES);
      if (!decoded.ok) {
        skipped.push({ path: relPath, reason: decoded.issue.message });
        continue;
      }
      const folder = rel || '.';
      const counts = byFolder.get(folder) ?? { folder, files: 0, withFrontMatter: 0 };
      counts.files++;
      if (splitFrontMatter(decoded.text).present) counts.withFrontMatter++;
      byFolder.set(folder, counts);
    }
  };
  walk(root, '');
  return { folders: [...byFolder.values()].sort((a, b) => a.folder.localeCompare(b.folder)), skipped };
}

/**
 * Top folders whose names say a setting bible's pages are in them (characters/, places/, world/). Their files
 * are made canon by a folder rule: left at reference, a bible's Codex and graph stay empty until the writer
 * edits campaign.yaml. A rules book's folders (Monsters, Spells) are not among them and stay reference.
 */
const BIBLE_FOLDERS = new Set(['characters', 'people', 'npcs', 'places', 'locations', 'world', 'worldbuilding', 'setting', 'factions', 'regions', 'lore', 'history', 'cities', 'nations', 'kingdoms', 'cultures', 'religions', 'gods']);

/** A campaign.yaml that explains itself: a writer reads it before anything else. */
function campaignYaml(title: string, defaultClass: KnowledgeClass, topFolders: readonly string[], canonFolders: readonly string[]): string {
  const rule = (f: string): string => `${JSON.stringify(f).slice(1, -1)}: canon`;
  const others = topFolders.filter((f) => !canonFolders.includes(f));
  const suggestions = others.length > 0 ? others.map((f) => `#   ${rule(f)}`) : canonFolders.length > 0 ? [] : ['#   characters: canon'];
  const rules =
    canonFolders.length > 0
      ? ['# Folder (relative to this file) -> class. These read like a setting bible; uncomment others that are campaign truth:', 'folders:', ...canonFolders.map((f) => `  ${rule(f)}`), ...suggestions]
      : ['# Folder (relative to this file) -> class. Uncomment the folders that are campaign truth:', '# folders:', ...suggestions];
  return [
    '# A Storyteller campaign: every .md, .markdown and .txt file below this folder is a source.',
    '# Each file is Canon (campaign truth), Reference (plausibility, never truth) or Inspiration (style only):',
    '# its front matter decides (class: canon), else the longest matching folder rule below, else default_class.',
    `title: ${JSON.stringify(title)}`,
    '# id: derived from the folder name; set it to keep the index and adventures when the folder is renamed.',
    `default_class: ${defaultClass}`,
    ...rules,
    '# Path prefixes never indexed:',
    '# ignore:',
    '#   - drafts/',
    '',
  ].join('\n');
}

export const initCommand: Command = {
  usage: 'storyteller init [dir] [--title T] [--default-class reference|canon|inspiration] [--json]',
  options: { title: { type: 'string' }, 'default-class': { type: 'string' } },
  async run(args, io) {
    const root = path.resolve(io.cwd, args.positionals[0] ?? '.');
    const chosenClass = stringOption(args, 'default-class');
    const defaultClass = chosenClass ?? 'reference';
    if (!(KNOWLEDGE_CLASSES as readonly string[]).includes(defaultClass)) throw new UsageError(`--default-class must be one of ${KNOWLEDGE_CLASSES.join(', ')}, not '${defaultClass}'`);
    if (!fs.existsSync(root) || !fs.statSync(root).isDirectory()) throw new UsageError(`${root}: no such folder`);
    const file = path.join(root, CAMPAIGN_FILE);
    if (fs.existsSync(file)) throw new UsageError(`${file} already exists and was left as it is; run 'storyteller index ${root}' to index the campaign`);
    const enclosing = findCampaignRoot(path.dirname(root));
    if (enclosing) throw new UsageError(`${root} is inside the campaign at ${enclosing} (its ${CAMPAIGN_FILE}); campaigns do not nest — its files are already that campaign's sources`);

    const title = (stringOption(args, 'title') ?? path.basename(root)).trim();
    if (!title) throw new UsageError('--title is empty');
    const found = survey(root);
    const topFolders = [...new Set(found.folders.map((f) => f.folder.split('/')[0]!).filter((f) => f !== '.'))];
    // A class the writer chose is theirs for every file; otherwise a bible's own folders are canon.
    const canonFolders = chosenClass === undefined ? topFolders.filter((f) => BIBLE_FOLDERS.has(f.toLowerCase())) : [];
    // Create-only: never overwrite a campaign.yaml that appeared since the check.
    createFile(file, campaignYaml(title, defaultClass as KnowledgeClass, topFolders, canonFolders));
    const campaign = loadCampaign(root);
    const next = `storyteller index ${JSON.stringify(root)}`;
    const total = found.folders.reduce((n, f) => n + f.files, 0);
    emit(io, args, { file, campaign: { id: campaign.id, title: campaign.title, defaultClass, canonFolders }, folders: found.folders, skipped: found.skipped, next }, () => {
      const width = Math.max(6, ...found.folders.map((f) => oneLine(f.folder).length));
      return [
        `Wrote ${file}: "${oneLine(campaign.title)}" (id ${campaign.id}), files without a class are ${defaultClass}.`,
        ...(canonFolders.length > 0
          ? [`${canonFolders.map((f) => `${oneLine(f)}/`).join(', ')} read${canonFolders.length === 1 ? 's' : ''} like a setting bible: ${canonFolders.length === 1 ? 'its' : 'their'} files are canon (folders: in campaign.yaml; --default-class sets one class for all).`]
          : []),
        total === 0 ? 'No markdown or text files here yet.' : `Found ${total} file${total === 1 ? '' : 's'} to index:`,
        ...found.folders.map((f) => `  ${oneLine(f.folder).padEnd(width)}  ${f.files} file${f.files === 1 ? '' : 's'}, ${f.withFrontMatter} with front matter`),
        ...(found.skipped.length > 0 ? [`Would skip ${found.skipped.length}:`, ...found.skipped.map((s) => `  ${oneLine(s.path)}  ${s.reason}`)] : []),
        `Next: ${next}`,
      ].join('\n');
    });
    return EXIT.ok;
  },
};
