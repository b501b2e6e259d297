import path from 'node:path';
import * as vscode from 'vscode';
import { CampaignError, pathInside } from '../knowledge/campaign';
import { importFilesIntoCampaign, type FileImportResult } from '../knowledge/interchange';
import { LorebookError } from '../knowledge/interchange';
import { exportCampaignWorldInfo, worldInfoExportReport, type WorldInfoExportResult } from '../knowledge/interchange';
import { DEFAULT_LORE_FOLDER, importLorebookFile, lorebookImportReport, type LorebookImportResult } from '../knowledge/interchange';
import { KNOWLEDGE_CLASSES, type KnowledgeClass } from '../knowledge/campaign';
import { BUNDLE_EXTENSION, BundleError, bundleImportReport, describePlayData, exportCampaignBundle, importCampaignBundle, type ExportSummary, type ImportBundleSummary } from '../knowledge/interchange';
import { fenced, playItemName, renderContextMarkdown } from '../story/contextReport';
import { campaignAdventure } from '../story/playStore';
import { chooseFolderOutsideCampaigns, offerCampaign } from './campaignFolders';
import type { CampaignIndex } from './campaignIndex';
import type { CampaignRegistry } from './campaigns';
import { campaignTarget } from './commands';
import { Disposable } from './disposable';
import type { KnowledgeService } from './knowledgeService';
import type { PlayPanels } from './playPanels';
import type { ReportDocuments } from './reportDocuments';
import type { Settings } from './settings';
import { walkthroughDone } from './walkthrough';
import { CLASS_LABEL, type SourcesNode } from './sourcesTree';
import { plural } from './words';
import { trustedFor } from './workspaceTrust';

const CLASS_MEANING: Record<KnowledgeClass, string> = {
  canon: 'campaign truth',
  reference: 'plausibility, never truth',
  inspiration: 'style only, first to go',
};

const EXAMPLE_FOLDER = 'example-campaign';

/** The errors the core throws for bad input: their message names the file and the reason. */
function isRefusal(error: unknown): error is Error {
  return error instanceof BundleError || error instanceof LorebookError || error instanceof CampaignError;
}

function nodeRoot(node: SourcesNode): string {
  return node.kind === 'campaign' ? node.entry.root : node.root;
}

/** `<parent>/<name>`, or `<name>-2`, `<name>-3`… when taken: a copy never lands on an existing folder. */
async function freeFolder(parent: vscode.Uri, name: string): Promise<vscode.Uri> {
  for (let n = 1; ; n++) {
    const candidate = vscode.Uri.joinPath(parent, n === 1 ? name : `${name}-${n}`);
    try {
      await vscode.workspace.fs.stat(candidate);
    } catch {
      return candidate;
    }
  }
}

/**
 * Commands that bring material into a campaign or take it out (files, bundles, lorebooks), show what a
 * turn would be sent, and open the example campaign. Each one asks for what it needs, calls the core once,
 * and reports; every argument can also be passed in (from menus, the walkthrough and the test suite).
 */
/** A save dialog for a JSON export, proposing `fileName` beside the campaign folder (never inside it). */
function saveBeside(root: string, title: string, fileName: string, kind: string, saveLabel: string): Thenable<vscode.Uri | undefined> {
  return vscode.window.showSaveDialog({ title, defaultUri: vscode.Uri.file(path.join(path.dirname(root), fileName)), filters: { [kind]: ['json'] }, saveLabel });
}

