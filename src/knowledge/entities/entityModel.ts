import { atxHeading, frontMatterData, splitFrontMatter, type KnowledgeClass } from '../campaign';
import { buildEntityNames, findWikiLinks, nameKey, stripInlineMarkup, type EntityNames, type WikiLink } from '../names';
import { isEverydayWordAsWritten } from '../retrieval';

/**
 * The campaign as a language: its entities (a source's title with the `entities:` aliases that share a word
 * with it, and every other declared name — grouped exactly as the conflict analysis groups them), where
 * each is defined, and where each is mentioned by name or by `[[link]]`. Editor surfaces (definition,
 * references, rename, completion, links, the Codex) are thin readers of this model.
 *
 * Only Canon defines the story's entities: a Reference rules page titled "Combat" is not a character, and
 * its title would turn every sentence about combat into a mention. A link may still name any source.
 */

export const ENTITY_KINDS = ['character', 'place', 'faction', 'item', 'other'] as const;
export type EntityKind = (typeof ENTITY_KINDS)[number];

const KIND_WORDS: Record<Exclude<EntityKind, 'other'>, readonly string[]> = {
  character: ['character', 'characters', 'npc', 'npcs', 'pc', 'pcs', 'person', 'people', 'cast'],
  place: ['place', 'places', 'location', 'locations', 'region', 'regions', 'town', 'towns', 'city', 'cities', 'map'],
  faction: ['faction', 'factions', 'organization', 'organizations', 'organisation', 'organisations', 'guild', 'guilds', 'clan', 'clans', 'house', 'houses'],
  item: ['item', 'items', 'object', 'objects', 'artifact', 'artifacts', 'artefact', 'artefacts', 'weapon', 'weapons', 'treasure'],
};

/**
 * What a source describes, from what the writer said about it: its tags, a front-matter `layout:`/`type:`/
 * `kind:` (Torys writes `layout: character`), then the folders it sits in, innermost first.
 */
export function entityKindOf(tags: readonly string[], path: string, declaredType?: string): EntityKind {
  const folders = path.split('/').slice(0, -1).reverse();
  for (const word of [...tags, ...(declaredType ? [declaredType] : []), ...folders].map((w) => w.toLowerCase())) {
    for (const kind of Object.keys(KIND_WORDS) as Exclude<EntityKind, 'other'>[]) if (KIND_WORDS[kind].includes(word)) return kind;
  }
  return 'other';
}

/** Words that say a page is a page, not what it describes (`layout: page`), and folders that hold a whole setting. */
const GENERIC_TYPES = new Set(['page', 'post', 'default', 'doc', 'note', 'article', 'entry', 'index', 'home', 'wiki']);
const GENERIC_FOLDERS = new Set(['world', 'worlds', 'canon', 'reference', 'references', 'inspiration', 'content', 'docs', 'notes', 'lore', 'wiki', 'setting', 'campaign', 'pages']);

/**
 * What the campaign calls a file's kind, for grouping a picture of it: one of the known kinds when its tags,
 * type or folders say so; else its own `layout:`/`type:` word; else its first folder below what every file
 * shares and the setting-wide containers (`world/`): the SRD's `Monsters`, Torys's `tumulted-sea`.
 */
export function campaignGroupOf(kind: EntityKind, path: string, declaredType: string | undefined, sharedFolders: number): string {
  if (kind !== 'other') return kind;
  const type = declaredType?.trim().toLowerCase();
  if (type && !GENERIC_TYPES.has(type)) return type;
  const folders = path.split('/').slice(sharedFolders, -1);
  return folders.find((f) => !GENERIC_FOLDERS.has(f.toLowerCase())) ?? folders[0] ?? 'other';
}

/** How many leading folders every path shares (a campaign kept under one folder groups by the folders inside it). */
function sharedFolderCount(paths: readonly string[]): number {
  const split = paths.map((p) => p.split('/').slice(0, -1));
  let depth = 0;
  while (split.length > 0 && split.every((f) => f.length > depth && f[depth] === split[0]![depth])) depth++;
  return depth;
}

