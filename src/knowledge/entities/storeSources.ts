import type { KnowledgeStore } from '../indexing';
import type { EntitySource } from './entityModel';

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * The campaign's indexed files as the entity model reads them: the index keeps each file's text as read.
 * A file unchanged since `previous` (same hash, path, title, class, entities and tags) keeps its EntitySource
 * without reading its text again, so what the model derived from it is reused too.
 */
export function entitySourcesFromStore(store: KnowledgeStore, previous: readonly EntitySource[] = []): EntitySource[] {
  const known = new Map(previous.filter((s) => s.sourceId !== undefined).map((s) => [s.sourceId!, s]));
  return store
    .listSources()
    .filter((s) => s.lexicalState === 'ready')
    .flatMap((s) => {
      const prior = known.get(s.id);
      if (
        prior &&
        prior.sha256 === s.sha256 &&
        prior.path === s.path &&
        prior.title === s.title &&
        prior.class === s.class &&
        sameList(prior.entities, s.entities) &&
        sameList(prior.tags, s.tags)
      ) {
        return [prior];
      }
      const text = store.getSourceContent(s.id);
      return text === undefined ? [] : [{ path: s.path, title: s.title, class: s.class, entities: s.entities, tags: s.tags, text, sourceId: s.id, sha256: s.sha256 }];
    });
}
