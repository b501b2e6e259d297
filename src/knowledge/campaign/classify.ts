import type { Campaign } from './campaign';
import type { FrontMatter } from './frontMatter';
import type { ClassOrigin, KnowledgeClass } from './types';

export interface Classification {
  class: KnowledgeClass;
  origin: ClassOrigin;
}

/** True when `relPath` (campaign-relative, POSIX) is `folder` or lies beneath it. */
export function isUnder(relPath: string, folder: string): boolean {
  const prefix = folder.replace(/^\.?\/+|\/+$/g, '');
  return prefix === '' || relPath === prefix || relPath.startsWith(`${prefix}/`);
}

/** Front matter wins; then the longest matching folder rule of campaign.yaml; then the campaign default. */
export function classifySource(campaign: Pick<Campaign, 'defaultClass' | 'folderRules'>, relPath: string, meta: FrontMatter): Classification {
  if (meta.class) return { class: meta.class, origin: { kind: 'front-matter' } };
  let best: { folder: string; class: KnowledgeClass } | undefined;
  for (const [folder, cls] of Object.entries(campaign.folderRules)) {
    if (isUnder(relPath, folder) && (!best || folder.length > best.folder.length)) best = { folder, class: cls };
  }
  if (best) return { class: best.class, origin: { kind: 'folder-rule', folder: best.folder } };
  return { class: campaign.defaultClass, origin: { kind: 'campaign-default' } };
}

/** How a class origin reads to a writer: "front matter", "folder rule 'places'", "campaign default". */
export function describeClassOrigin(origin: ClassOrigin): string {
  switch (origin.kind) {
    case 'front-matter':
      return 'front matter';
    case 'folder-rule':
      return `folder rule '${origin.folder}'`;
    case 'campaign-default':
      return 'campaign default';
  }
}
