import path from 'node:path';
import * as vscode from 'vscode';
import {
  EntityModel,
  entitySourcesFromStore,
  fileNameFor,
  findWikiLinks,
  openLinkPrefix,
  RenameError,
  renamedFile,
  renameEdits,
  type Entity,
  type EntityKind,
  type TextSpan,
} from '../knowledge/entities';
import { CONFLICT_COMMANDS, md, openLink, type ConflictCampaign, type ConflictFeatures } from './conflicts';
import { Disposable } from './disposable';
import { TRANSCRIPT_SCHEME, type TranscriptDocuments } from './transcripts';

/**
 * The campaign as a language in the editor: Go to Definition and Peek on names and `[[links]]`, Find All
 * References (campaign files and adventure transcripts), Rename Symbol as one previewed WorkspaceEdit,
 * completion of names and links, document links, a problem for a link that names nothing (with a quick
 * fix creating the file), and a hover with the entity's summary, canon facts and conflicts. Every answer
 * comes from the entity model of the campaign's index (src/knowledge/entities).
 */

/** A campaign with its index, as the conflict features see it. */
export type EntityCampaign = ConflictCampaign;

export interface EntityLanguageDeps {
  campaigns(): readonly EntityCampaign[];
  onDidChangeIndex: vscode.Event<unknown>;
  conflicts: Pick<ConflictFeatures, 'entityHoverParts'>;
  transcripts: TranscriptDocuments;
}

export const ENTITY_COMMANDS = { createLinked: 'storyteller.entities.createLinkedFile' } as const;

const DIAGNOSTIC_SOURCE = 'Storyteller links';
export const UNRESOLVED_LINK = 'unresolved-link';

export const KIND_LABEL: Record<EntityKind, string> = { character: 'Character', place: 'Place', faction: 'Faction', item: 'Item', other: 'Entity' };
const COMPLETION_KIND: Record<EntityKind, vscode.CompletionItemKind> = {
  character: vscode.CompletionItemKind.User,
  place: vscode.CompletionItemKind.Module,
  faction: vscode.CompletionItemKind.Class,
  item: vscode.CompletionItemKind.Constant,
  other: vscode.CompletionItemKind.Reference,
};

function uriOf(root: string, relPath: string): vscode.Uri {
  return vscode.Uri.file(path.join(root, ...relPath.split('/')));
}

function rangeOf(span: Pick<TextSpan, 'line' | 'start' | 'end'>): vscode.Range {
  return new vscode.Range(span.line, span.start, span.line, span.end);
}

/** How long after a rename is given its file may still be offered (a preview may stay open a while). */
const FILE_OFFER_MS = 10 * 60_000;

interface Located {
  root: string;
  /** Campaign-relative path; undefined for a transcript, which is not a campaign file. */
  relPath: string | undefined;
  model: EntityModel;
  entry: EntityCampaign;
}

/**
 * Quiet time after an index change before the models are rebuilt and link problems republished: indexing a
 * large folder changes the index many times a second, and one rebuild after it settles does for all of them.
 * Anything that asks a model meanwhile (a hover, F12, the Codex) gets it rebuilt at once.
 */
const MODEL_QUIET_MS = 300;

export class EntityLanguage extends Disposable {
  private readonly models = new Map<string, EntityModel>();
  /** The index changed since the models were built. */
  private stale = false;
  private rebuildTimer: NodeJS.Timeout | undefined;
  /** The defining file a rename just given would leave named after the old name: offered once the rename lands in it. */
  private fileOffer: { root: string; from: string; to: string; name: string; until: number } | undefined;
  private readonly diagnostics = this._register(vscode.languages.createDiagnosticCollection('storyteller-links'));
  private readonly _onDidChangeModels = this._register(new vscode.EventEmitter<void>());
  /** Fires after the models were rebuilt and link problems published (the Codex and tests wait on it). */
  readonly onDidChangeModels = this._onDidChangeModels.event;

