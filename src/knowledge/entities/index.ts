// Entities: the campaign as a language — names, aliases and `[[links]]` resolved to where they are defined and mentioned.
export { ENTITY_KINDS, EntityModel, entityKindOf } from './entityModel';
export type { Entity, EntityDefinition, EntityKind, EntityUsage, EntitySource, LinkTarget, Mention, TextSpan } from './entityModel';
export { findWikiLinks, openLinkPrefix } from '../names';
export type { WikiLink } from '../names';
export { fileNameFor, RenameError, renamedFile, renameEdits, validateNewName } from './rename';
export type { FileEdit } from './rename';
export { entitySourcesFromStore } from './storeSources';
export { entitiesByFile, entityLinks, mentioningSources } from './graph';
export type { EntityLink, MentioningSource } from './graph';
