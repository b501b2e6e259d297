import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import { loadCampaign } from '../../../src/knowledge/campaign/campaign';
import { FILE_DEBOUNCE_MS, type CampaignIndex } from '../../../src/views/campaignIndex';
import type { SourcesNode } from '../../../src/views/sourcesTree';
import { corpusPath } from '../../support/corpora';
import { capture, harnessConfig, settled, sleep, waitFor } from './harness';
import { campaignWorkspace, closeCampaignFolder, openCampaignFolder } from './workspace';

let api: StorytellerApi;
let index: CampaignIndex;
let root: string;

const file = (rel: string): string => path.join(root, ...rel.split('/'));
const sourceAt = (rel: string) => index.store?.getSourceByPath(rel);

async function write(rel: string, text: string): Promise<void> {
  fs.mkdirSync(path.dirname(file(rel)), { recursive: true });
  fs.writeFileSync(file(rel), text);
}

async function treeChildren(node?: SourcesNode): Promise<SourcesNode[]> {
  return (await api.sources.getChildren(node)) ?? [];
}

describe('campaign knowledge in the workbench', () => {
  before(async () => {
    ({ api, root, index } = await campaignWorkspace());
  });

  // broken.md spans two tests (refused, then reported): removed here too, should the second fail before it does.
  after(async () => {
    if (!fs.existsSync(file('broken.md'))) return;
    fs.rmSync(file('broken.md'));
    await waitFor(() => !sourceAt('broken.md') && vscode.languages.getDiagnostics(vscode.Uri.file(file('broken.md'))).length === 0, 20_000, 'broken.md to leave the index');
  });

  it('indexes the campaign in the background after activation, and says so in the status bar', async () => {
    assert.equal(api.knowledge.indexingStartedDuringActivation, false, 'no index run may begin inside activate()');
    const counts = index.store!.counts();
    assert.equal(counts.sources, 7, 'every markdown file of the example campaign is a source');
    assert.ok(counts.passages >= 7);
    assert.equal(index.state.kind, 'ready');
    assert.match(api.statusBar.item.text, new RegExp(`${counts.passages} passages`));
    await vscode.commands.executeCommand('workbench.view.extension.storyteller');
    const seen = await waitFor(async () => {
      const reply = await capture('sources-tree-indexed');
      return reply.workbenchText.includes('Westhaven Setting Bible') && reply;
    }, 20_000, 'the Sources tree to list the indexed sources');
    assert.match(seen.workbenchText, new RegExp(`${counts.passages} passages`), 'the status bar shows the passage count');
  });

  it('groups sources by class in the Sources tree and says where each class came from', async () => {
    const [campaign] = await treeChildren();
    assert.equal(campaign?.kind, 'campaign');
    const classes = await treeChildren(campaign);
    assert.deepEqual(classes.map((c) => c.kind === 'class' && c.knowledgeClass), ['canon', 'reference', 'inspiration']);
    const canon = await treeChildren(classes[0]);
    const mara = canon.find((n) => n.kind === 'source' && n.source.path === 'characters/mara.md');
    assert.ok(mara, 'characters/mara.md is canon by the folder rule');
    const item = api.sources.getTreeItem(mara);
    assert.match(String(item.tooltip), /from the folder rule for characters\/ in campaign\.yaml/);
    const aldric = canon.find((n) => n.kind === 'source' && n.source.path === 'characters/brother-aldric.md')!;
    assert.match(String(api.sources.getTreeItem(aldric).description), /hidden/);
    const rules = canon.find((n) => n.kind === 'source' && n.source.path === 'rules.md')!;
    assert.match(String(api.sources.getTreeItem(rules).description), /always included/);
  });

  it('shows the passages of a source and opens one with its line range selected', async () => {
    const source = sourceAt('canon.md')!;
    await vscode.commands.executeCommand('storyteller.revealPassages', { kind: 'source', root, source });
    const passages = api.passages.getChildren();
    assert.ok(passages.length >= 2);
    const watch = passages.find((p) => p.passage.text.includes('## The Town Watch'));
    assert.ok(watch, 'a passage holding the section "The Town Watch"');
    assert.match(String(api.passages.getTreeItem(watch).description), /\d+ tokens · lines \d+–\d+/);
    // Too short to stand alone, The Broken Circle runs on into Magic: listed by its own heading, under the one both share.
    const circle = passages.find((p) => p.passage.text.startsWith('## The Broken Circle\n'));
    assert.ok(circle, 'a passage opening with the section "The Broken Circle"');
    assert.equal(api.passages.getTreeItem(circle).label, 'The Broken Circle');
    assert.match(String(api.passages.getTreeItem(circle).tooltip), /^Westhaven\ncanon\.md:18-/);
    await vscode.commands.executeCommand('storyteller.openPassage', watch);
    const editor = vscode.window.activeTextEditor!;
    assert.equal(editor.document.uri.fsPath, file('canon.md'));
    assert.equal(editor.selection.start.line, watch.passage.startLine - 1);
    assert.equal(editor.selection.end.line, watch.passage.endLine - 1);
    assert.match(editor.document.getText(editor.selection), /Captain Ilse Varra/);
    await capture('passages-tree-and-selected-passage');
  });

  it('reindexes a new file once however quickly it is written, and follows renames and deletes', async () => {
    const changes: string[] = [];
    const subscription = api.knowledge.onDidChange((change) => {
      if (change.paths !== 'all') changes.push(...change.paths);
    });
    try {
      const writtenAt: number[] = [];
      for (let i = 1; i <= 5; i++) {
        await write('places/harbor.md', `---\ntitle: The Harbor\n---\n# The Harbor\n\nDraft ${i}: salt barges tie up below the wall.\n`);
        writtenAt.push(Date.now());
        await sleep(40);
      }
      // A loaded machine can stretch a 40 ms pause past the debounce window; each such gap may rightly start a reindex.
      const slowGaps = writtenAt.slice(1).filter((at, i) => at - writtenAt[i]! >= FILE_DEBOUNCE_MS).length;
      const harbor = await waitFor(() => sourceAt('places/harbor.md'), 15_000, 'places/harbor.md to be indexed');
      assert.equal(harbor.class, 'canon');
      await sleep(1000);
      // The workbench's watcher may deliver a burst in two batches on a loaded machine; without the
      // per-file debounce each of the five writes would be its own reindex.
      const reindexes = changes.filter((p) => p === 'places/harbor.md').length;
      assert.ok(reindexes >= 1 && reindexes <= 2 + slowGaps, `five quick writes (${slowGaps} gaps over the debounce window), ${reindexes} reindexes`);
      const [passage] = index.store!.listPassages(harbor.id);
      assert.match(passage!.text, /Draft 5/);

      fs.renameSync(file('places/harbor.md'), file('places/port.md'));
      await waitFor(() => sourceAt('places/port.md') && !sourceAt('places/harbor.md'), 15_000, 'the rename to be followed');

      await write('lore/a.md', '# A\n\nFirst lore note.\n');
      await write('lore/b.md', '# B\n\nSecond lore note.\n');
      await waitFor(() => sourceAt('lore/a.md') && sourceAt('lore/b.md'), 15_000, 'lore/ to be indexed');
      fs.rmSync(file('lore'), { recursive: true });
      fs.rmSync(file('places/port.md'));
      await waitFor(() => !sourceAt('lore/a.md') && !sourceAt('lore/b.md') && !sourceAt('places/port.md'), 15_000, 'deleted files and folders to leave the index');
    } finally {
      subscription.dispose();
    }
  });

  it('reindexes a document when the writer saves it in the editor', async () => {
    const document = await vscode.workspace.openTextDocument(file('reference.md'));
    const editor = await vscode.window.showTextDocument(document);
    await editor.edit((edit) => edit.insert(new vscode.Position(document.lineCount, 0), '\n## Saved from the editor\n\nA cellar of river-salt barrels.\n'));
    await document.save();
    await waitFor(
      () => index.store!.listPassages(sourceAt('reference.md')!.id).some((p) => p.text.includes('river-salt barrels')),
      15_000,
      'the saved heading to be indexed',
    );
  });

  it('disables and re-enables a source through its front matter, as an edit the writer can undo', async () => {
    const uri = vscode.Uri.file(file('places/old-abbey.md'));
    const before = fs.readFileSync(uri.fsPath, 'utf8');
    try {
      assert.equal(await vscode.commands.executeCommand('storyteller.disableSource', uri), true);
      assert.match(fs.readFileSync(uri.fsPath, 'utf8'), /^enabled: false$/m);
      await waitFor(() => sourceAt('places/old-abbey.md')?.enabled === false, 15_000, 'the source to be disabled in the index');
      const node = (await treeChildren((await treeChildren((await treeChildren())[0]))[0])).find(
        (n) => n.kind === 'source' && n.source.path === 'places/old-abbey.md',
      )!;
      assert.match(String(api.sources.getTreeItem(node).description), /disabled/);
      await capture('source-disabled');

      const document = await vscode.workspace.openTextDocument(uri);
      await vscode.window.showTextDocument(document);
      await vscode.commands.executeCommand('undo');
      assert.equal(document.getText(), before, 'undo restores the file exactly');
      await document.save();
      await waitFor(() => sourceAt('places/old-abbey.md')?.enabled === true, 15_000, 'the source to be enabled again');

      assert.equal(await vscode.commands.executeCommand('storyteller.disableSource', uri), true);
      assert.equal(await vscode.commands.executeCommand('storyteller.enableSource', uri), true);
      assert.match(fs.readFileSync(uri.fsPath, 'utf8'), /^enabled: true$/m);
    } finally {
      // Later suites locate lines of this file: leave it as it was found, and indexed so, even after a failure.
      fs.writeFileSync(uri.fsPath, before);
      await vscode.commands.executeCommand('storyteller.reindexSource', uri);
      await settled(index);
    }
  });

  it('sets a classification in the front matter, and the index and tree follow it', async () => {
    const uri = vscode.Uri.file(file('reference.md'));
    const before = fs.readFileSync(uri.fsPath, 'utf8');
    try {
      assert.equal(await vscode.commands.executeCommand('storyteller.setClassification', uri, 'inspiration'), true);
      assert.match(fs.readFileSync(uri.fsPath, 'utf8'), /^class: inspiration$/m);
      const source = await waitFor(() => sourceAt('reference.md')?.class === 'inspiration' && sourceAt('reference.md'), 15_000, 'the class change');
      assert.deepEqual(source.classOrigin, { kind: 'front-matter' });
      assert.equal(await vscode.commands.executeCommand('storyteller.setClassification', uri, 'reference'), true);
      await waitFor(() => sourceAt('reference.md')?.class === 'reference', 15_000, 'the class change back');
    } finally {
      // The Sources tree's later tests count reference.md as Reference: put back even after a failure.
      if (fs.readFileSync(uri.fsPath, 'utf8') !== before) {
        fs.writeFileSync(uri.fsPath, before);
        await waitFor(() => sourceAt('reference.md')?.class === 'reference', 20_000, 'reference.md back as Reference');
      }
    }
  });

  it('refuses to edit front matter it cannot edit safely, and says which file and why', async () => {
    await write('broken.md', '---\ntitle: Never closed\n# Broken\n\nText.\n');
    const uri = vscode.Uri.file(file('broken.md'));
    assert.equal(await vscode.commands.executeCommand('storyteller.setClassification', uri, 'canon'), false);
    assert.equal(fs.readFileSync(uri.fsPath, 'utf8'), '---\ntitle: Never closed\n# Broken\n\nText.\n', 'the file is untouched');
  });

  it('reports bad front matter in the Problems panel, on the file and line', async () => {
    const uri = vscode.Uri.file(file('broken.md'));
    const [diagnostic] = await waitFor(() => {
      const found = vscode.languages.getDiagnostics(uri);
      return found.length > 0 && found;
    }, 15_000, 'a diagnostic on broken.md');
    assert.equal(diagnostic!.severity, vscode.DiagnosticSeverity.Error);
    assert.equal(diagnostic!.source, 'Storyteller');
    assert.match(diagnostic!.message, /never closed/);
    await vscode.commands.executeCommand('workbench.actions.view.problems');
    const reply = await capture('problems-panel');
    assert.match(reply.workbenchText, /never closed/);
    fs.rmSync(uri.fsPath);
    await waitFor(() => vscode.languages.getDiagnostics(uri).length === 0, 15_000, 'the diagnostic to go with the file');
  });

  it('searches campaign knowledge from a live quick pick and opens the chosen passage', async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await vscode.commands.executeCommand('storyteller.search', 'night watch captain');
    const reply = await waitFor(async () => {
      const seen = await capture('search-quick-pick');
      return seen.workbenchText.includes('Canon · canon.md:9') && seen;
    }, 15_000, 'search results in the quick pick');
    assert.match(reply.workbenchText, /Captain Ilse Varra/, 'the result shows the text around the match');
    await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
    const editor = await waitFor(() => vscode.window.activeTextEditor, 20_000, 'the chosen passage to open');
    assert.equal(editor.document.uri.fsPath, file('canon.md'));
    assert.match(editor.document.getText(editor.selection), /Captain Ilse Varra/);
  });

  it('names the campaign of each search result when several campaigns are open', async function () {
    this.timeout(120_000);
    // A second campaign beside the example, added to the workspace as a writer would: the Torys setting bible.
    const torys = path.join(path.dirname(root), 'torys');
    fs.cpSync(corpusPath('torys'), torys, { recursive: true });
    fs.writeFileSync(path.join(torys, 'campaign.yaml'), 'id: torys\ntitle: Torys\ndefault_class: canon\n');
    assert.equal(vscode.workspace.workspaceFile?.fsPath, harnessConfig().workspaceFile, 'a workspace, so adding a folder reloads nothing');
    try {
      await openCampaignFolder(api, torys);
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      await vscode.commands.executeCommand('storyteller.search', 'night watch');
      const reply = await waitFor(async () => {
        const seen = await capture('search-two-campaigns');
        return /The Westhaven Campaign · Canon · canon\.md:\d+/.test(seen.workbenchText) && /Torys · Canon · /.test(seen.workbenchText) && seen;
      }, 15_000, 'results from both campaigns, each naming its campaign');
      const results = reply.workbenchText.match(/ · (?:Canon|Reference|Inspiration) · /g)?.length ?? 0;
      const named = reply.workbenchText.match(/(?:The Westhaven Campaign|Torys) · (?:Canon|Reference|Inspiration) · /g)?.length ?? 0;
      assert.equal(named, results, 'every result names its campaign');
      await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
      // Each campaign answers for the words it holds: Torys' harbour, the example's watch.
      await vscode.commands.executeCommand('storyteller.search', 'harbour watch');
      await waitFor(async () => {
        const seen = await capture('search-two-campaigns-harbour-watch');
        return /The Westhaven Campaign · Canon · /.test(seen.workbenchText) && /Torys · Canon · stories\/(stormstruck|warstorm)\.md/.test(seen.workbenchText) && seen;
      }, 15_000, "Torys' harbour beside the example's watch");
      await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
      // A campaign that answers nothing says so, and why, under its name.
      await vscode.commands.executeCommand('storyteller.search', 'Trapwater Bay harbourmaster');
      await waitFor(async () => {
        const seen = await capture('search-two-campaigns-one-silent');
        return /Nothing from The Westhaven Campaign/.test(seen.workbenchText) && /never mentions/.test(seen.workbenchText) && /Torys · Canon · /.test(seen.workbenchText) && seen;
      }, 15_000, 'the example campaign saying why it has nothing');
      await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
    } finally {
      await closeCampaignFolder(api, torys);
    }
  });

  it('rebuilds the knowledge index from the files with the same result', async () => {
    // Whatever earlier tests changed must be indexed first, or the rebuild would rightly count it and differ.
    await settled(index);
    const before = index.store!.counts();
    await vscode.commands.executeCommand('storyteller.rebuildIndex');
    assert.deepEqual(index.store!.counts(), before);
  });

  it('names a rejected setting and keeps working with its default', async () => {
    const config = vscode.workspace.getConfiguration('storyteller');
    await config.update('context.length', 10, vscode.ConfigurationTarget.Global);
    try {
      await waitFor(() => api.settings.current.problems.length > 0, 20_000, 'the settings to be re-read');
      assert.match(api.settings.current.problems[0]!, /storyteller\.context\.length must be at least 512 tokens/);
      assert.equal(api.settings.current.contextLength, 8192);
    } finally {
      await config.update('context.length', undefined, vscode.ConfigurationTarget.Global);
    }
    await waitFor(() => api.settings.current.problems.length === 0, 20_000, 'the settings to be valid again');
  });

  it('creates a new campaign where the writer chose, adds it to the workspace (Sources lists it), and refuses to nest one', async function () {
    this.timeout(120_000);
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'storyteller-new-'));
    const inPlace = await vscode.commands.executeCommand<vscode.Uri>('storyteller.newCampaign', { parent: vscode.Uri.file(empty), title: 'The Sunken Crown', then: 'none' });
    assert.equal(inPlace?.fsPath, empty, 'an empty folder chosen is the campaign itself, not a folder inside it');
    assert.equal(loadCampaign(empty).title, 'The Sunken Crown');
    assert.ok(fs.existsSync(path.join(empty, 'canon.md')));
    const again = await vscode.commands.executeCommand('storyteller.newCampaign', { parent: vscode.Uri.file(empty), title: 'The Sunken Crown', then: 'none' });
    assert.equal(again, undefined, 'a campaign is never created over or inside another');

    const busy = fs.mkdtempSync(path.join(os.tmpdir(), 'storyteller-new-'));
    fs.writeFileSync(path.join(busy, 'todo.txt'), 'not a campaign\n');
    const created = await vscode.commands.executeCommand<vscode.Uri>('storyteller.newCampaign', { parent: vscode.Uri.file(busy), title: 'Salt Roads', then: 'add' });
    assert.equal(created?.fsPath, path.join(busy, 'salt-roads'), 'a folder with files in it gets the campaign in a new folder');
    try {
      await waitFor(() => api.knowledge.get(created.fsPath)?.store, 30_000, 'the new campaign opened in the workspace');
      const titles = async () => ((await api.sources.getChildren()) ?? []).map((n) => api.sources.getTreeItem(n)).map((item) => String(typeof item.label === 'object' ? item.label.label : item.label));
      await waitFor(async () => (await titles()).includes('Salt Roads'), 20_000, 'the new campaign in Sources');
      await vscode.commands.executeCommand('storyteller.sources.focus');
      // A toast fades after a few seconds with the window focused, which a loaded machine's waits above can
      // outlast; the notification centre keeps the message as the writer would find it there.
      await vscode.commands.executeCommand('notifications.showList');
      await waitFor(async () => {
        const seen = await capture('new-campaign-in-sources', 500);
        return seen.workbenchText.includes('Salt Roads') && seen.workbenchText.includes('Added to the workspace');
      }, 20_000, 'the new campaign and the message on screen');
    } finally {
      const at = vscode.workspace.workspaceFolders!.findIndex((f) => f.uri.fsPath === created.fsPath);
      await vscode.commands.executeCommand('notifications.hideList');
      if (at >= 0) vscode.workspace.updateWorkspaceFolders(at, 1);
      await waitFor(() => !api.knowledge.get(created.fsPath), 30_000, 'the new campaign to close');
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    }
    const nested = await vscode.commands.executeCommand('storyteller.newCampaign', { parent: vscode.Uri.file(root), title: 'Nested' });
    assert.equal(nested, undefined);
    assert.equal(fs.existsSync(path.join(root, 'nested')), false);
  });
});
