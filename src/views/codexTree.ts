import path from 'node:path';
import * as vscode from 'vscode';
import { ENTITY_KINDS, type Entity, type EntityKind, type EntityModel } from '../knowledge/entities';
import { passageRetrievalCounts, retrievingTurnCount } from '../knowledge/health';
import { mentionCount, type EntityCampaign, type EntityLanguage } from './entityLanguage';
import type { PlayReaders } from './playTrees';
import { TreeProvider } from './treeProvider';

/**
 * The Codex: a campaign's canon entities by kind, each with how often the campaign mentions it, the files
 * that define it, and — so a writer sees what the story ignores — the ones never mentioned outside their
 * own file and the ones no played turn ever retrieved.
 */

const KIND_GROUP: Record<EntityKind, string> = { character: 'Characters', place: 'Places', faction: 'Factions', item: 'Items', other: 'Other' };
const KIND_ICON: Record<EntityKind, string> = { character: 'person', place: 'location', faction: 'organization', item: 'package', other: 'symbol-misc' };

export interface CodexEntry {
  entity: Entity;
  mentions: number;
  /** Files holding those mentions, its own included (as its hover counts them). */
  files: number;
  /** Files other than the defining ones that mention it. */
  mentioningFiles: string[];
  /** Undefined until a turn has retrieved anything in this campaign. */
  retrieved: boolean | undefined;
}

export type CodexNode =
  | { kind: 'campaign'; root: string; title: string }
  | { kind: 'group'; root: string; group: EntityKind | 'never-mentioned' | 'never-retrieved'; entries: CodexEntry[] }
  | { kind: 'entity'; root: string; entry: CodexEntry }
  | { kind: 'file'; root: string; relPath: string; line: number; label: string };

export class CodexTree extends TreeProvider<CodexNode> {
  constructor(
    private readonly campaigns: () => readonly EntityCampaign[],
    private readonly language: EntityLanguage,
    private readonly readers: PlayReaders,
    onDidPlay: vscode.Event<unknown>,
  ) {
    super('storyteller.codex', [language.onDidChangeModels, onDidPlay]);
  }

  /** Every canon entity of the campaign at `root` with its counts (what the view shows). */
  entries(root: string): CodexEntry[] {
    const model = this.language.modelOf(root);
    const entry = this.campaigns().find((c) => c.campaign.root === root);
    if (!model || !entry) return [];
    const retrievedSources = this.retrievedSources(entry, model);
    return model.canonEntities().map((entity) => {
      const usage = model.usage(entity.key);
      return {
        entity,
        mentions: usage.mentions,
        files: usage.files.length,
        mentioningFiles: usage.elsewhere,
        retrieved: retrievedSources && entity.definitions.some((d) => d.sourceId !== undefined && retrievedSources.has(d.sourceId)),
      };
    });
  }

  /** Sources any turn retrieved a passage of; undefined while nothing was played. */
  private retrievedSources(entry: EntityCampaign, model: EntityModel): Set<string> | undefined {
    const play = this.readers.get(entry.campaign.playPath);
    if (!play || !entry.store || retrievingTurnCount(play.db) === 0) return undefined;
    const passages = model.sources.flatMap((s) => (s.sourceId ? entry.store!.listPassages(s.sourceId) : []));
    const counts = passageRetrievalCounts(play.db, passages.map((p) => p.id));
    return new Set(passages.filter((p) => (counts.get(p.id)?.considered ?? 0) > 0).map((p) => p.sourceId));
  }

  getChildren(node?: CodexNode): CodexNode[] {
    if (!node) {
      const campaigns = this.campaigns().filter((c) => this.language.modelOf(c.campaign.root));
      if (campaigns.length === 1) return this.groups(campaigns[0]!.campaign.root);
      return campaigns.map((c) => ({ kind: 'campaign', root: c.campaign.root, title: c.campaign.title }));
    }
    switch (node.kind) {
      case 'campaign':
        return this.groups(node.root);
      case 'group':
        return node.entries.map((entry) => ({ kind: 'entity', root: node.root, entry }));
      case 'entity': {
        const { entity, mentioningFiles } = node.entry;
        const model = this.language.modelOf(node.root);
        const definitions: CodexNode[] = entity.definitions.map((d) => ({ kind: 'file', root: node.root, relPath: d.path, line: d.line, label: `defined in ${d.path}` }));
        const mentions: CodexNode[] = mentioningFiles.map((relPath) => {
          const inFile = model?.mentionsOf(entity.key).filter((m) => m.path === relPath && !m.declaration && !m.weak) ?? [];
          return { kind: 'file', root: node.root, relPath, line: inFile[0]?.line ?? 0, label: `${relPath} · ${inFile.length} mention${inFile.length === 1 ? '' : 's'}` };
        });
        return [...definitions, ...mentions];
      }
      case 'file':
        return [];
    }
  }

