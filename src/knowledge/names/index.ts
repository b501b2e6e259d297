// Names: how two spellings of a name meet, which declared names are one entity, and the `[[links]]` that name them.
export { EntityNames, buildEntityNames, foldText, LEADING_ARTICLE, nameKey, stripInlineMarkup } from './names';
export { findWikiLinks, openLinkPrefix } from './wikiLinks';
export type { WikiLink } from './wikiLinks';
