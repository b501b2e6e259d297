import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { z } from 'zod';
import { ReadRefusedError, readFileBounded } from './boundedRead';
import { decodeSource } from './decode';
import { KNOWLEDGE_CLASSES, type KnowledgeClass } from './types';

/** A folder is a campaign when it holds this file. */
export const CAMPAIGN_FILE = 'campaign.yaml';
/** The campaign's own research questions (`storyteller eval`): the writer's, so a bundle carries it beside campaign.yaml. */
export const EVAL_FILE = 'eval.yaml';
/** Per-campaign data folder: the derived index and the play database. */
export const DATA_DIR = '.storyteller';

const CAMPAIGN_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/** campaign.yaml is a few lines; anything near this is not one. */
const MAX_CAMPAIGN_FILE_BYTES = 1024 * 1024;

/** The campaign's World Info settings: SillyTavern's global activation settings, its defaults when unset. */
export interface WorldInfoSettings {
  /** Messages scanned for keys, newest first (SillyTavern: 2). */
  scanDepth: number;
  /** Activated entries' text is scanned for further keys (SillyTavern: off). */
  recursive: boolean;
  /** Most scan passes, the first included; 0: no limit. */
  maxRecursionSteps: number;
  /** Widen the scan a message at a time until this many entries activate; 0: off. */
  minActivations: number;
  /** Widest scan min activations may reach; 0: the whole chat. */
  minActivationsDepthMax: number;
  /** Share of the context the entries may take, in percent (SillyTavern: 25). */
  budgetPercent: number;
  /** Most tokens, whatever the share; 0: no cap. */
  budgetCap: number;
  caseSensitive: boolean;
  matchWholeWords: boolean;
  useGroupScoring: boolean;
  /** Each message is scanned as `Name: message`, as SillyTavern's "include names" does (its default: on). */
  includeNames: boolean;
}

export const WORLD_INFO_DEFAULTS: Readonly<WorldInfoSettings> = Object.freeze({
  scanDepth: 2,
  recursive: false,
  maxRecursionSteps: 0,
  minActivations: 0,
  minActivationsDepthMax: 0,
  budgetPercent: 25,
  budgetCap: 0,
  caseSensitive: false,
  matchWholeWords: false,
  useGroupScoring: false,
  includeNames: true,
});

const count = z.number().int().min(0);

/** campaign.yaml's `world_info:`: SillyTavern's global activation settings, in its words. */
const WorldInfoFileSchema = z
  .object({
    scan_depth: count.optional(),
    recursive: z.boolean().optional(),
    max_recursion_steps: count.optional(),
    min_activations: count.optional(),
    min_activations_depth_max: count.optional(),
    budget_percent: z.number().min(1).max(100).optional(),
    budget_cap: count.optional(),
    case_sensitive: z.boolean().optional(),
    match_whole_words: z.boolean().optional(),
    use_group_scoring: z.boolean().optional(),
    include_names: z.boolean().optional(),
    /** Relevance may admit entries with SillyTavern behaviour too, beside its activation. */
    search_admits: z.boolean().optional(),
  })
  .strict();

export const CampaignFileSchema = z
  .object({
    /** Absent: derived from the folder's name. */
    id: z.string().regex(CAMPAIGN_ID, 'id must be lowercase letters, digits, - or _').optional(),
    title: z.string({ error: (issue) => (issue.input === undefined ? 'missing: a campaign.yaml needs at least a title: line' : 'must be text') }).min(1, 'is empty'),
    /** Class of a file that neither its front matter nor a folder rule classifies. */
    default_class: z.enum(KNOWLEDGE_CLASSES).default('reference'),
    /** Folder (campaign-relative) → class, e.g. `reference/srd: reference`. The longest match wins. */
    folders: z.record(z.string(), z.enum(KNOWLEDGE_CLASSES)).default({}),
    /** Campaign-relative path prefixes never imported. */
    ignore: z.array(z.string()).default([]),
    size_cap_bytes: z.number().int().positive().optional(),
    /** What new adventures track (player, world, npcs, flags, milestones); the story engine validates it. */
    stats: z.unknown().optional(),
    world_info: WorldInfoFileSchema.optional(),
  })
  .strict();

export interface Campaign {
  root: string;
  id: string;
  title: string;
  defaultClass: KnowledgeClass;
  folderRules: Record<string, KnowledgeClass>;
  ignore: string[];
  sizeCapBytes: number | undefined;
  /** The `stats:` block as written, for new adventures; validated when one starts (story's schema). */
  stats: unknown;
  /** How entries with SillyTavern behaviour activate in play: campaign.yaml's `world_info:` over SillyTavern's defaults. */
  worldInfo: WorldInfoSettings & { searchAdmits: boolean };
  indexPath: string;
  playPath: string;
}

