import path from 'node:path';
import * as vscode from 'vscode';
import { CAMPAIGN_FILE } from '../knowledge/campaign';
import { changeBetween, withFrontMatterField, type FrontMatter } from '../knowledge/campaign';
import { createFile, writeFailure } from '../knowledge/files';
import { excerptAround, searchKnowledge } from '../knowledge/retrieval';
import { KNOWLEDGE_CLASSES, type KnowledgeClass, type SourceRecord } from '../knowledge/campaign';
import { chooseFolderOutsideCampaigns, offerCampaign } from './campaignFolders';
import type { CampaignIndex } from './campaignIndex';
import type { CampaignRegistry } from './campaigns';
import { Disposable } from './disposable';
import type { KnowledgeService } from './knowledgeService';
import { openPassage, type PassageNode, type PassagesTree } from './passagesTree';
import type { Settings } from './settings';
import { CLASS_LABEL, describeOrigin, sourceUri, type SourcesNode } from './sourcesTree';
import { embedderFor } from '../session';
import { walkthroughDone } from './walkthrough';
import { trustedFor } from './workspaceTrust';

const SEARCH_DEBOUNCE_MS = 150;
const SEARCH_LIMIT = 20;

/** The smallest edit that turns the document into `after`, as the editor applies it. */
export function minimalEdit(document: vscode.TextDocument, after: string): vscode.TextEdit | undefined {
  const change = changeBetween(document.getText(), after);
  return change ? vscode.TextEdit.replace(new vscode.Range(change.startLine, change.startColumn, change.endLine, change.endColumn), change.newText) : undefined;
}

/** The campaign a command is about: the clicked one, the one holding the given file, the only one, or a pick. */
export async function campaignTarget(campaigns: CampaignRegistry, knowledge: KnowledgeService, arg?: SourcesNode | vscode.Uri): Promise<CampaignIndex | undefined> {
  await campaigns.ready();
  if (arg instanceof vscode.Uri) return knowledge.indexOf(arg.fsPath);
  if (arg?.kind === 'campaign') return knowledge.get(arg.entry.root);
  if (arg) return knowledge.get(arg.root);
  const active = vscode.window.activeTextEditor?.document.uri;
  const fromEditor = active?.scheme === 'file' ? knowledge.indexOf(active.fsPath) : undefined;
  if (fromEditor) return fromEditor;
  const all = knowledge.list();
  if (all.length <= 1) return all[0];
  const picked = await vscode.window.showQuickPick(
    all.map((index) => ({ label: index.campaign.title, description: vscode.workspace.asRelativePath(index.campaign.root), index })),
    { placeHolder: 'Which campaign?' },
  );
  return picked?.index;
}

interface SearchItem extends vscode.QuickPickItem {
  /** Absent for what is not a result: a campaign's heading, or why it answered nothing. */
  target?: PassageNode;
}

export class Commands extends Disposable {
  constructor(
    private readonly campaigns: CampaignRegistry,
    private readonly knowledge: KnowledgeService,
    private readonly passages: PassagesTree,
    private readonly settings: Settings,
    log: vscode.LogOutputChannel,
  ) {
    super();
    const register = (id: string, run: (...args: never[]) => unknown): void => {
      this._register(vscode.commands.registerCommand(id, run));
    };
    register('storyteller.showLog', () => log.show());
    register('storyteller.reindexCampaign', (arg?: SourcesNode | vscode.Uri) => this.withCampaign(arg, (index) => this.knowledge.reindex(index)));
    register('storyteller.rebuildIndex', (arg?: SourcesNode | vscode.Uri) => this.withCampaign(arg, (index) => this.knowledge.reindex(index, true)));
    register('storyteller.search', (query?: string) => this.search(query));
    register('storyteller.enableSource', (arg?: SourcesNode | vscode.Uri) => this.setField(arg, 'enabled', true));
    register('storyteller.disableSource', (arg?: SourcesNode | vscode.Uri) => this.setField(arg, 'enabled', false));
    register('storyteller.setClassification', (arg?: SourcesNode | vscode.Uri, knowledgeClass?: KnowledgeClass) => this.setClassification(arg, knowledgeClass));
    register('storyteller.openSource', async (arg?: SourcesNode | vscode.Uri) => {
      const uri = this.sourceTarget(arg);
      if (uri) await vscode.window.showTextDocument(uri);
    });
    register('storyteller.revealPassages', async (node: Extract<SourcesNode, { kind: 'source' }>) => {
      this.passages.select(node.root, node.source.id);
      await vscode.commands.executeCommand('storyteller.passages.focus');
    });
    register('storyteller.openPassage', (node: PassageNode) => openPassage(node));
    register('storyteller.reindexSource', (arg?: SourcesNode | vscode.Uri) => this.reindexSource(arg));
    register('storyteller.deleteSource', (arg?: SourcesNode | vscode.Uri) => this.deleteSource(arg));
    register('storyteller.newCampaign', (options?: { parent?: vscode.Uri; title?: string; then?: 'ask' | 'add' | 'none' }) => this.newCampaign(options));
  }