export class InterchangeCommands extends Disposable {
  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly campaigns: CampaignRegistry,
    private readonly knowledge: KnowledgeService,
    private readonly settings: Settings,
    private readonly play: PlayPanels,
    private readonly reports: ReportDocuments,
    /** Called when a preview had to start the campaign's first adventure, so the Adventures view shows it. */
    private readonly onDidCreateAdventure: () => void,
  ) {
    super();
    const register = (id: string, run: (...args: never[]) => unknown): void => {
      this._register(vscode.commands.registerCommand(id, run));
    };
    // From the explorer: the clicked file and the whole selection; from the Sources view: the campaign node.
    register('storyteller.importFile', (clicked?: vscode.Uri | SourcesNode, selected?: vscode.Uri[], options?: { campaignRoot?: string; class?: KnowledgeClass; folder?: string }) =>
      clicked instanceof vscode.Uri || clicked === undefined
        ? this.importFile(selected?.length ? selected : clicked ? [clicked] : undefined, options)
        : this.importFile(undefined, { campaignRoot: nodeRoot(clicked) }),
    );
    register('storyteller.previewContext', (options?: { campaignRoot?: string; action?: string }) => this.previewContext(options));
    register('storyteller.previewContextWithResearch', (options?: { campaignRoot?: string; action?: string }) => this.previewContext({ ...options, research: true }));
    register('storyteller.exportCampaign', (arg?: SourcesNode | vscode.Uri, options?: { out?: vscode.Uri; embeddings?: boolean }) => this.exportCampaign(arg, options));
    register('storyteller.importCampaign', (options?: { bundle?: vscode.Uri; target?: vscode.Uri; addToWorkspace?: boolean }) => this.importCampaign(options));
    register('storyteller.importLorebook', (clicked?: vscode.Uri | SourcesNode, options?: { campaignRoot?: string; class?: KnowledgeClass; folder?: string }) =>
      clicked instanceof vscode.Uri || clicked === undefined ? this.importLorebook(clicked, options) : this.importLorebook(undefined, { campaignRoot: nodeRoot(clicked) }),
    );
    // Menus and commands that need a campaign show only when the workspace has one.
    const updateContext = (): void => {
      void vscode.commands.executeCommand('setContext', 'storyteller.hasCampaign', knowledge.list().length > 0);
      if (knowledge.list().some((index) => (index.store?.counts().sources ?? 0) > 0)) walkthroughDone('indexed');
    };
    this._register(knowledge.onDidChangeState(updateContext));
    updateContext();
    register('storyteller.exportWorldInfo', (arg?: SourcesNode | vscode.Uri, options?: { out?: vscode.Uri }) => this.exportWorldInfo(arg, options));
    register('storyteller.openExampleCampaign', (options?: { parent?: vscode.Uri; then?: 'ask' | 'none' }) => this.openExampleCampaign(options));
  }

  /** The campaign named by root, else the usual choice (the active editor's, the only one, or a pick). */
  private async campaign(root?: string, arg?: SourcesNode | vscode.Uri): Promise<CampaignIndex | undefined> {
    await this.campaigns.ready();
    const index = root ? this.knowledge.get(path.resolve(root)) : await campaignTarget(this.campaigns, this.knowledge, arg);
    if (!index) void vscode.window.showInformationMessage('No campaign here: a campaign is a folder with a campaign.yaml (Storyteller: New Campaign).');
    return index;
  }

  /**
   * The campaign folder new files go to, as a campaign-relative path ('' for the campaign folder itself):
   * the one given, else the writer's choice in a folder dialog that starts at `suggested` when it exists. A
   * suggested folder not made yet is where the campaign folder itself puts them, and the title says so: the
   * dialog cannot open on a folder that is not there.
   */
  private async pickFolder(index: CampaignIndex, suggested: string, given?: string): Promise<string | undefined> {
    if (given !== undefined) return given;
    const root = vscode.Uri.file(index.campaign.root);
    const suggestedExists = suggested !== '' && (await vscode.workspace.fs.stat(vscode.Uri.joinPath(root, suggested)).then(() => true, () => false));
    const chosen = (
      await vscode.window.showOpenDialog({
        canSelectFiles: false,
        canSelectFolders: true,
        defaultUri: suggestedExists ? vscode.Uri.joinPath(root, suggested) : root,
        openLabel: 'Import Here',
        title: `Into which folder of ${index.campaign.title}?${suggested && !suggestedExists ? ` Here, the campaign folder, makes ${suggested}/ for them.` : ''}`,
      })
    )?.[0];
    if (!chosen) return undefined;
    const rel = path.relative(index.campaign.root, chosen.fsPath);
    if (rel.startsWith('..') || path.isAbsolute(rel)) {
      void vscode.window.showErrorMessage(`${chosen.fsPath} is outside ${index.campaign.title}; choose a folder inside ${index.campaign.root}.`);
      return undefined;
    }
    return rel.split(path.sep).join('/');
  }

  private async pickClass(placeHolder: string): Promise<KnowledgeClass | undefined> {
    const picked = await vscode.window.showQuickPick(
      KNOWLEDGE_CLASSES.map((c) => ({ label: CLASS_LABEL[c], description: CLASS_MEANING[c], value: c })),
      { placeHolder },
    );
    return picked?.value;
  }

  private async importFile(files: vscode.Uri[] | undefined, options: { campaignRoot?: string; class?: KnowledgeClass; folder?: string } = {}): Promise<FileImportResult | undefined> {
    if (!trustedFor('Import File into Campaign')) return undefined;
    const chosen =
      files ??
      (await vscode.window.showOpenDialog({
        canSelectMany: true,
        filters: { 'Markdown and text': ['md', 'markdown', 'txt'] },
        openLabel: 'Import into Campaign',
      }));
    if (!chosen?.length) return undefined;
    const index = await this.campaign(options.campaignRoot);
    if (!index) return undefined;
    const cls = options.class ?? (await this.pickClass(`Import ${chosen.length === 1 ? path.basename(chosen[0]!.fsPath) : `${chosen.length} files`} into ${index.campaign.title} as…`));
    if (!cls) return undefined;
    const folder = await this.pickFolder(index, '', options.folder);
    if (folder === undefined) return undefined;
    let result: FileImportResult;
    try {
      result = importFilesIntoCampaign(
        chosen.map((uri) => uri.fsPath),
        { campaignRoot: index.campaign.root, class: cls, sizeCapBytes: index.campaign.sizeCapBytes, ...(folder ? { folder } : {}) },
      );
    } catch (error) {
      if (!isRefusal(error)) throw error;
      void vscode.window.showErrorMessage(`Not imported, nothing was written: ${error.message}`);
      return undefined;
    }
    if (result.written.length > 0) {
      const names = result.written.map((w) => (w.renamed ? `${w.path} (from ${path.basename(w.file)}, whose name was taken)` : w.path));
      void vscode.window.showInformationMessage(`Imported into ${index.campaign.title} as ${CLASS_LABEL[cls]}: ${names.join(', ')}.`);
    }
    if (result.refused.length > 0) {
      const reasons = result.refused.map((r) => `${path.basename(r.file)}: ${r.reason}`);
      void vscode.window.showErrorMessage(`Not imported (nothing was written for ${result.refused.length === 1 ? 'it' : 'them'}): ${reasons.join('; ')}`);
    }
    return result;
  }

  /** Assembles the next turn's context through the campaign session's engine; nothing is generated or stored. */
  /**
   * The context an action would get, as a report. With `research`, the narrator model first searches the
   * campaign as it would before a turn (the only model call; cancellable); nothing is played or written.
   */
  private async previewContext(options: { campaignRoot?: string; action?: string; research?: boolean } = {}): Promise<vscode.TextDocument | undefined> {
    if (options.research && !trustedFor('Preview Context with Research')) return undefined;
    const index = await this.campaign(options.campaignRoot);
    if (!index) return undefined;
    const { research: mode, narratorModel } = this.settings.current;
    if (options.research && mode === 'off') {
      const open = 'Open Settings';
      void vscode.window.showInformationMessage('Research is off (storyteller.research): set it to auto or on to preview a researched context.', open).then((choice) => {
        if (choice === open) void vscode.commands.executeCommand('workbench.action.openSettings', 'storyteller.research');
      });
      return undefined;
    }
    const action =
      options.action ??
      (await vscode.window.showInputBox({
        title: `Preview Context${options.research ? ' with Research' : ''}: ${index.campaign.title}`,
        prompt: options.research
          ? `What the player does next. ${narratorModel} researches the campaign first, as before a turn; nothing is played. Empty previews "continue".`
          : 'What the player does next. Nothing is sent to a model; empty previews "continue".',
        placeHolder: 'ask Sister Mara about the crypt door',
      }));
    if (action === undefined) return undefined;
    await index.idle();
    const { play: store, engine } = index.session;
    const openPanel = this.play.list().find((p) => p.campaign.root === index.campaign.root);
    let adventure = (openPanel ? store.getAdventure(openPanel.adventureId) : undefined) ?? store.listAdventures(index.campaign.id)[0];
    if (!adventure) {
      // The same first adventure the play panel would start: a preview is always of a real adventure.
      adventure = store.createAdventure(campaignAdventure(index.campaign, `${index.campaign.title} — first adventure`));
      this.onDidCreateAdventure();
    }
    const text = action.trim();
    const playerAction = text ? ({ kind: 'do', text } as const) : ({ kind: 'continue', text: '' } as const);
    const adventureId = adventure.id;
    const context = options.research
      ? await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `${narratorModel} is researching ${index.campaign.title} for the preview…`, cancellable: true }, (_, token) => {
          const cancel = new AbortController();
          token.onCancellationRequested(() => cancel.abort());
          return engine.previewContext(adventureId, playerAction, undefined, { research: true, signal: cancel.signal });
        })
      : await engine.previewContext(adventureId, playerAction);
    const linkRoot = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const links = linkRoot ? { campaignRoot: index.campaign.root, linkRoot } : undefined;
    const markdown = renderContextMarkdown(context, { campaignTitle: index.campaign.title, adventureTitle: adventure.title, action: text }, (id) => playItemName(store, adventureId, id), links);
    walkthroughDone('previewed');
    return this.reports.show(`Context Preview — ${index.campaign.title}`, markdown);
  }

  private async exportCampaign(arg?: SourcesNode | vscode.Uri, options: { out?: vscode.Uri; embeddings?: boolean } = {}): Promise<(ExportSummary & { file: string }) | undefined> {
    const index = await this.campaign(undefined, arg);
    if (!index) return undefined;
    const { root, id, title } = index.campaign;
    const out = options.out ?? (await saveBeside(root, `Export ${title}`, `${id}${BUNDLE_EXTENSION}`, 'Campaign bundle', 'Export Campaign'));
    if (!out) return undefined;
    if (pathInside(root, out.fsPath) !== undefined) {
      void vscode.window.showErrorMessage(`${out.fsPath}: a bundle saved inside the campaign would be carried by its next export; choose a place outside ${root}.`);
      return undefined;
    }
    const embeddings =
      options.embeddings ??
      (
        await vscode.window.showQuickPick(
          [
            { label: 'Without embeddings', description: 'smaller; rebuilt after import when a model is set', value: false },
            { label: 'With embeddings', description: 'the vectors and their model metadata', value: true },
          ],
          { placeHolder: 'Include the embeddings?' },
        )
      )?.value;
    if (embeddings === undefined) return undefined;
    await index.idle();
    try {
      // The save dialog already asked before replacing an existing file.
      // Read from the session's index and play store as they are: an export never re-imports.
      const summary = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Exporting ${title}` }, async () =>
        exportCampaignBundle(index.session.exportSource, out.fsPath, { embeddings, force: true }),
      );
      const leftOut = summary.skipped.length > 0 ? `; left out (not campaign content, or not a regular file): ${summary.skipped.slice(0, 3).map((l) => l.path).join(', ')}${summary.skipped.length > 3 ? ` and ${summary.skipped.length - 3} more` : ''}` : '';
      void vscode.window.showInformationMessage(`Exported ${title} to ${summary.file}: ${plural(summary.files, 'file')} (${plural(summary.sources, 'source')}), ${describePlayData(summary.playRows)}${leftOut}.`);
      return summary;
    } catch (error) {
      if (!isRefusal(error)) throw error;
      void vscode.window.showErrorMessage(`Export failed: ${error.message}`);
      return undefined;
    }
  }

  private async importCampaign(options: { bundle?: vscode.Uri; target?: vscode.Uri; addToWorkspace?: boolean } = {}): Promise<ImportBundleSummary | undefined> {
    if (!trustedFor('Import Campaign')) return undefined;
    const bundle =
      options.bundle ??
      (await vscode.window.showOpenDialog({ filters: { 'Campaign bundle': ['json'] }, openLabel: 'Import Campaign', title: 'Choose a campaign bundle' }))?.[0];
    if (!bundle) return undefined;
    const target =
      options.target ??
      (
        await vscode.window.showOpenDialog({
          canSelectFiles: false,
          canSelectFolders: true,
          openLabel: 'Restore Here',
          title: 'Choose a new or empty folder for the campaign',
        })
      )?.[0];
    if (!target) return undefined;
    let summary: ImportBundleSummary;
    try {
      // A copy restored beside a campaign of the workspace with the same id gets its own id and title.
      const taken = new Set(this.knowledge.list().map((index) => index.campaign.id));
      const renameAs = ({ id, title }: { id: string; title: string }) => {
        if (!taken.has(id)) return undefined;
        let n = 1;
        while (taken.has(n === 1 ? `${id}-restored` : `${id}-restored-${n}`)) n++;
        return { id: n === 1 ? `${id}-restored` : `${id}-restored-${n}`, title: n === 1 ? `${title} (restored)` : `${title} (restored ${n})` };
      };
      summary = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Importing ${path.basename(bundle.fsPath)}` }, (progress) =>
        importCampaignBundle(bundle.fsPath, target.fsPath, {
          renameAs,
          onProgress: ({ step, done, total }) => {
            if (done % 100 === 0 || done === total) progress.report({ message: `${step} ${done} of ${total} files` });
          },
        }),
      );
    } catch (error) {
      if (!isRefusal(error)) throw error;
      void vscode.window.showErrorMessage(`Not imported, nothing was written: ${error.message}`);
      return undefined;
    }
    const left = summary.notRestored.length;
    if (left > 0) {
      // What was restored and what was not, with each reason: a bundle that held more than a campaign is worth reading.
      const report = bundleImportReport(summary, summary.target).join('\n');
      await this.reports.show(`Campaign Import — ${path.basename(bundle.fsPath)}`, `# Campaign import: ${path.basename(bundle.fsPath)}\n\n${fenced(report)}\n`);
    }
    const notRestored = left > 0 ? `; ${left} not restored, not campaign content (${summary.notRestored.slice(0, 3).map((l) => l.path).join(', ')}${left > 3 ? ', …' : ''}; see the report)` : '';
    const restored = `Restored "${summary.campaignTitle}" into ${summary.target}: ${plural(summary.files, 'file')}, ${summary.index.indexed} indexed, ${describePlayData(summary.playRows)}${notRestored}.`;
    const add = (): void => {
      vscode.workspace.updateWorkspaceFolders(vscode.workspace.workspaceFolders?.length ?? 0, 0, { uri: vscode.Uri.file(summary.target) });
    };
    if (options.addToWorkspace === true) add();
    else if (options.addToWorkspace === false) void vscode.window.showInformationMessage(restored);
    else void vscode.window.showInformationMessage(restored, 'Add to Workspace').then((choice) => choice && add());
    return summary;
  }

  private async importLorebook(clicked?: vscode.Uri, options: { campaignRoot?: string; class?: KnowledgeClass; folder?: string } = {}): Promise<LorebookImportResult | undefined> {
    if (!trustedFor('Import Lorebook')) return undefined;
    const file =
      clicked ??
      (
        await vscode.window.showOpenDialog({
          filters: { 'Lorebooks and character cards': ['json', 'png', 'charx', 'lorebook'] },
          openLabel: 'Import Lorebook',
        })
      )?.[0];
    if (!file) return undefined;
    const index = await this.campaign(options.campaignRoot);
    if (!index) return undefined;
    const cls = options.class ?? (await this.pickClass(`Import the entries of ${path.basename(file.fsPath)} as…`));
    if (!cls) return undefined;
    const folder = await this.pickFolder(index, DEFAULT_LORE_FOLDER, options.folder);
    if (folder === undefined) return undefined;
    let result: LorebookImportResult;
    try {
      result = importLorebookFile(file.fsPath, { campaignRoot: index.campaign.root, class: cls, ...(folder ? { folder } : {}) });
    } catch (error) {
      if (!isRefusal(error)) throw error;
      void vscode.window.showErrorMessage(`Not imported, nothing was written: ${error.message}`);
      return undefined;
    }
    const report = lorebookImportReport(result, vscode.workspace.asRelativePath(file)).join('\n');
    // Its lines are aligned in columns and quote imported text: shown as a block of plain text, never as markup.
    await this.reports.show(`Lorebook Import — ${path.basename(file.fsPath)}`, `# Lorebook import: ${path.basename(file.fsPath)}\n\n${fenced(report)}\n`);
    const dropped = result.notCarried.length;
    const unmapped = dropped === 0 ? 'every field was carried' : `${dropped} ${dropped === 1 ? 'entry has' : 'entries have'} fields nothing holds (see the report)`;
    void vscode.window.showInformationMessage(
      `Imported ${result.written.length} entries from ${result.formatName} into ${result.folder}/ as ${CLASS_LABEL[cls]}; ${unmapped}.`,
    );
    return result;
  }

  private async exportWorldInfo(arg?: SourcesNode | vscode.Uri, options: { out?: vscode.Uri } = {}): Promise<WorldInfoExportResult | undefined> {
    const index = await this.campaign(undefined, arg);
    if (!index) return undefined;
    const { root, id, title } = index.campaign;
    const out = options.out ?? (await saveBeside(root, `Export the canon of ${title} as SillyTavern World Info`, `${id}.worldinfo.json`, 'SillyTavern World Info', 'Export World Info'));
    if (!out) return undefined;
    await index.idle();
    try {
      // Read from the session's index as the writer's settings built it: an export never re-imports.
      const result = exportCampaignWorldInfo(index.session.store, out.fsPath, { force: true, settled: index.session.canonFacts().supersededCanon() });
      await this.reports.show(`World Info Export — ${path.basename(out.fsPath)}`, `# World Info export: ${path.basename(out.fsPath)}\n\n${fenced(worldInfoExportReport(result, result.file).join('\n'))}\n`);
      const left = result.skipped.length > 0 ? `; ${result.skipped.length} left out (see the report)` : '';
      void vscode.window.showInformationMessage(`Exported ${result.entries.length} canon entries of ${title} as World Info to ${result.file}${left}.`);
      return result;
    } catch (error) {
      if (!isRefusal(error)) throw error;
      void vscode.window.showErrorMessage(`Export failed: ${error.message}`);
      return undefined;
    }
  }

  /**
   * Copies the example campaign shipped with the extension to a folder the writer chooses (the extension's
   * own folder is read-only and replaced on update), then opens it.
   */
  private async openExampleCampaign(options: { parent?: vscode.Uri; then?: 'ask' | 'none' } = {}): Promise<vscode.Uri | undefined> {
    if (!trustedFor('Open Example Campaign')) return undefined;
    const parent = await chooseFolderOutsideCampaigns(this.campaigns, options.parent, {
      openLabel: 'Copy the Example Here',
      title: 'Where should the example campaign be copied? (outside any campaign)',
    });
    if (!parent) return undefined;
    const target = await freeFolder(parent, EXAMPLE_FOLDER);
    await vscode.workspace.fs.copy(vscode.Uri.joinPath(this.extensionUri, 'fixtures', EXAMPLE_FOLDER), target, { overwrite: false });
    offerCampaign(target, `The example campaign is in ${target.fsPath}.`, options.then ?? 'ask');
    return target;
  }
}