/** One campaign file as the model reads it. */
export interface EntitySource {
  /** Campaign-relative POSIX path. */
  path: string;
  title: string;
  class: KnowledgeClass;
  /** Front matter `entities:` as resolved by the index. */
  entities: readonly string[];
  tags: readonly string[];
  /** The whole file, front matter included (Torys keeps story text in front-matter values). */
  text: string;
  sourceId?: string;
  /** The index's hash of the text: an unchanged file keeps its EntitySource, and what was derived from it. */
  sha256?: string;
}

/** A range of one line; line and columns are 0-based (what editors use). */
export interface TextSpan {
  path: string;
  line: number;
  start: number;
  end: number;
}

export interface EntityDefinition extends TextSpan {
  sourceId: string | undefined;
  class: KnowledgeClass;
}

export interface Entity {
  /** The conflict analysis' entity key: facts and conflicts of this entity share it. */
  key: string;
  display: string;
  /** Every declared spelling. */
  names: string[];
  kind: EntityKind;
  /** What the campaign calls its kind (campaignGroupOf): the kind, else the campaign's own type or folder word. */
  group: string;
  definitions: EntityDefinition[];
  /** The first paragraph of its canon file, plain text; empty when it has none. */
  summary: string;
  /** Defined by an enabled or disabled Canon source (see the module comment). */
  canon: boolean;
}

/** An entity's mentions, the files holding them, and those files other than its defining ones. */
export interface EntityUsage {
  mentions: number;
  files: string[];
  elsewhere: string[];
}

export interface Mention extends TextSpan {
  entityKey: string;
  /** The text as written (`the Abbey`, `Sister Mara`, a link's `Bekebel Citadel:Bekebel`). */
  text: string;
  via: 'name' | 'link';
  /** The entity's own title, `entities:` entry or defining heading: a declaration, not a use. */
  declaration: boolean;
  /**
   * Only the bare everyday word that is the entity's name ("Ice", "Elf"), in a Reference or Inspiration file,
   * with nothing saying it means the entity: not a proper noun there, no link, none of its other names nearby.
   * Rules text uses such words for its own things (Ice Devil, Wall of Ice), so a weak mention is no use of the entity.
   */
  weak: boolean;
}

export interface LinkTarget extends TextSpan {
  entity: Entity | undefined;
}

