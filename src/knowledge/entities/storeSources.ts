import type { KnowledgeStore } from '../indexing';
import type { EntitySource } from './entityModel';

/** The campaign's indexed files as the entity model reads them: the index keeps each file's text as read. */
export function entitySourcesFromStore(store: KnowledgeStore): EntitySource[] {
  return store
    .listSources()
    .filter((s) => s.lexicalState === 'ready')
    .flatMap((s) => {
      const text = store.getSourceContent(s.id);
      return text === undefined ? [] : [{ path: s.path, title: s.title, class: s.class, entities: s.entities, tags: s.tags, text, sourceId: s.id }];
    });
}