  private groups(root: string): CodexNode[] {
    const entries = this.entries(root);
    const groups: CodexNode[] = ENTITY_KINDS.map((kind) => ({ kind: 'group' as const, root, group: kind, entries: entries.filter((e) => e.entity.kind === kind) })).filter(
      (g) => g.entries.length > 0,
    );
    const unmentioned = entries.filter((e) => e.mentioningFiles.length === 0);
    const unretrieved = entries.filter((e) => e.retrieved === false);
    if (unmentioned.length > 0) groups.push({ kind: 'group', root, group: 'never-mentioned', entries: unmentioned });
    if (unretrieved.length > 0) groups.push({ kind: 'group', root, group: 'never-retrieved', entries: unretrieved });
    return groups;
  }

  getTreeItem(node: CodexNode): vscode.TreeItem {
    switch (node.kind) {
      case 'campaign': {
        const item = new vscode.TreeItem(node.title, vscode.TreeItemCollapsibleState.Expanded);
        item.iconPath = new vscode.ThemeIcon('book');
        return item;
      }
      case 'group': {
        const label = node.group === 'never-mentioned' ? 'Never mentioned elsewhere' : node.group === 'never-retrieved' ? 'Never retrieved in play' : KIND_GROUP[node.group];
        const item = new vscode.TreeItem(label, node.group === 'never-retrieved' || node.group === 'never-mentioned' ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.Expanded);
        item.id = `codex:${node.root}:${node.group}`;
        item.description = String(node.entries.length);
        item.iconPath = new vscode.ThemeIcon(node.group === 'never-mentioned' ? 'eye-closed' : node.group === 'never-retrieved' ? 'debug-disconnect' : KIND_ICON[node.group]);
        if (node.group === 'never-mentioned') item.tooltip = 'Defined, but no other campaign file names or links to them.';
        if (node.group === 'never-retrieved') item.tooltip = 'No played turn has retrieved a passage of their files.';
        return item;
      }
      case 'entity': {
        const { entity, mentions, files, mentioningFiles, retrieved } = node.entry;
        const item = new vscode.TreeItem(entity.display, vscode.TreeItemCollapsibleState.Collapsed);
        item.description = [
          mentionCount(mentions, files),
          mentions > 0 && mentioningFiles.length === 0 ? 'never mentioned elsewhere' : '',
          retrieved === false ? 'never retrieved' : '',
        ].filter(Boolean).join(' · ');
        item.tooltip = new vscode.MarkdownString(
          [`**${entity.display}** (${KIND_GROUP[entity.kind].replace(/s$/, '').toLowerCase()})`, entity.names.length > 1 ? `Also: ${entity.names.filter((n) => n !== entity.display).join(', ')}` : '', entity.summary]
            .filter(Boolean)
            .join('\n\n'),
        );
        item.iconPath = new vscode.ThemeIcon(KIND_ICON[entity.kind]);
        const definition = entity.definitions[0];
        if (definition) item.command = openCommand(node.root, definition.path, definition.line);
        item.contextValue = 'entity';
        return item;
      }
      case 'file': {
        const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
        item.iconPath = vscode.ThemeIcon.File;
        item.resourceUri = vscode.Uri.file(path.join(node.root, ...node.relPath.split('/')));
        item.command = openCommand(node.root, node.relPath, node.line);
        return item;
      }
    }
  }
}

function openCommand(root: string, relPath: string, line: number): vscode.Command {
  const uri = vscode.Uri.file(path.join(root, ...relPath.split('/')));
  const at = new vscode.Range(line, 0, line, 0);
  return { command: 'vscode.open', title: 'Open', arguments: [uri, { selection: at, preview: true }] };
}