const FENCE = /^\s{0,3}(`{3,}|~{3,})/;
const FRONT_MATTER_KEY = /^([A-Za-z_][\w-]*)\s*:/;
const DECLARING_KEYS = new Set(['title', 'entities', 'aliases']);
const TYPE_LINE = /^(?:layout|type|kind|category)\s*:\s*["']?([\w -]+?)["']?\s*$/m;
/** Shared by mentionsIn's loop, which resets lastIndex on every line. */
const WORD = /[\p{L}\p{N}]+/gu;
const NO_LINKS: readonly WikiLink[] = [];
const WORD_CHAR = /[\p{L}\p{N}]/u;
const LEADING_ARTICLE = /^(the|a|an)\s/i;
/** A name that is one word, once a leading article is set aside: "Ice", "the Dancer". */
const ONE_WORD = /^(?:(?:the|a|an)\s+)?[\p{L}\p{N}]+$/iu;
/** Within this many lines of a bare everyday word, a link to the entity or another of its names says the word means it. */
const NEARBY_LINES = 3;
/** The word and the spaces before a position: what a proper noun mid-sentence follows. */
const WORD_BEFORE = /([\p{L}\p{N}]+)[ \t]+$/u;
/** Small words a title-case name runs through ("Wall of Ice", "Ring of the Elf"). */
const TITLE_JOINERS = new Set(['of', 'the', 'and', 'a', 'an', 'in', 'on', 'to', 'for', 'de', 'von', 'van']);
/** A capitalised word (or a joiner and one) right after: the name is the start of a longer one ("Ice Devil", "Elf of the Woods"). */
const LONGER_NAME_AFTER = /^[ \t]+(?:(?:of|the|and)[ \t]+)?\p{Lu}/u;
const LOWERCASE_START = /^\p{Ll}/u;

/**
 * Whether a name at `start`..`end` stands as a proper noun of its own: mid-sentence after a lowercase word,
 * neither inside a title-case run ("Wall of Ice") nor the first word of a longer name ("Ice Devil"). A
 * sentence's first word, a heading, a table cell or bold text could be any word capitalised.
 */
function standsAsProperNoun(lineText: string, start: number, end: number): boolean {
  const before = WORD_BEFORE.exec(lineText.slice(0, start));
  if (!before || !LOWERCASE_START.test(before[1]!)) return false;
  if (TITLE_JOINERS.has(before[1]!)) {
    const earlier = WORD_BEFORE.exec(lineText.slice(0, before.index));
    if (!earlier || !LOWERCASE_START.test(earlier[1]!)) return false;
  }
  return !LONGER_NAME_AFTER.test(lineText.slice(end));
}

interface Candidate {
  name: string;
  entityKey: string;
}

interface TextLayout {
  lines: string[];
  /** For each front-matter line, the top-level key it belongs to (for telling declarations from uses). */
  frontMatterKeys: (string | undefined)[];
  /** 0-based line where the body starts. */
  bodyStart: number;
}

/** Front matter is parsed once per text: the model reads each file several times (headings, definitions, mentions). */
const layouts = new Map<string, TextLayout>();
const LAYOUT_CACHE_SIZE = 4096;

function describeLines(text: string): TextLayout {
  const known = layouts.get(text);
  if (known) return known;
  const layout = layoutOf(text);
  if (layouts.size >= LAYOUT_CACHE_SIZE) layouts.delete(layouts.keys().next().value!);
  layouts.set(text, layout);
  return layout;
}

function layoutOf(text: string): TextLayout {
  const lines = text.split(/\r?\n/);
  const split = splitFrontMatter(text);
  const bodyStart = split.present ? split.bodyStartLine - 1 : 0;
  const frontMatterKeys: (string | undefined)[] = [];
  let key: string | undefined;
  for (let i = 1; i < bodyStart - 1; i++) {
    const own = FRONT_MATTER_KEY.exec(lines[i]!);
    if (own) key = own[1]!.toLowerCase();
    frontMatterKeys[i] = key;
  }
  return { lines, frontMatterKeys, bodyStart };
}

type HeadingEntry = { key: string; span: TextSpan };

/** Each file's headings, scanned once per EntitySource: a model rebuilt after one file changed rescans only that one. */
const headingScans = new WeakMap<EntitySource, HeadingEntry[]>();

function headingsOf(source: EntitySource): HeadingEntry[] {
  const known = headingScans.get(source);
  if (known) return known;
  const found: HeadingEntry[] = [];
  const { lines, bodyStart } = describeLines(source.text);
  let fence: string | null = null;
  for (let line = bodyStart; line < lines.length; line++) {
    const text = lines[line]!;
    const fenceMatch = FENCE.exec(text);
    if (fence !== null || fenceMatch) {
      if (fence === null) fence = fenceMatch![1]!;
      else if (fenceMatch && fenceMatch[1]![0] === fence[0]) fence = null;
      continue;
    }
    const heading = text.includes('#') ? atxHeading(text) : null;
    if (!heading) continue;
    const start = text.indexOf(heading.text);
    found.push({ key: nameKey(stripInlineMarkup(heading.text)), span: { path: source.path, line, start, end: start + heading.text.length } });
  }
  headingScans.set(source, found);
  return found;
}

export class EntityModel {
  readonly names: EntityNames;
  readonly entities: readonly Entity[];
  private readonly byKey = new Map<string, Entity>();
  private readonly sourcesByPath = new Map<string, EntitySource>();
  /** Folded heading text → where it is, for links that name a heading (`[[Heading:Page]]`, `[[Sayrenvar Inner Harbour]]`). */
  private readonly headings = new Map<string, TextSpan[]>();
  private readonly headingsByPath = new Map<string, HeadingEntry[]>();
  /** First word, lowercased → names starting with it, longest first. */
  private readonly candidates = new Map<string, Candidate[]>();
  /** Canon names that are one everyday English word ("Ice", "Elf", "Werewolf"): bare, they are weak mentions outside canon. */
  private readonly everydayNames = new Set<string>();
  private campaignMentions: Mention[] | undefined;
  /** allMentions() by entity, built on first use: the Codex and the graph ask for every entity's usage at once. */
  private mentionsByEntity: Map<string, Mention[]> | undefined;
  /**
   * Each file's mentions, computed on first use. Taken over from the previous model when the names and what
   * they resolve to are the same, for the files that did not change (the same EntitySource).
   */
  private readonly mentionsBySource: Map<EntitySource, Mention[]>;
  /** Everything a file's mentions depend on besides its own text: every entity's key, names, canon and definedness. */
  private readonly mentionSignature: string;
  /** Leading folders every file shares: set aside when grouping by folder. */
  private readonly sharedFolders: number;
  /** Per file, `entityKey\0line` of the lines defining an entity there (its heading or title line). */
  private readonly declarationLines = new Map<string, Set<string>>();

  /** `previous`: the model this one replaces, whose per-file work is reused where nothing it depends on changed. */
  constructor(
    readonly sources: readonly EntitySource[],
    previous?: EntityModel,
  ) {
    this.names = buildEntityNames(sources);
    for (const source of sources) {
      this.sourcesByPath.set(source.path, source);
      const found = headingsOf(source);
      if (found.length > 0) this.headingsByPath.set(source.path, found);
      for (const { key, span } of found) {
        const list = this.headings.get(key);
        if (list) list.push(span);
        else this.headings.set(key, [span]);
      }
    }
    const groups = this.names.entities();
    const namesByKey = new Map(groups.map((g) => [g.key, g.names]));
    const definitions = new Map<string, { source: EntitySource; definition: EntityDefinition }[]>();
    for (const source of sources) {
      for (const key of new Set([source.title, ...source.entities].map((n) => this.names.resolve(n)).filter((k): k is string => k !== undefined))) {
        const definition = { ...this.definitionSpan(source, namesByKey.get(key) ?? []), sourceId: source.sourceId, class: source.class };
        const list = definitions.get(key);
        if (list) list.push({ source, definition });
        else definitions.set(key, [{ source, definition }]);
        const lines = this.declarationLines.get(source.path);
        if (lines) lines.add(`${key}\u0000${definition.line}`);
        else this.declarationLines.set(source.path, new Set([`${key}\u0000${definition.line}`]));
      }
    }
    this.sharedFolders = sharedFolderCount(sources.map((s) => s.path));
    this.entities = groups.map(({ key, display, names }) => {
      const defs = (definitions.get(key) ?? []).sort((a, b) => Number(b.source.class === 'canon') - Number(a.source.class === 'canon'));
      const primary = defs[0];
      const kind = primary ? entityKindOf(primary.source.tags, primary.source.path, declaredType(primary.source.text)) : 'other';
      const entity: Entity = {
        key,
        display,
        names,
        kind,
        group: primary ? this.groupOf(primary.source, kind) : kind,
        definitions: defs.map((d) => d.definition),
        summary: primary ? (this.names.resolve(primary.source.title) === key ? declaredSummary(primary.source.text) : undefined) ?? summaryAfter(primary.source.text, primary.definition.line) : '',
        canon: defs.some((d) => d.source.class === 'canon'),
      };
      this.byKey.set(key, entity);
      return entity;
    });
    for (const entity of this.entities) {
      if (!entity.canon) continue;
      for (const name of entity.names) {
        const first = name.split(/[^\p{L}\p{N}]/u)[0]!.toLowerCase();
        if (!first) continue;
        this.candidates.set(first, [...(this.candidates.get(first) ?? []), { name, entityKey: entity.key }]);
        if (ONE_WORD.test(name) && isEverydayWordAsWritten(name.replace(LEADING_ARTICLE, ''))) this.everydayNames.add(name);
      }
    }
    for (const list of this.candidates.values()) list.sort((a, b) => b.name.length - a.name.length);
    this.mentionSignature = JSON.stringify(this.entities.map((e) => [e.key, e.names, e.canon, e.definitions.length > 0]));
    this.mentionsBySource =
      previous?.mentionSignature === this.mentionSignature ? new Map(sources.flatMap((s) => (previous.mentionsBySource.has(s) ? [[s, previous.mentionsBySource.get(s)!]] : []))) : new Map();
  }

  /** What the campaign calls the kind of what `source` describes (campaignGroupOf); `kind` when already known. */
  groupOf(source: EntitySource, kind = entityKindOf(source.tags, source.path, declaredType(source.text))): string {
    return campaignGroupOf(kind, source.path, declaredType(source.text), this.sharedFolders);
  }

  entity(key: string): Entity | undefined {
    return this.byKey.get(key);
  }

  /** The entity one of whose declared names is `name` (any case, accents, leading article). */
  resolveName(name: string): Entity | undefined {
    const key = this.names.resolve(name);
    return key === undefined ? undefined : this.byKey.get(key);
  }

  source(path: string): EntitySource | undefined {
    return this.sourcesByPath.get(path);
  }

  /** The entities a story is about, by kind then name (what the Codex lists). */
  canonEntities(): Entity[] {
    return this.entities.filter((e) => e.canon).sort((a, b) => ENTITY_KINDS.indexOf(a.kind) - ENTITY_KINDS.indexOf(b.kind) || a.display.localeCompare(b.display));
  }

  /** Where a link leads: an entity's file at its heading, or a heading elsewhere; undefined when it names nothing. */
  resolveLink(link: WikiLink): LinkTarget | undefined {
    const readings = [link, ...(link.alternative ? [link.alternative] : [])];
    for (const reading of readings) {
      const entity = this.resolveName(reading.target);
      const definition = entity?.definitions[0];
      if (!entity || !definition) continue;
      const heading = reading.heading ? this.headingIn(definition.path, reading.heading) : undefined;
      return { ...(heading ?? definition), entity };
    }
    for (const reading of readings) {
      const heading = this.headings.get(nameKey(reading.target))?.[0];
      if (heading) return { ...heading, entity: undefined };
    }
    return undefined;
  }

  /**
   * Mentions of canon entities in one text: `[[links]]` that resolve to one, and their names as written
   * (case-sensitive but for a leading article, longest name first, never inside another word).
   * `path` is where the text lives, so declarations (its own title, aliases, defining heading) are told apart,
   * and so are weak mentions in a Reference or Inspiration file (see Mention.weak).
   */
  mentionsIn(path: string, text: string): Mention[] {
    const { lines, frontMatterKeys } = describeLines(text);
    const declaringLines = this.declarationLines.get(path);
    const sourceClass = this.sourcesByPath.get(path)?.class;
    const besideCanon = sourceClass === 'reference' || sourceClass === 'inspiration';
    const mentions: Mention[] = [];
    let fence: string | null = null;
    for (let line = 0; line < lines.length; line++) {
      const lineText = lines[line]!;
      // Runs over every line of the campaign on each index change: the cheap tests come first.
      const fenceMatch = lineText.includes('``') || lineText.includes('~~') ? FENCE.exec(lineText) : null;
      if (fence !== null || fenceMatch) {
        if (fence === null) fence = fenceMatch![1]!;
        else if (fenceMatch && fenceMatch[1]![0] === fence[0]) fence = null;
        continue;
      }
      const frontMatterKey = frontMatterKeys[line];
      const declaringKey = frontMatterKey !== undefined && DECLARING_KEYS.has(frontMatterKey);
      const links = lineText.includes('[[') ? findWikiLinks(lineText, line) : NO_LINKS;
      for (const link of links) {
        const target = this.resolveLink(link)?.entity;
        if (!target?.canon) continue;
        mentions.push({ path, line, start: link.start + 2, end: link.end - 2, entityKey: target.key, text: lineText.slice(link.start + 2, link.end - 2), via: 'link', declaration: false, weak: false });
      }
      WORD.lastIndex = 0;
      for (let word = WORD.exec(lineText); word !== null; word = WORD.exec(lineText)) {
        const at = word.index;
        const candidates = this.candidates.get(word[0].toLowerCase());
        if (!candidates || links.some((l) => at >= l.start && at < l.end)) continue;
        const found = this.nameAt(lineText, at, candidates);
        if (!found) continue;
        const end = at + found.name.length;
        const declaration = declaringKey || declaringLines?.has(`${found.entityKey}\u0000${line}`) === true;
        const weak = besideCanon && !declaration && this.everydayNames.has(found.name) && !standsAsProperNoun(lineText, at, end);
        mentions.push({ path, line, start: at, end, entityKey: found.entityKey, text: lineText.slice(at, end), via: 'name', declaration, weak });
        WORD.lastIndex = end;
      }
    }
    return mentions.some((m) => m.weak) ? this.confirmedNearby(path, mentions) : mentions;
  }

  /**
   * Weak mentions made strong by what surrounds them: a link to the entity or another of its names within a
   * few lines, or the file being one that defines the entity.
   */
  private confirmedNearby(path: string, mentions: Mention[]): Mention[] {
    const confirming = mentions.filter((m) => m.via === 'link' || !this.everydayNames.has(m.text));
    return mentions.map((m) => {
      if (!m.weak) return m;
      const defines = this.byKey.get(m.entityKey)?.definitions.some((d) => d.path === path);
      const nearby = confirming.some((c) => c.entityKey === m.entityKey && Math.abs(c.line - m.line) <= NEARBY_LINES);
      return defines || nearby ? { ...m, weak: false } : m;
    });
  }

  /** Every mention in the campaign's files, computed once per model (per file, once per text and names). */
  allMentions(): readonly Mention[] {
    this.campaignMentions ??= this.sources.flatMap((s) => this.sourceMentions(s));
    return this.campaignMentions;
  }

  /** One of the model's sources' mentions, computed once per text and names. */
  sourceMentions(source: EntitySource): readonly Mention[] {
    let mentions = this.mentionsBySource.get(source);
    if (!mentions) {
      mentions = this.mentionsIn(source.path, source.text);
      this.mentionsBySource.set(source, mentions);
    }
    return mentions;
  }

  mentionsOf(entityKey: string): Mention[] {
    if (!this.mentionsByEntity) {
      this.mentionsByEntity = new Map();
      for (const mention of this.allMentions()) {
        const list = this.mentionsByEntity.get(mention.entityKey);
        if (list) list.push(mention);
        else this.mentionsByEntity.set(mention.entityKey, [mention]);
      }
    }
    return [...(this.mentionsByEntity.get(entityKey) ?? [])];
  }

  /**
   * How the campaign uses an entity, counted one way for every surface (hover, Codex): its mentions (not the
   * names that declare it, nor weak ones), the files holding them, and those of them other than its defining files.
   */
  usage(entityKey: string): EntityUsage {
    const uses = this.mentionsOf(entityKey).filter((m) => !m.declaration && !m.weak);
    const defining = new Set(this.byKey.get(entityKey)?.definitions.map((d) => d.path) ?? []);
    const files = [...new Set(uses.map((m) => m.path))];
    return { mentions: uses.length, files, elsewhere: files.filter((f) => !defining.has(f)) };
  }

  /** The `[[links]]` of a text that name no entity, file or heading. */
  unresolvedLinks(text: string): WikiLink[] {
    if (!text.includes('[[')) return [];
    return text.split(/\r?\n/).flatMap((lineText, line) => (lineText.includes('[[') ? findWikiLinks(lineText, line).filter((link) => !this.resolveLink(link)) : []));
  }

  /** The entity named at a position: a `[[link]]` around it, or a name it is part of. */
  entityAt(path: string, lineText: string, line: number, column: number): { entity: Entity; span: TextSpan; via: 'name' | 'link' } | undefined {
    const link = findWikiLinks(lineText, line).find((l) => column >= l.start && column <= l.end);
    if (link) {
      const entity = this.resolveLink(link)?.entity;
      return entity ? { entity, span: { path, line, start: link.targetStart, end: link.targetEnd }, via: 'link' } : undefined;
    }
    const mention = this.mentionsIn(path, lineText).find((m) => column >= m.start && column <= m.end);
    const entity = mention && this.byKey.get(mention.entityKey);
    return mention && entity ? { entity, span: { path, line, start: mention.start, end: mention.end }, via: 'name' } : undefined;
  }

  private nameAt(lineText: string, at: number, candidates: readonly Candidate[]): Candidate | undefined {
    for (const candidate of candidates) {
      const written = lineText.slice(at, at + candidate.name.length);
      if (written.length !== candidate.name.length || WORD_CHAR.test(lineText[at + candidate.name.length] ?? '')) continue;
      const article = LEADING_ARTICLE.exec(candidate.name);
      const same = article
        ? written.slice(0, article[0].length).toLowerCase() === article[0].toLowerCase() && written.slice(article[0].length) === candidate.name.slice(article[0].length)
        : written === candidate.name;
      if (same) return candidate;
    }
    return undefined;
  }

  private headingIn(path: string, heading: string): TextSpan | undefined {
    return this.headings.get(nameKey(heading))?.find((h) => h.path === path);
  }

  /** The source's heading naming the entity, else its front-matter title (Torys pages have no title heading), else its first line. */
  private definitionSpan(source: EntitySource, names: readonly string[]): TextSpan {
    const keys = new Set(names.map(nameKey));
    const heading = (this.headingsByPath.get(source.path) ?? []).find((h) => keys.has(h.key))?.span;
    if (heading) return heading;
    const { lines, frontMatterKeys } = describeLines(source.text);
    const titleLine = frontMatterKeys.findIndex((key, i) => key === 'title' && FRONT_MATTER_KEY.test(lines[i]!));
    if (titleLine === -1) return { path: source.path, line: 0, start: 0, end: 0 };
    const value = /:\s*/.exec(lines[titleLine]!)!;
    return { path: source.path, line: titleLine, start: value.index + value[0].length, end: lines[titleLine]!.trimEnd().length };
  }
}

/** A front-matter `layout:`/`type:`/`kind:` value (the index keeps only the keys it knows). */
function declaredType(text: string): string | undefined {
  const { lines, bodyStart } = describeLines(text);
  return TYPE_LINE.exec(lines.slice(1, Math.max(1, bodyStart - 1)).join('\n'))?.[1];
}

const SUMMARY_MAX = 400;

/** The first paragraph of prose after `line` (headings, lists, tables and fences skipped), as plain text. */
/** A `summary:` the writer gave the page in its front matter: what the page is about, in their words. */
function declaredSummary(text: string): string | undefined {
  if (!text.includes('summary:')) return undefined;
  const summary = frontMatterData(text).summary;
  return typeof summary === 'string' && summary.trim() ? clip(stripInlineMarkup(summary.replace(/\s+/g, ' ').trim())) : undefined;
}

const clip = (plain: string): string => (plain.length > SUMMARY_MAX ? `${plain.slice(0, SUMMARY_MAX).replace(/\s+\S*$/, '')}…` : plain);

function summaryAfter(text: string, line: number): string {
  const { lines, bodyStart } = describeLines(text);
  const paragraph: string[] = [];
  let fence = false;
  for (let i = Math.max(line, bodyStart); i < lines.length; i++) {
    const lineText = lines[i]!;
    if (FENCE.test(lineText)) {
      fence = !fence;
      continue;
    }
    const prose = !fence && lineText.trim() !== '' && !atxHeading(lineText) && !/^\s*([-*+|>]|\d+[.)])\s?/.test(lineText);
    if (prose) paragraph.push(lineText.trim());
    else if (paragraph.length > 0) break;
  }
  return clip(stripInlineMarkup(paragraph.join(' ')));
}