  /** Reindexes the one file now, as a save would, without waiting for the watcher. */
  private async reindexSource(arg?: SourcesNode | vscode.Uri): Promise<void> {
    const uri = this.sourceTarget(arg);
    const index = uri && this.knowledge.indexOf(uri.fsPath);
    if (!uri || !index) {
      void vscode.window.showInformationMessage('Open or select a campaign source first.');
      return;
    }
    await index.reindexFile(uri.fsPath);
  }

  /**
   * Deletes a source file after a modal confirmation, keeping its bytes for a Restore offered right after;
   * the watcher then drops it from the index. Turns that used it keep the text they were given.
   */
  private async deleteSource(arg?: SourcesNode | vscode.Uri): Promise<boolean> {
    const uri = this.sourceTarget(arg);
    if (!uri) {
      void vscode.window.showInformationMessage('Open or select a campaign source first.');
      return false;
    }
    const name = vscode.workspace.asRelativePath(uri);
    const choice = await vscode.window.showWarningMessage(
      `Delete '${name}' from the campaign?`,
      { modal: true, detail: 'The file is deleted and leaves the knowledge index; a Restore button follows in case you change your mind. Turns already played keep the text they were given.' },
      'Delete File',
    );
    if (choice !== 'Delete File') return false;
    const bytes = await vscode.workspace.fs.readFile(uri);
    const edit = new vscode.WorkspaceEdit();
    edit.deleteFile(uri, { ignoreIfNotExists: true });
    if (!(await vscode.workspace.applyEdit(edit))) {
      void vscode.window.showErrorMessage(`${name}: could not be deleted`);
      return false;
    }
    void vscode.window.showInformationMessage(`Deleted '${name}'.`, 'Restore').then((restore) => restore && this.restore(uri, bytes));
    return true;
  }

  /** Puts deleted bytes back, unless something new has been written at that path since. */
  private async restore(uri: vscode.Uri, bytes: Uint8Array): Promise<void> {
    const name = vscode.workspace.asRelativePath(uri);
    try {
      createFile(uri.fsPath, bytes);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') void vscode.window.showWarningMessage(`${name} exists again; the deleted copy was not written over it.`);
      else void vscode.window.showErrorMessage(`${name} could not be restored: ${writeFailure(error)}`);
    }
  }

  private async withCampaign(arg: SourcesNode | vscode.Uri | undefined, run: (index: CampaignIndex) => Thenable<unknown>): Promise<void> {
    const index = await campaignTarget(this.campaigns, this.knowledge, arg);
    if (!index) {
      void vscode.window.showInformationMessage('No campaign here: a campaign is a folder with a campaign.yaml.');
      return;
    }
    await run(index);
  }

  /** The source file a command is about: the clicked tree item, the given file, or the active editor's. */
  private sourceTarget(arg?: SourcesNode | vscode.Uri): vscode.Uri | undefined {
    if (arg instanceof vscode.Uri) return arg;
    if (arg?.kind === 'source') return sourceUri(arg.root, arg.source);
    return vscode.window.activeTextEditor?.document.uri;
  }

