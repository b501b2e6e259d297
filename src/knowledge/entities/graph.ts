import type { EntityModel } from './entityModel';

/** Two canon entities joined because one's file names or links to the other. */
export interface EntityLink {
  from: string;
  to: string;
  /** How many times `from`'s files mention `to`. */
  count: number;
  /** At least one mention is a `[[link]]`, not only the name in prose. */
  linked: boolean;
}

/**
 * The campaign as a web: an edge from each canon entity to every canon entity its defining files mention
 * (by name or `[[link]]`), counted. A mention in a file that defines no entity joins nothing.
 */
export function entityLinks(model: EntityModel): EntityLink[] {
  const definedIn = new Map<string, string[]>();
  const canon = new Set<string>();
  for (const entity of model.canonEntities()) {
    canon.add(entity.key);
    for (const d of entity.definitions) definedIn.set(d.path, [...(definedIn.get(d.path) ?? []), entity.key]);
  }
  const links = new Map<string, EntityLink>();
  for (const mention of model.allMentions()) {
    if (mention.declaration || !canon.has(mention.entityKey)) continue;
    for (const from of definedIn.get(mention.path) ?? []) {
      if (from === mention.entityKey) continue;
      const id = `${from}\u0000${mention.entityKey}`;
      const link = links.get(id) ?? { from, to: mention.entityKey, count: 0, linked: false };
      link.count += 1;
      link.linked ||= mention.via === 'link';
      links.set(id, link);
    }
  }
  return [...links.values()];
}
