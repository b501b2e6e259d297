import type { KnowledgeClass } from '../campaign';
import type { EntityModel, Mention } from './entityModel';

/** Two canon entities joined because one's file names or links to the other. */
export interface EntityLink {
  from: string;
  to: string;
  /** How many times `from`'s files mention `to`, weak mentions aside. */
  count: number;
  /** How many of `from`'s mentions of `to` are weak: the bare everyday word a rules page may use for its own things. */
  weak: number;
  /** At least one mention is a `[[link]]`, not only the name in prose. */
  linked: boolean;
}

/** A Reference or Inspiration file that names canon entities: where material kept beside canon touches it. */
export interface MentioningSource {
  path: string;
  title: string;
  class: Exclude<KnowledgeClass, 'canon'>;
  tags: readonly string[];
  /** `from` is the file's path. */
  links: EntityLink[];
}

/** Counts `mentions` (uses of canon entities, not declarations) into links from whatever `fromOf` says holds each. */
function countLinks(model: EntityModel, mentions: readonly Mention[], fromOf: (path: string) => readonly string[]): EntityLink[] {
  const links = new Map<string, EntityLink>();
  for (const mention of mentions) {
    if (mention.declaration || !model.entity(mention.entityKey)?.canon) continue;
    for (const from of fromOf(mention.path)) {
      if (from === mention.entityKey) continue;
      const id = `${from}\u0000${mention.entityKey}`;
      const link = links.get(id) ?? { from, to: mention.entityKey, count: 0, weak: 0, linked: false };
      if (mention.weak) link.weak += 1;
      else link.count += 1;
      link.linked ||= mention.via === 'link';
      links.set(id, link);
    }
  }
  return [...links.values()];
}

/** Campaign-relative path → the canon entities defined there. */
export function entitiesByFile(model: EntityModel): Map<string, string[]> {
  const definedIn = new Map<string, string[]>();
  for (const entity of model.canonEntities()) {
    for (const d of entity.definitions) definedIn.set(d.path, [...(definedIn.get(d.path) ?? []), entity.key]);
  }
  return definedIn;
}

/**
 * The campaign as a web: an edge from each canon entity to every canon entity its defining files mention
 * (by name or `[[link]]`), counted. A mention in a file that defines no entity joins nothing.
 */
export function entityLinks(model: EntityModel): EntityLink[] {
  const definedIn = entitiesByFile(model);
  return countLinks(model, model.allMentions(), (path) => definedIn.get(path) ?? []);
}

/**
 * The Reference and Inspiration files that name at least one canon entity, each with its links to them.
 * The entity model is canon only (a rules page titled "Combat" is no character), so these files are not
 * entities: they are the places the writer's research and mood pieces touch the story.
 */
export function mentioningSources(model: EntityModel): MentioningSource[] {
  const definedIn = entitiesByFile(model);
  return model.sources.flatMap((source) => {
    if (source.class === 'canon' || definedIn.has(source.path)) return [];
    const links = countLinks(model, model.sourceMentions(source), () => [source.path]);
    return links.length > 0 ? [{ path: source.path, title: source.title, class: source.class, tags: source.tags, links }] : [];
  });
}