  /** Sets one front-matter field as an undoable edit of the document, saved so the index picks it up. */
  private async setField(arg: SourcesNode | vscode.Uri | undefined, key: keyof FrontMatter, value: string | boolean): Promise<boolean> {
    const uri = this.sourceTarget(arg);
    if (!uri) {
      void vscode.window.showInformationMessage('Open or select a campaign source first.');
      return false;
    }
    const document = await vscode.workspace.openTextDocument(uri);
    let after: string;
    try {
      after = withFrontMatterField(document.getText(), key, value);
    } catch (error) {
      void vscode.window.showErrorMessage(`${vscode.workspace.asRelativePath(uri)}: ${(error as Error).message}`);
      return false;
    }
    const change = minimalEdit(document, after);
    if (!change) return true;
    const edit = new vscode.WorkspaceEdit();
    edit.set(uri, [change]);
    if (!(await vscode.workspace.applyEdit(edit))) {
      void vscode.window.showErrorMessage(`${vscode.workspace.asRelativePath(uri)}: the edit could not be applied`);
      return false;
    }
    return document.save();
  }

  private async setClassification(arg: SourcesNode | vscode.Uri | undefined, knowledgeClass?: KnowledgeClass): Promise<boolean> {
    const current: SourceRecord | undefined = arg && !(arg instanceof vscode.Uri) && arg.kind === 'source' ? arg.source : undefined;
    const chosen =
      knowledgeClass ??
      (
        await vscode.window.showQuickPick(
          KNOWLEDGE_CLASSES.map((c) => ({
            label: CLASS_LABEL[c],
            description: current?.class === c ? `current: ${describeOrigin(current.classOrigin)}` : undefined,
            value: c,
          })),
          { placeHolder: 'Classify as… (written to the file’s front matter)' },
        )
      )?.value;
    if (!chosen) return false;
    return this.setField(arg, 'class', chosen);
  }

  /** A quick pick whose results follow the typing; choosing one opens the passage with its lines selected. */
  private async search(initial?: string): Promise<void> {
    await this.campaigns.ready();
    const pick = vscode.window.createQuickPick<SearchItem>();
    pick.placeholder = 'Search campaign knowledge (canon, reference, inspiration)';
    pick.matchOnDescription = true;
    pick.matchOnDetail = true;
    let timer: NodeJS.Timeout | undefined;
    let generation = 0;
    const update = async (text: string): Promise<void> => {
      const mine = ++generation;
      if (text.trim() === '') {
        pick.items = [];
        return;
      }
      pick.busy = true;
      const items: SearchItem[] = [];
      const campaigns = this.knowledge.list();
      // A campaign that answers nothing (or is not indexed yet) says so and why, after the results: with
      // several open, a writer sees every campaign was asked, not only the ones that answered.
      const silent: SearchItem[] = [];
      const nothingFrom = (title: string, why: string) => silent.push({ label: `$(info) Nothing from ${title}`, detail: why, alwaysShow: true });
      for (const index of campaigns) {
        const store = index.store;
        if (!store) {
          nothingFrom(index.campaign.title, 'not indexed yet');
          continue;
        }
        const embedder = embedderFor(this.settings.current);
        const { hits, record } = await searchKnowledge(store, text, { limit: SEARCH_LIMIT, semantic: embedder ? { embedder } : null });
        if (hits.length === 0) nothingFrom(index.campaign.title, record.abstention ?? 'no passage is relevant enough');
        for (const hit of hits) {
          const source = store.getSource(hit.sourceId);
          const passage = store.getPassage(hit.passageId);
          if (!source || !passage) continue;
          items.push({
            label: hit.headingPath.at(-1) ?? hit.sourceTitle,
            // With several campaigns open, each result names the one it comes from.
            description: `${campaigns.length > 1 ? `${index.campaign.title} · ` : ''}${CLASS_LABEL[hit.class]} · ${hit.sourcePath}:${hit.startLine}${hit.hidden ? ' · hidden' : ''}`,
            detail: excerptAround(hit.text, text),
            // Quick pick filters by the typed text; results already come from search, keep them all.
            alwaysShow: true,
            target: { root: index.campaign.root, source, passage },
          });
        }
      }
      if (mine !== generation) return;
      walkthroughDone('searched');
      pick.items = [...items, ...silent];
      pick.busy = false;
    };
    pick.onDidChangeValue((value) => {
      clearTimeout(timer);
      timer = setTimeout(() => void update(value), SEARCH_DEBOUNCE_MS);
    });
    pick.onDidAccept(() => {
      const chosen = pick.selectedItems[0];
      if (chosen && !chosen.target) return;
      pick.hide();
      if (chosen?.target) void openPassage(chosen.target);
    });
    pick.onDidHide(() => {
      clearTimeout(timer);
      pick.dispose();
    });
    if (initial) {
      pick.value = initial;
      await update(initial);
    }
    pick.show();
  }