  constructor(private readonly deps: EntityLanguageDeps) {
    super();
    const files: vscode.DocumentSelector = [
      { scheme: 'file', language: 'markdown' },
      { scheme: 'file', language: 'plaintext' },
    ];
    const readable: vscode.DocumentSelector = [...files, { scheme: TRANSCRIPT_SCHEME }];
    this._register(vscode.commands.registerCommand(ENTITY_COMMANDS.createLinked, (root: string, relPath: string, title: string) => createLinkedFile(root, relPath, title)));
    this._register(deps.onDidChangeIndex(() => this.refresh()));
    this._register(
      vscode.workspace.onDidChangeTextDocument((e) => {
        this.publishOpen(e.document);
        this.offerFileRename(e.document);
      }),
    );
    this._register(vscode.workspace.onDidOpenTextDocument((d) => this.publishOpen(d)));
    this._register(vscode.languages.registerDefinitionProvider(readable, { provideDefinition: (doc, pos) => this.definition(doc, pos) }));
    this._register(vscode.languages.registerReferenceProvider(readable, { provideReferences: (doc, pos, context) => this.references(doc, pos, context) }));
    this._register(
      vscode.languages.registerRenameProvider(files, {
        prepareRename: (doc, pos) => this.prepareRename(doc, pos),
        provideRenameEdits: (doc, pos, newName) => this.rename(doc, pos, newName),
      }),
    );
    this._register(vscode.languages.registerCompletionItemProvider(files, { provideCompletionItems: (doc, pos) => this.complete(doc, pos) }, '['));
    this._register(vscode.languages.registerDocumentLinkProvider(files, { provideDocumentLinks: (doc) => this.links(doc) }));
    this._register(vscode.languages.registerHoverProvider(readable, { provideHover: (doc, pos) => this.hover(doc, pos) }));
    this._register(
      vscode.languages.registerCodeActionsProvider(files, { provideCodeActions: (doc, _range, context) => this.codeActions(doc, context) }, {
        providedCodeActionKinds: [vscode.CodeActionKind.QuickFix],
      }),
    );
    this._register({ dispose: () => clearTimeout(this.rebuildTimer) });
    this.refresh();
  }

  /** The model of the campaign at `root`, built from its index as it is now. */
  modelOf(root: string): EntityModel | undefined {
    if (this.stale) this.rebuild();
    return this.models.get(root);
  }

  /** The index changed: the models are rebuilt once it has been quiet for a moment, or when asked for first. */
  refresh(): void {
    this.stale = true;
    clearTimeout(this.rebuildTimer);
    this.rebuildTimer = setTimeout(() => this.rebuild(), MODEL_QUIET_MS);
  }

  /** Rebuilds each campaign's model from the previous one: unchanged files are neither read nor scanned again. */
  private rebuild(): void {
    clearTimeout(this.rebuildTimer);
    this.stale = false;
    const seen = new Set<string>();
    for (const entry of this.deps.campaigns()) {
      if (!entry.store) continue;
      const root = entry.campaign.root;
      seen.add(root);
      const previous = this.models.get(root);
      this.models.set(root, new EntityModel(entitySourcesFromStore(entry.store, previous?.sources), previous));
    }
    for (const root of [...this.models.keys()]) if (!seen.has(root)) this.models.delete(root);
    this.publish();
    this._onDidChangeModels.fire();
  }

  private entryOf(root: string): EntityCampaign | undefined {
    return this.deps.campaigns().find((c) => c.campaign.root === root);
  }

  private locate(doc: vscode.TextDocument): Located | undefined {
    if (this.stale) this.rebuild();
    return this.locateIn(doc);
  }

  /** Where a document belongs among the models as they are, stale or not. */
  private locateIn(doc: vscode.TextDocument): Located | undefined {
    if (doc.uri.scheme === TRANSCRIPT_SCHEME) {
      const root = this.deps.transcripts.campaignRootOf(doc.uri);
      const model = root && this.models.get(root);
      const entry = root && this.entryOf(root);
      return root && model && entry ? { root, relPath: undefined, model, entry } : undefined;
    }
    if (doc.uri.scheme !== 'file') return undefined;
    for (const [root, model] of this.models) {
      const rel = path.relative(root, doc.uri.fsPath);
      if (rel.startsWith('..') || path.isAbsolute(rel)) continue;
      const entry = this.entryOf(root);
      return entry ? { root, relPath: rel.split(path.sep).join('/'), model, entry } : undefined;
    }
    return undefined;
  }

