// Names: how two spellings of a name meet, and which declared names are one entity.
export { EntityNames, buildEntityNames, foldText, LEADING_ARTICLE, nameKey, stripInlineMarkup } from './names';
