import { atxHeading, sourceExclusion } from '../knowledge/campaign';
import { entityKindOf } from '../knowledge/entities';
import type { KnowledgeStore } from '../knowledge/indexing';
import type { CastEntry } from './ports';
import type { StatSchema } from './worldState';

/** The cast knows people and places; factions and items are told as other entities. */
function kindOf(tags: readonly string[], path: string): CastEntry['kind'] {
  const kind = entityKindOf(tags, path);
  return kind === 'character' || kind === 'place' ? kind : 'other';
}

/** The adventure's own NPCs, from its stat schema. */
export function castFromSchema(schema: StatSchema): CastEntry[] {
  return Object.values(schema.npcs).map((npc) => ({ name: npc.name, aliases: npc.keys ?? [], description: npc.desc ?? '', kind: 'character', hidden: false }));
}

/**
 * Canon sources that name entities (character notes, places), as cast entries. The description is the
 * source's first passage without its heading: a fixed text, the same every time the block is summarized.
 */
export function castFromKnowledgeStore(store: KnowledgeStore): CastEntry[] {
  return store
    .listSources()
    .filter((s) => s.class === 'canon' && !sourceExclusion(s, 'narrator') && s.entities.length > 0)
    .map((s) => {
      const first = store.listPassages(s.id)[0];
      const [opening = '', ...rest] = (first?.text ?? '').split('\n');
      const description = (atxHeading(opening) ? rest : [opening, ...rest]).join(' ').replace(/\s+/g, ' ').trim();
      const [name, ...aliases] = s.entities.includes(s.title) ? [s.title, ...s.entities.filter((e) => e !== s.title)] : [s.title, ...s.entities];
      return { name: name!, aliases, description, kind: kindOf(s.tags, s.path), hidden: s.visibility === 'hidden' };
    });
}