  /**
   * The campaign's files open in the editor: edits and answers must match what is on screen, also in the
   * moment between a save and the reindex that follows it.
   */
  private openTexts(root: string): Map<string, string> {
    const texts = new Map<string, string>();
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.uri.scheme !== 'file') continue;
      const rel = path.relative(root, doc.uri.fsPath);
      if (!rel.startsWith('..') && !path.isAbsolute(rel)) texts.set(rel.split(path.sep).join('/'), doc.getText());
    }
    return texts;
  }

  private entityAt(doc: vscode.TextDocument, pos: vscode.Position) {
    const where = this.locate(doc);
    if (!where) return undefined;
    const found = where.model.entityAt(where.relPath ?? '', doc.lineAt(pos.line).text, pos.line, pos.character);
    return found && { ...where, ...found };
  }

  private definitionLocation(root: string, span: TextSpan): vscode.Location {
    return new vscode.Location(uriOf(root, span.path), rangeOf(span));
  }

  private definition(doc: vscode.TextDocument, pos: vscode.Position): vscode.LocationLink[] | undefined {
    const where = this.locate(doc);
    if (!where) return undefined;
    const lineText = doc.lineAt(pos.line).text;
    const link = findWikiLinks(lineText, pos.line).find((l) => pos.character >= l.start && pos.character <= l.end);
    if (link) {
      const target = where.model.resolveLink(link);
      if (!target) return undefined;
      const location = this.definitionLocation(where.root, target);
      return [{ originSelectionRange: new vscode.Range(pos.line, link.start, pos.line, link.end), targetUri: location.uri, targetRange: location.range }];
    }
    const found = this.entityAt(doc, pos);
    if (!found) return undefined;
    return found.entity.definitions.map((d) => {
      const location = this.definitionLocation(where.root, d);
      return { originSelectionRange: rangeOf(found.span), targetUri: location.uri, targetRange: location.range };
    });
  }

  private references(doc: vscode.TextDocument, pos: vscode.Position, context: vscode.ReferenceContext): vscode.Location[] | undefined {
    const found = this.entityAt(doc, pos);
    if (!found) return undefined;
    const { root, model, entity, entry } = found;
    const texts = this.openTexts(root);
    const locations: vscode.Location[] = [];
    for (const source of model.sources) {
      for (const m of model.mentionsIn(source.path, texts.get(source.path) ?? source.text)) {
        if (m.entityKey === entity.key && !m.weak && (context.includeDeclaration || !m.declaration)) locations.push(new vscode.Location(uriOf(root, m.path), rangeOf(m)));
      }
    }
    for (const transcript of this.deps.transcripts.headTranscripts(entry)) {
      for (const m of model.mentionsIn('', transcript.text)) if (m.entityKey === entity.key) locations.push(new vscode.Location(transcript.uri, rangeOf(m)));
    }
    return locations;
  }

  private prepareRename(doc: vscode.TextDocument, pos: vscode.Position): { range: vscode.Range; placeholder: string } {
    const found = this.entityAt(doc, pos);
    if (!found) throw new Error('Only the name of a campaign entity, or a [[link]] to one, can be renamed here.');
    const range = rangeOf(found.span);
    return { range, placeholder: doc.getText(range) };
  }

  private rename(doc: vscode.TextDocument, pos: vscode.Position, newName: string): vscode.WorkspaceEdit {
    const found = this.entityAt(doc, pos);
    if (!found) throw new Error('Only the name of a campaign entity, or a [[link]] to one, can be renamed here.');
    const oldName = doc.getText(rangeOf(found.span));
    let edits;
    try {
      edits = renameEdits(found.model, found.entity.key, oldName, newName, this.openTexts(found.root));
    } catch (error) {
      if (error instanceof RenameError) throw new Error(`Cannot rename ${oldName}: ${error.message}.`, { cause: error });
      throw error;
    }
    const edit = new vscode.WorkspaceEdit();
    // One labelled edit: Enter applies it, Ctrl+Enter in the rename box shows it in the refactor preview first.
    const metadata: vscode.WorkspaceEditEntryMetadata = { label: `Rename ${oldName} to ${newName.trim()}`, needsConfirmation: false };
    for (const e of edits) edit.replace(uriOf(found.root, e.path), rangeOf(e), e.newText, metadata);
    // A file rename in the same edit would untick that file's text edits in the preview while the rename is
    // unticked (VS Code ties them): the file is offered once the rename has reached it, as Obsidian offers it.
    const file = renamedFile(found.model, found.entity.key, oldName, newName);
    // A rename discarded in its preview never lands: its offer lapses rather than surprising the writer later.
    this.fileOffer = file && { root: found.root, ...file, name: newName.trim(), until: Date.now() + FILE_OFFER_MS };
    return edit;
  }

  /** Once the rename reached the file named after the old name, offers to give it the new one. */
  private offerFileRename(doc: vscode.TextDocument): void {
    const offer = this.fileOffer;
    // The whole URI, not the path: the refactor preview edits a copy of the file under its own scheme and the same
    // path, and that copy changing is no rename landing.
    if (!offer || Date.now() > offer.until || doc.uri.toString() !== uriOf(offer.root, offer.from).toString() || !doc.getText().includes(offer.name)) return;
    this.fileOffer = undefined;
    const rename = 'Rename File';
    void vscode.window.showInformationMessage(`${offer.from} is still named after the old name. Rename it to ${offer.to}?`, rename).then(async (choice) => {
      if (choice !== rename) return;
      const target = uriOf(offer.root, offer.to);
      if (await exists(target)) {
        void vscode.window.showWarningMessage(`${offer.to} already exists; ${offer.from} keeps its name.`);
        return;
      }
      const edit = new vscode.WorkspaceEdit();
      edit.renameFile(uriOf(offer.root, offer.from), target);
      if (!(await vscode.workspace.applyEdit(edit))) void vscode.window.showErrorMessage(`${offer.from} could not be renamed to ${offer.to}.`);
    });
  }

  private complete(doc: vscode.TextDocument, pos: vscode.Position): vscode.CompletionItem[] | undefined {
    const where = this.locate(doc);
    if (!where) return undefined;
    const lineText = doc.lineAt(pos.line).text;
    const typed = openLinkPrefix(lineText, pos.character);
    if (typed !== undefined) {
      const range = new vscode.Range(pos.line, pos.character - typed.length, pos.line, pos.character);
      const closes = lineText.slice(pos.character).startsWith(']]');
      // A link may name any source (a rules page too), so every entity is offered.
      return where.model.entities.flatMap((entity) =>
        entity.names.map((name) => this.completionItem(entity, name, { range, insertText: closes ? name : `${name}]]` })),
      );
    }
    const word = doc.getWordRangeAtPosition(pos, /[\p{L}\p{N}'’-]+/u);
    if (!word) return undefined;
    return where.model.canonEntities().flatMap((entity) => entity.names.map((name) => this.completionItem(entity, name, { range: word, insertText: name })));
  }

  private completionItem(entity: Entity, name: string, at: { range: vscode.Range; insertText: string }): vscode.CompletionItem {
    const item = new vscode.CompletionItem({ label: name, description: name === entity.display ? KIND_LABEL[entity.kind] : `${KIND_LABEL[entity.kind]}: ${entity.display}` }, COMPLETION_KIND[entity.kind]);
    item.range = at.range;
    item.insertText = at.insertText;
    const definition = entity.definitions[0];
    item.detail = definition ? definition.path : undefined;
    if (entity.summary) item.documentation = new vscode.MarkdownString(md(entity.summary));
    item.filterText = name;
    return item;
  }

  private links(doc: vscode.TextDocument): vscode.DocumentLink[] {
    const where = this.locate(doc);
    if (!where) return [];
    const links: vscode.DocumentLink[] = [];
    for (let line = 0; line < doc.lineCount; line++) {
      for (const link of findWikiLinks(doc.lineAt(line).text, line)) {
        const target = where.model.resolveLink(link);
        if (!target) continue;
        const documentLink = new vscode.DocumentLink(new vscode.Range(line, link.start, line, link.end), uriOf(where.root, target.path).with({ fragment: `L${target.line + 1}` }));
        documentLink.tooltip = `Open ${target.entity?.display ?? link.target} (${target.path}:${target.line + 1})`;
        links.push(documentLink);
      }
    }
    return links;
  }

  private linkDiagnostics(model: EntityModel, text: string): vscode.Diagnostic[] {
    return model.unresolvedLinks(text).map((link) => {
      const d = new vscode.Diagnostic(
        new vscode.Range(link.line, link.start, link.line, link.end),
        `[[${link.target}]] names no page, alias or heading in this campaign`,
        vscode.DiagnosticSeverity.Information,
      );
      d.source = DIAGNOSTIC_SOURCE;
      d.code = UNRESOLVED_LINK;
      return d;
    });
  }

  /** Link problems of every indexed file; an open file's own buffer is checked as it is typed. */
  private publish(): void {
    this.diagnostics.clear();
    for (const [root, model] of this.models) {
      for (const source of model.sources) {
        const items = this.linkDiagnostics(model, source.text);
        if (items.length > 0) this.diagnostics.set(uriOf(root, source.path), items);
      }
    }
    for (const doc of vscode.workspace.textDocuments) if (doc.isDirty) this.publishOpen(doc);
  }

  /** Checks the buffer as it is typed against the current models; a pending rebuild republishes it anyway. */
  private publishOpen(doc: vscode.TextDocument): void {
    const where = this.locateIn(doc);
    if (!where?.relPath || !/\.(md|markdown|txt)$/i.test(where.relPath)) return;
    this.diagnostics.set(doc.uri, this.linkDiagnostics(where.model, doc.getText()));
  }

  private codeActions(doc: vscode.TextDocument, context: vscode.CodeActionContext): vscode.CodeAction[] {
    const where = this.locate(doc);
    if (!where?.relPath) return [];
    return context.diagnostics
      .filter((d) => d.source === DIAGNOSTIC_SOURCE && d.code === UNRESOLVED_LINK)
      .flatMap((d) => {
        const link = findWikiLinks(doc.lineAt(d.range.start.line).text, d.range.start.line).find((l) => l.start === d.range.start.character);
        if (!link) return [];
        const folder = path.posix.dirname(where.relPath!);
        const relPath = folder === '.' ? fileNameFor(link.target) : `${folder}/${fileNameFor(link.target)}`;
        const action = new vscode.CodeAction(`Create ${relPath} for [[${link.target}]]`, vscode.CodeActionKind.QuickFix);
        action.diagnostics = [d];
        action.isPreferred = true;
        action.command = { command: ENTITY_COMMANDS.createLinked, title: action.title, arguments: [where.root, relPath, link.target] };
        return [action];
      });
  }

  private hover(doc: vscode.TextDocument, pos: vscode.Position): vscode.Hover | undefined {
    const found = this.entityAt(doc, pos);
    if (!found) return undefined;
    const { entity, root, model } = found;
    const usage = model.usage(entity.key);
    const parts = [`**${md(entity.display)}** · ${KIND_LABEL[entity.kind]} · ${mentionCount(usage.mentions, usage.files.length)}`];
    if (entity.names.length > 1) parts.push(`Also: ${entity.names.filter((n) => n !== entity.display).map(md).join(', ')}`);
    if (entity.summary) parts.push(md(entity.summary));
    parts.push(...this.deps.conflicts.entityHoverParts(root, entity.key));
    parts.push(`Defined in ${entity.definitions.map((d) => openLink(root, d.path, d.line + 1)).join(', ')}`);
    const content = new vscode.MarkdownString(parts.join('\n\n'));
    content.isTrusted = { enabledCommands: [CONFLICT_COMMANDS.open] };
    return new vscode.Hover(content, rangeOf(found.span));
  }
}

/** "12 mentions in 4 files": one wording for the hover and the Codex, so they never disagree. */
export function mentionCount(mentions: number, files: number): string {
  if (mentions === 0) return 'no mentions';
  return `${mentions} mention${mentions === 1 ? '' : 's'} in ${files} file${files === 1 ? '' : 's'}`;
}

/** "Create file" for a link that names nothing: a page titled as the link, in the linking file's folder, opened. */
export async function createLinkedFile(root: string, relPath: string, title: string): Promise<vscode.Uri> {
  let uri = uriOf(root, relPath);
  for (let n = 2; await exists(uri); n++) uri = uriOf(root, relPath.replace(/\.md$/, `-${n}.md`));
  const edit = new vscode.WorkspaceEdit();
  const quoted = /^[\w ,.'’()-]+$/u.test(title) ? title : JSON.stringify(title);
  edit.createFile(uri, { contents: new TextEncoder().encode(`---\ntitle: ${quoted}\n---\n# ${title}\n\n`) });
  await vscode.workspace.applyEdit(edit);
  const editor = await vscode.window.showTextDocument(uri);
  const end = new vscode.Position(editor.document.lineCount - 1, 0);
  editor.selection = new vscode.Selection(end, end);
  return uri;
}

async function exists(uri: vscode.Uri): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(uri);
    return true;
  } catch {
    return false;
  }
}