export class CampaignError extends Error {
  constructor(
    readonly file: string,
    reason: string,
    readonly line?: number,
  ) {
    super(`${file}${line ? `:${line}` : ''}: ${reason}`);
  }
}

export function loadCampaign(root: string): Campaign {
  const file = path.join(root, CAMPAIGN_FILE);
  let bytes: Buffer;
  try {
    bytes = readFileBounded(file, MAX_CAMPAIGN_FILE_BYTES);
  } catch (error) {
    if (!(error instanceof ReadRefusedError)) throw error;
    if (!fs.existsSync(file)) throw new CampaignError(file, `no ${CAMPAIGN_FILE} here: this folder is not a campaign`);
    throw new CampaignError(file, `not read: ${error.message}`);
  }
  // The encoding rules of every source: a Windows-1252 title is named, never read as replacement characters.
  const decoded = decodeSource(bytes, MAX_CAMPAIGN_FILE_BYTES);
  if (!decoded.ok) throw new CampaignError(file, decoded.issue.message, decoded.issue.line);
  const text = decoded.text;
  const doc = YAML.parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0) {
    const first = doc.errors[0]!;
    throw new CampaignError(file, `not valid YAML: ${first.message.split('\n')[0]}`, first.linePos?.[0]?.line);
  }
  let plain: unknown;
  try {
    plain = doc.toJS();
  } catch (error) {
    // The yaml library stops expanding aliases that would multiply the document (an "alias bomb").
    const reason = error instanceof Error ? error.message : String(error);
    throw new CampaignError(
      file,
      /alias/i.test(reason)
        ? 'not read: its YAML aliases (*name) repeat one another so often that expanding them would exhaust memory; write the values out'
        : `not read: ${reason}`,
    );
  }
  const parsed = CampaignFileSchema.safeParse(plain ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new CampaignError(file, `${issue.path.join('.') || 'campaign'}: ${issue.message}`);
  }
  const data = parsed.data;
  return {
    root: path.resolve(root),
    id: data.id ?? campaignIdFromFolder(root),
    title: data.title,
    defaultClass: data.default_class,
    folderRules: data.folders,
    ignore: data.ignore,
    sizeCapBytes: data.size_cap_bytes,
    stats: data.stats,
    worldInfo: worldInfoSettings(data.world_info ?? {}),
    indexPath: path.join(root, DATA_DIR, 'index.db'),
    playPath: path.join(root, DATA_DIR, 'play.db'),
  };
}

function worldInfoSettings(w: z.infer<typeof WorldInfoFileSchema>): Campaign['worldInfo'] {
  const d = WORLD_INFO_DEFAULTS;
  return {
    scanDepth: w.scan_depth ?? d.scanDepth,
    recursive: w.recursive ?? d.recursive,
    maxRecursionSteps: w.max_recursion_steps ?? d.maxRecursionSteps,
    minActivations: w.min_activations ?? d.minActivations,
    minActivationsDepthMax: w.min_activations_depth_max ?? d.minActivationsDepthMax,
    budgetPercent: w.budget_percent ?? d.budgetPercent,
    budgetCap: w.budget_cap ?? d.budgetCap,
    caseSensitive: w.case_sensitive ?? d.caseSensitive,
    matchWholeWords: w.match_whole_words ?? d.matchWholeWords,
    useGroupScoring: w.use_group_scoring ?? d.useGroupScoring,
    includeNames: w.include_names ?? d.includeNames,
    searchAdmits: w.search_admits ?? false,
  };
}

/** A campaign id made from a folder's name ("The Westhaven Campaign" → "the-westhaven-campaign"). */
export function campaignIdFromFolder(root: string): string {
  const slug = path
    .basename(path.resolve(root))
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^[-_]+/, '')
    .slice(0, 64)
    .replace(/-+$/, '');
  return CAMPAIGN_ID.test(slug) ? slug : 'campaign';
}

/** The campaign that contains `start` (a file or folder), searching upwards. */
export function findCampaignRoot(start: string): string | undefined {
  let dir = path.resolve(start);
  if (fs.existsSync(dir) && !fs.statSync(dir).isDirectory()) dir = path.dirname(dir);
  for (;;) {
    if (fs.existsSync(path.join(dir, CAMPAIGN_FILE))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