  /**
   * Creates a campaign where the writer chose: in the folder itself when it is empty, else in a new `<id>/`
   * inside it (said before anything is written), then offers to open it or add it to the workspace, where
   * Sources lists it. `then` lets a caller decide instead of asking.
   */
  private async newCampaign(options: { parent?: vscode.Uri; title?: string; then?: 'ask' | 'add' | 'none' } = {}): Promise<vscode.Uri | undefined> {
    if (!trustedFor('New Campaign')) return undefined;
    const parent = await chooseFolderOutsideCampaigns(this.campaigns, options.parent, {
      openLabel: 'Create the Campaign Here',
      title: 'New Campaign: choose an empty folder for it (outside any campaign)',
    });
    if (!parent) return undefined;
    const title =
      options.title ??
      (await vscode.window.showInputBox({ title: 'New Campaign: its title', prompt: 'The title the campaign is shown by (you can change it in campaign.yaml)', placeHolder: 'The Sunken Crown', validateInput: (v) => (v.trim() ? undefined : 'A title is needed') }));
    if (!title?.trim()) return undefined;
    const id = title.trim().toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 64) || 'campaign';
    const entries = await vscode.workspace.fs.readDirectory(parent).then((list) => list, () => []);
    const root = entries.length === 0 ? parent : vscode.Uri.joinPath(parent, id);
    if (await vscode.workspace.fs.stat(vscode.Uri.joinPath(root, CAMPAIGN_FILE)).then(() => true, () => false)) {
      void vscode.window.showErrorMessage(`${root.fsPath} is already a campaign (it has a ${CAMPAIGN_FILE}); nothing was written.`);
      return undefined;
    }
    if (root !== parent && !options.parent) {
      const create = `Create ${path.basename(root.fsPath)}/`;
      const choice = await vscode.window.showInformationMessage(`${parent.fsPath} is not empty: the campaign goes in a new folder, ${root.fsPath}.`, { modal: true }, create);
      if (choice !== create) return undefined;
    }
    const yaml = `id: ${id}\ntitle: ${JSON.stringify(title.trim())}\ndefault_class: reference\nfolders:\n  characters: canon\n  places: canon\n`;
    const canon = `---\nclass: canon\ntitle: ${JSON.stringify(`${title.trim()} — setting bible`)}\n---\n# ${title.trim()}\n\nWhat is true in this world, whatever the story does.\n`;
    const edit = new vscode.WorkspaceEdit();
    // Created as one workspace edit: undo removes the whole campaign again; existing files are never overwritten.
    edit.createFile(vscode.Uri.joinPath(root, CAMPAIGN_FILE), { contents: Buffer.from(yaml), ignoreIfExists: true });
    edit.createFile(vscode.Uri.joinPath(root, 'canon.md'), { contents: Buffer.from(canon), ignoreIfExists: true });
    if (!(await vscode.workspace.applyEdit(edit))) {
      void vscode.window.showErrorMessage(`Could not create the campaign in ${path.join(parent.fsPath, id)}`);
      return undefined;
    }
    await vscode.window.showTextDocument(vscode.Uri.joinPath(root, 'canon.md'));
    offerCampaign(root, `Created "${title.trim()}" in ${root.fsPath}.`, options.then ?? 'ask');
    return root;
  }

}
