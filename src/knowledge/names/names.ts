/**
 * How names are compared, and which names are one entity: shared by entities (links, the codex), conflicts
 * (facts about an entity) and the consistency check, so each reads "The Old Abbey" and "old abbey" alike.
 */

/** Markdown and wiki-link decoration removed, so `**[[Old Abbey:the Abbey]]**` reads `the Abbey`. */
export function stripInlineMarkup(text: string): string {
  if (!/[*_`[<!]/.test(text)) return text.replace(/\s+/g, ' ').trim();
  return text
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\[\[([^\]|:]+)[:|]([^\]]+)\]\]/g, '$2')
    .replace(/\[\[([^\]]+)\]\]/g, '$1')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]*)\]\[[^\]]*\]/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/(\*\*|__)(.+?)\1/g, '$2')
    .replace(/(^|[^\w*])[*_]([^*_\s][^*_]*?)[*_](?=[^\w*]|$)/g, '$1$2')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Case-, diacritic-, punctuation- and whitespace-insensitive form of a piece of text. */
export function foldText(text: string): string {
  return stripInlineMarkup(text)
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[’']/g, '')
    .replace(/[^\p{L}\p{N}.+-]+/gu, ' ')
    .replace(/(^|\s)[.+-]+(?=\s|$)/g, ' ')
    .replace(/\.(?=\s|$)/g, '')
    .replace(/\s+/g, ' ')
    .trim();
}

export const LEADING_ARTICLE = /^(the|a|an) /;

/** The key two spellings of one name share: `The Old Abbey`, `old abbey` and `Old Abbéy` meet. */
export function nameKey(name: string): string {
  return foldText(name).replace(LEADING_ARTICLE, '');
}

/** Names that identify one entity, grouped: titles with the aliases they declare, case- and diacritic-free. */
export class EntityNames {
  private readonly parent = new Map<string, string>();
  private readonly display = new Map<string, string>();
  /** Raw spelling → canonical key: headings repeat on every fact under them. */
  private readonly resolved = new Map<string, string | undefined>();

  /**
   * Declares that every one of `names` is the same entity; the first is its display name, unless it is all
   * lowercase and a later spelling capitalises it (a lorebook entry titled by its key `eldoria` names `Eldoria`):
   * names are matched as written, so the lowercase one would make every common use of the word a mention.
   */
  declare(names: readonly string[]): void {
    const keys = names.map(nameKey).filter(Boolean);
    if (keys.length === 0) return;
    this.resolved.clear();
    for (let i = 0; i < keys.length; i++) {
      const shown = this.display.get(keys[i]!);
      if (!this.parent.has(keys[i]!)) {
        this.parent.set(keys[i]!, keys[i]!);
        this.display.set(keys[i]!, names[i]!.trim());
      } else if (shown !== undefined && !/\p{Lu}/u.test(shown) && /\p{Lu}/u.test(names[i]!)) {
        this.display.set(keys[i]!, names[i]!.trim());
      }
    }
    for (const key of keys.slice(1)) this.union(keys[0]!, key);
  }

  /** The entity's canonical key when `name` is a declared name, else undefined. */
  resolve(name: string): string | undefined {
    if (this.resolved.has(name)) return this.resolved.get(name);
    const key = nameKey(name);
    const root = this.parent.has(key) ? this.find(key) : undefined;
    this.resolved.set(name, root);
    return root;
  }

  /**
   * The canonical key of a declared name; a name nobody declared (a heading such as "Hit Points") is an
   * entity of its own file only, so generic headings repeated across files never pair up.
   */
  keyFor(name: string, path: string): string {
    return this.resolve(name) ?? `${path}#${nameKey(name)}`;
  }

  displayName(key: string): string | undefined {
    return this.display.get(key);
  }

  /** Every declared spelling of the entity `key` belongs to. */
  namesOf(key: string): string[] {
    const root = this.parent.has(key) ? this.find(key) : key;
    return [...this.parent.keys()].filter((k) => this.find(k) === root).map((k) => this.display.get(k)!);
  }

  /** Every entity with all its declared spellings, in declaration order. */
  entities(): { key: string; display: string; names: string[] }[] {
    const groups = new Map<string, string[]>();
    for (const key of this.parent.keys()) {
      const root = this.find(key);
      groups.set(root, [...(groups.get(root) ?? []), this.display.get(key)!]);
    }
    return [...groups].map(([key, names]) => ({ key, display: this.display.get(key)!, names }));
  }

  private find(key: string): string {
    let root = key;
    while (this.parent.get(root) !== root) root = this.parent.get(root)!;
    this.parent.set(key, root);
    return root;
  }

  private union(a: string, b: string): void {
    const ra = this.find(a);
    const rb = this.find(b);
    // The earlier-declared root stays canonical, so keys do not move when later sources add aliases.
    if (ra !== rb) this.parent.set(rb, ra);
  }
}

/**
 * The declared names of every source. A source's title and the `entities` that share a word with it are
 * one entity (`Sister Mara` = `Mara`); an entity with nothing in common with the title (a location list
 * naming several people) is a separate entity, so linking names never merges different characters.
 */
export function buildEntityNames(sources: readonly { title: string; entities: readonly string[] }[]): EntityNames {
  const names = new EntityNames();
  for (const source of sources) {
    const titleWords = new Set(nameKey(source.title).split(' '));
    const aliases = source.entities.filter((e) => nameKey(e).split(' ').some((w) => titleWords.has(w)));
    names.declare([source.title, ...aliases]);
    for (const other of source.entities) if (!aliases.includes(other)) names.declare([other]);
  }
  return names;
}
