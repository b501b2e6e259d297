import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import { loadCampaign } from '../../../src/knowledge/campaign/campaign';
import type { FileImportResult } from '../../../src/knowledge/interchange/fileImport';
import { worldInfoExportReport, type WorldInfoExportResult } from '../../../src/knowledge/interchange/lorebookExport';
import { lorebookImportReport, type LorebookImportResult } from '../../../src/knowledge/interchange/lorebookImport';
import { KnowledgeStore } from '../../../src/knowledge/indexing/store';
import type { KnowledgeClass } from '../../../src/knowledge/campaign/types';
import type { ExportSummary, ImportBundleSummary } from '../../../src/knowledge/interchange/bundle';
import type { CampaignIndex } from '../../../src/views/campaignIndex';
import { REPORT_SCHEME } from '../../../src/views/reportDocuments';
import type { SourcesNode } from '../../../src/views/sourcesTree';
import { corpusPath } from '../../support/corpora';
import type { ScreenshotReply } from '../protocol';
import { EXTENSION_ID, activatedExtension, capture, harnessConfig, settled, waitFor, within } from './harness';

/** The workbench text as read on screen: the editor renders spaces as no-break spaces. */
const screenText = (reply: ScreenshotReply): string => reply.workbenchText.replace(/\u00a0/g, ' ');

/** The rendered report as the markdown preview shows it (a webview frame). */
const reportText = (reply: ScreenshotReply): string => reply.frames.map((f) => f.text).join('\n');

/** Open tabs showing the report, in any editor group. */
const reportTabs = () => vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.label.includes('Storyteller Report'));

let api: StorytellerApi;
let index: CampaignIndex;
let root: string;
let scratch: string;

const sourceAt = (rel: string) => index.store?.getSourceByPath(rel);

/** The sources the Sources tree lists under one class of the campaign. */
async function treeSources(cls: KnowledgeClass): Promise<string[]> {
  const [campaign] = (await api.sources.getChildren()) ?? [];
  const classes = (await api.sources.getChildren(campaign)) ?? [];
  const group = classes.find((c) => c.kind === 'class' && c.knowledgeClass === cls);
  const sources = (await api.sources.getChildren(group)) ?? [];
  return sources.flatMap((n: SourcesNode) => (n.kind === 'source' ? [n.source.path] : []));
}

/** Every file of a campaign folder (POSIX paths) with its bytes, leaving out the derived data folder. */
function campaignFiles(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const rel of fs.readdirSync(dir, { recursive: true }) as string[]) {
    const posix = rel.split(path.sep).join('/');
    if (posix.startsWith('.storyteller') || fs.statSync(path.join(dir, rel)).isDirectory()) continue;
    files.set(posix, fs.readFileSync(path.join(dir, rel), 'utf8'));
  }
  return files;
}

/** What an index knows about each source: what a writer sees in the Sources tree. */
function describeSources(store: KnowledgeStore): string[] {
  return store.listSources().map((s) => `${s.path} ${s.class} ${s.enabled ? 'enabled' : 'disabled'} ${s.visibility} ${s.title}`).sort();
}

/**
 * The restored folder's index, read with the suite's own SQLite. Never the live campaign's databases:
 * a second SQLite library in one process drops the extension's file locks when it closes a connection.
 */
function restoredSources(dir: string): string[] {
  const store = KnowledgeStore.open(loadCampaign(dir));
  try {
    return describeSources(store);
  } finally {
    store.close();
  }
}

describe('campaign commands in the workbench', () => {
  before(async () => {
    api = (await activatedExtension()).exports as StorytellerApi;
    root = path.resolve(harnessConfig().workspace);
    await settled(api.knowledge, 'every campaign index');
    index = await waitFor(() => api.knowledge.get(root), 20_000, 'the campaign index');
    await settled(index);
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'storyteller-commands-'));
    // The empty secondary side bar only narrows the editors the screenshots are about.
    await vscode.commands.executeCommand('workbench.action.closeAuxiliaryBar');
  });
  after(() => fs.rmSync(scratch, { recursive: true, force: true }));

  describe('Import File into Campaign', () => {
    const imported: string[] = [];
    // Later suites count the example campaign's sources: leave it as it was found.
    after(async () => {
      // A dialog a failed test left open would import later, into the next test's campaign: closed first.
      await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
      // Scrolled back to the top, where later suites look for the first sources.
      await vscode.commands.executeCommand('storyteller.sources.focus');
      await vscode.commands.executeCommand('list.focusFirst');
      for (const rel of imported) fs.rmSync(path.join(root, rel), { force: true });
      await waitFor(() => imported.every((rel) => !sourceAt(rel)), 20_000, 'the imported files to leave the index');
      await settled(index);
    });

    it('copies the chosen files in with the chosen class, indexes them into the Sources tree, and refuses bad ones by name and reason', async () => {
      const put = (name: string, content: string | Buffer): vscode.Uri => {
        fs.writeFileSync(path.join(scratch, name), content);
        return vscode.Uri.file(path.join(scratch, name));
      };
      const harbour = put('harbour-songs.md', '# Harbour Songs\n\nThe bargemen sing of drowned bells when the fog comes in.\n');
      const clash = put('canon.md', '# Another canon\n\nA second setting bible, from another table.\n');
      const binary = put('map-scan.md', Buffer.from([0x23, 0x20, 0x4d, 0x61, 0x70, 0x00, 0x01]));
      const latin1 = put('old-notes.txt', Buffer.from('Caf\xe9 by the river gate.\n', 'latin1'));
      const canonBefore = fs.readFileSync(path.join(root, 'canon.md'), 'utf8');

      const result = await vscode.commands.executeCommand<FileImportResult>('storyteller.importFile', harbour, [harbour, clash, binary, latin1], { class: 'inspiration', folder: '' });
      imported.push(...result.written.map((w) => w.path));
      assert.deepEqual(result.written.map((w) => w.path), ['harbour-songs.md', 'canon-2.md']);
      assert.equal(fs.readFileSync(path.join(root, 'canon.md'), 'utf8'), canonBefore, 'the campaign’s own canon.md is untouched');
      assert.match(fs.readFileSync(path.join(root, 'harbour-songs.md'), 'utf8'), /^---\nclass: inspiration\n---\n# Harbour Songs/);
      assert.deepEqual(result.refused.map((r) => path.basename(r.file)), ['map-scan.md', 'old-notes.txt']);
      assert.equal(fs.existsSync(path.join(root, 'map-scan.md')) || fs.existsSync(path.join(root, 'old-notes.txt')), false, 'nothing is written for a refused file');

      await waitFor(() => sourceAt('harbour-songs.md')?.class === 'inspiration' && sourceAt('canon-2.md')?.class === 'inspiration', 20_000, 'the imported files to be indexed');
      const inspiration = await waitFor(async () => {
        const listed = await treeSources('inspiration');
        return listed.includes('harbour-songs.md') && listed.includes('canon-2.md') && listed;
      }, 20_000, 'the Sources tree to list the imports under Inspiration');
      assert.ok(inspiration.includes('inspiration.md'));
      assert.ok(!(await treeSources('canon')).includes('canon-2.md'));

      // Information messages fade after a while; the writer reads them as the import finishes.
      const messages = await capture('import-file-messages', 200);
      assert.match(messages.workbenchText, /Imported into The Westhaven Campaign as Inspiration: harbour-songs\.md, canon-2\.md \(from canon\.md, whose name was taken\)/);
      assert.match(messages.workbenchText, /map-scan\.md: file contains a NUL byte \(line 1\): it looks binary, not text/);
      assert.match(messages.workbenchText, /old-notes\.txt: file is not valid UTF-8/);

      await vscode.window.showTextDocument(vscode.Uri.file(path.join(root, 'harbour-songs.md')));
      const reply = await waitFor(async () => {
        // The Inspiration group is below the fold of the small Sources view: scroll to its end.
        await vscode.commands.executeCommand('storyteller.sources.focus');
        await vscode.commands.executeCommand('list.focusLast');
        const seen = await capture('import-file-into-campaign');
        return /Harbour Songs\s*harbour-songs\.md/.test(seen.workbenchText) && seen;
      }, 15_000, 'the Sources tree to show the imported file');
      assert.match(screenText(reply), /class: inspiration/, 'the copy opens with its class in the front matter');
    });

    it('asks which folder of the campaign the copies go to, in a folder dialog that starts at the campaign', async function () {
      // Typing a path key by key and a click, each with the driver's longer budget, on a loaded machine.
      this.timeout(180_000);
      const notes = path.join(scratch, 'tide-notes.md');
      // Named before the dialog opens: should the test fail half-way, the after hook still removes the copy.
      imported.push('places/tide-notes.md');
      fs.writeFileSync(notes, '# Tide notes\n\nLow water uncovers the abbey steps twice a day.\n');
      const importing = vscode.commands.executeCommand<FileImportResult>('storyteller.importFile', vscode.Uri.file(notes), [vscode.Uri.file(notes)], { class: 'reference' });
      const input = '.quick-input-widget input';
      const dialog = await waitFor(async () => {
        const seen = await capture('import-file-folder-dialog', 300, [], [input]);
        return seen.workbenchText.includes('Into which folder of The Westhaven Campaign?') && seen;
      }, 15_000, 'the folder dialog');
      assert.equal(dialog.located[input]?.value?.replace(/\/$/, ''), root, 'it starts at the campaign folder');
      // Typed and entered, the dialog either takes the folder at once or moves into it, where its button imports.
      const importHere = '.quick-input-widget:not(.hidden) .monaco-button:has-text("Import Here")';
      const entered = await capture('import-file-folder-entered', 300, [
        { action: 'fill', selector: input, text: path.join(root, 'places') },
        { action: 'press', selector: input, key: 'Enter' },
      ], [importHere], 60_000);
      const button = entered.located[importHere];
      if (button && button.bottom > button.top) await capture('import-file-folder-chosen', 300, [{ action: 'click', selector: importHere }], [], 60_000);
      const result = await within(importing, 30_000, 'the import to end once its folder was chosen');
      imported.push(...(result?.written.map((w) => w.path) ?? []));
      assert.deepEqual(result?.written.map((w) => w.path), ['places/tide-notes.md']);
      assert.match(fs.readFileSync(path.join(root, 'places', 'tide-notes.md'), 'utf8'), /^---\nclass: reference\n---\n# Tide notes/);
    });
  });

  describe('Preview Context', () => {
    it('shows what the next turn would send, section by section with tokens, budgets and passages, as a read-only document, with no model', async () => {
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      const document = await vscode.commands.executeCommand<vscode.TextDocument>('storyteller.previewContext', { action: 'ask Sister Mara about the crypt door' });
      assert.equal(document.uri.scheme, REPORT_SCHEME);
      assert.equal(document.languageId, 'markdown');
      const text = document.getText();
      assert.match(text, /^# Context preview: ask Sister Mara about the crypt door$/m);
      assert.match(text, /^## \d+\. Narrator — \d+ tokens \(required\)$/m);
      assert.match(text, /^## \d+\. Canon sources \(untrusted data\) — \d+ tokens \(budget \d+\)$/m);
      assert.match(text, /^Canon sources +[█▒░]{24} +\d+ \/ \d+/m, 'a budget bar for canon among the bars at the top');
      const mara = /^- \*\*\[Sister Mara\]\(<(\/[^>#]*)#L(\d+)>\)\*\* — canon · characters\/mara\.md · (?:name 'Sister Mara' mentioned|mentions|matched)/m.exec(text);
      assert.ok(mara, 'a used passage, by its title, which is the link to it');
      // The preview reads a link starting with "/" from the first workspace folder: it leads to the passage's file.
      const linked = vscode.Uri.joinPath(vscode.workspace.workspaceFolders![0]!.uri, decodeURIComponent(mara[1]!));
      assert.equal(fs.realpathSync(linked.fsPath), fs.realpathSync(path.join(root, 'characters', 'mara.md')));
      assert.ok(Number(mara[2]) >= 1);
      assert.match(text, /Resurrection is impossible/, 'the always-include canon as sent');
      assert.match(text, /## Retrieval decisions \(\d+ candidates/);
      assert.doesNotMatch(text, /\\n/, 'no literal \\n in the report');

      const rendered = await waitFor(async () => {
        const seen = await capture('preview-context');
        return /1\. Narrator — \d+ tokens \(required\)/.test(reportText(seen)) && seen;
      }, 15_000, 'the preview rendered in the report tab');
      assert.doesNotMatch(reportText(rendered), /^## 1\. Narrator/m, 'rendered headings, not raw markdown');
      assert.match(reportText(rendered), /Written for this turn:\s+Canon sources +\d+ \/ \d+ tokens/, 'with the summary of every section');
      assert.equal(reportTabs().length, 1);

      const again = await vscode.commands.executeCommand<vscode.TextDocument>('storyteller.previewContext', { action: 'ask Brother Aldric about the bells' });
      assert.equal(again.uri.toString(), document.uri.toString(), 'the same report document');
      await waitFor(async () => reportText(await capture('preview-context-again')).includes('ask Brother Aldric about the bells'), 15_000, 'the second preview in the same tab');
      assert.equal(reportTabs().length, 1, 'a second report reuses the tab');
      assert.equal(api.reports.current?.title, 'Context Preview — The Westhaven Campaign');

      const adventures = api.adventures.getChildren();
      assert.equal(adventures.length, 1, 'the preview is for the campaign’s current (here: first) adventure');
      assert.deepEqual(api.adventures.getChildren(adventures[0]), [], 'a preview plays no turn');
      // Typing into the report's source changes nothing: it is read-only.
      const before = again.getText();
      await vscode.window.showTextDocument(again);
      await vscode.commands.executeCommand('type', { text: 'x' });
      assert.equal(again.getText(), before);
    });
  });

  describe('Export and Import Campaign', () => {
    let bundle: string;

    it('exports the campaign to a bundle that restores into a new folder with the same files and sources', async () => {
      bundle = path.join(scratch, 'westhaven.storyteller.json');
      const exported = await vscode.commands.executeCommand<ExportSummary & { file: string }>('storyteller.exportCampaign', undefined, {
        out: vscode.Uri.file(bundle),
        embeddings: false,
      });
      assert.equal(exported.file, bundle);
      assert.equal(exported.sources, index.store!.counts().sources);
      // The message counts files, sources and play data in words, never the index's table names.
      const message = await waitFor(async () => {
        const seen = await capture('export-campaign-message', 300);
        return /Exported The Westhaven Campaign to .*: \d+ files \(\d+ sources\), /.test(seen.workbenchText) && seen.workbenchText;
      }, 20_000, 'the export message');
      assert.doesNotMatch(message, /prompt_snapshots|turn_passages|adventures \d|turns \d/, 'no table names');

      const target = path.join(scratch, 'restored');
      const restored = await vscode.commands.executeCommand<ImportBundleSummary>('storyteller.importCampaign', {
        bundle: vscode.Uri.file(bundle),
        target: vscode.Uri.file(target),
        addToWorkspace: false,
      });
      assert.equal(restored.target, target);
      const [copied, original] = [campaignFiles(target), campaignFiles(root)];
      // Restored beside the original, the copy gets its own id and title so the two are told apart.
      assert.equal(restored.campaignId, 'westhaven-restored');
      assert.equal(restored.campaignTitle, 'The Westhaven Campaign (restored)');
      assert.equal(loadCampaign(target).title, 'The Westhaven Campaign (restored)');
      assert.equal(copied.get('campaign.yaml'), original.get('campaign.yaml')!.replace('id: westhaven', 'id: westhaven-restored').replace('title: The Westhaven Campaign', 'title: The Westhaven Campaign (restored)'), 'only id and title change in campaign.yaml');
      copied.delete('campaign.yaml');
      original.delete('campaign.yaml');
      assert.deepEqual(copied, original, 'every other file comes back byte for byte');
      assert.deepEqual(restoredSources(target), describeSources(index.store!), 'and indexes into the same sources');
      const reply = await waitFor(async () => {
        const seen = await capture('import-campaign-restored');
        return seen.workbenchText.includes('Restored "The Westhaven Campaign (restored)" into') && seen;
      }, 20_000, 'the restore message');
      assert.equal(restored.index.indexed, exported.sources);
      assert.match(reply.workbenchText, new RegExp(`\\d+ files, ${exported.sources} indexed`));

      // Opened beside the original, the two are told apart in the Sources view.
      assert.ok(vscode.workspace.updateWorkspaceFolders(vscode.workspace.workspaceFolders!.length, 0, { uri: vscode.Uri.file(target) }));
      try {
        await waitFor(() => api.knowledge.get(target)?.store, 30_000, 'the restored campaign opened beside the original');
        const titles = async () => ((await api.sources.getChildren()) ?? []).map((n) => api.sources.getTreeItem(n)).map((item) => String(typeof item.label === 'object' ? item.label.label : item.label));
        await waitFor(async () => (await titles()).length === 2, 20_000, 'both campaigns in the Sources view');
        assert.deepEqual((await titles()).sort(), ['The Westhaven Campaign', 'The Westhaven Campaign (restored)']);
        await vscode.commands.executeCommand('storyteller.sources.focus');
        await waitFor(async () => (await capture('restored-beside-original', 500)).workbenchText.includes('The Westhaven Campaign (restored)'), 20_000, 'both campaigns on screen');
      } finally {
        const at = vscode.workspace.workspaceFolders!.findIndex((f) => f.uri.fsPath === target);
        if (at >= 0) vscode.workspace.updateWorkspaceFolders(at, 1);
        await waitFor(() => !api.knowledge.get(target), 30_000, 'the restored campaign to close');
      }
    });

    it('refuses a bad bundle with its reason and writes nothing', async () => {
      const truncated = path.join(scratch, 'truncated.storyteller.json');
      const text = fs.readFileSync(bundle, 'utf8');
      fs.writeFileSync(truncated, text.slice(0, Math.floor(text.length / 2)));
      const escaping = path.join(scratch, 'escaping.storyteller.json');
      fs.writeFileSync(escaping, text.replace('"path": "canon.md"', '"path": "../canon.md"'));
      const before = fs.readdirSync(scratch).sort();
      for (const bad of [truncated, escaping]) {
        const target = path.join(scratch, `from-${path.basename(bad, '.storyteller.json')}`);
        const result = await vscode.commands.executeCommand('storyteller.importCampaign', { bundle: vscode.Uri.file(bad), target: vscode.Uri.file(target), addToWorkspace: false });
        assert.equal(result, undefined);
        assert.equal(fs.existsSync(target), false, `${path.basename(bad)} writes no folder`);
      }
      assert.deepEqual(fs.readdirSync(scratch).sort(), before, 'and nothing beside it either');
      const reply = await waitFor(async () => {
        const seen = await capture('import-campaign-refused');
        return seen.workbenchText.includes('not valid JSON') && seen.workbenchText.includes('"../canon.md"') && seen;
      }, 20_000, 'both refusals on screen');
      assert.match(reply.workbenchText, /Not imported, nothing was written: .*truncated\.storyteller\.json: not valid JSON, the bundle is truncated or corrupt/);
    });
  });

  describe('Import Lorebook and Export Canon as World Info', () => {
    after(async () => {
      fs.rmSync(path.join(root, 'worlds'), { recursive: true, force: true });
      await waitFor(() => !index.store?.listSources().some((s) => s.path.startsWith('worlds/')), 20_000, 'the lore files to leave the index');
      await settled(index);
    });

    it('turns a SillyTavern World Info file into sources of the chosen class and shows where every field went', async () => {
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      const worldInfo = vscode.Uri.file(corpusPath('lorebooks', 'Eldoria.worldinfo.st-current.json'));
      const result = await vscode.commands.executeCommand<LorebookImportResult>('storyteller.importLorebook', worldInfo, { class: 'reference', folder: 'worlds/eldoria' });
      assert.equal(result.written.length, 4);
      const paths = result.written.map((w) => w.path);
      await waitFor(() => paths.every((p) => sourceAt(p)?.class === 'reference'), 20_000, 'the four entries to be indexed as reference');
      const listed = await treeSources('reference');
      assert.ok(paths.every((p) => listed.includes(p)), 'the entries are listed under Reference');

      const report = api.reports.current?.document;
      assert.equal(report?.uri.scheme, REPORT_SCHEME, 'the import report is open');
      assert.ok(report);
      const printed = lorebookImportReport(result, vscode.workspace.asRelativePath(worldInfo)).join('\n');
      assert.ok(report.getText().includes(printed), 'the same report the CLI prints');
      assert.match(report.getText(), /^ {2}position +4 +sillytavern\.entry\.position$/m);
      for (const field of result.fields) assert.ok(report.getText().includes(field.field), `the report names ${field.field}`);

      await vscode.commands.executeCommand('workbench.view.extension.storyteller');
      await waitFor(async () => {
        const seen = await capture('import-lorebook');
        return seen.workbenchText.includes('Imported 4 entries from SillyTavern World Info into worlds/eldoria/ as Reference; every field was carried') && /Where each field went/.test(reportText(seen));
      }, 20_000, 'the summary message and the report');
      assert.ok(reportTabs().length <= 1, 'in the one report tab');
    });

    it('asks for a folder starting at the campaign while lore/ is not there yet, and says the campaign folder makes it', async function () {
      this.timeout(120_000);
      assert.equal(fs.existsSync(path.join(root, 'lore')), false);
      const worldInfo = vscode.Uri.file(corpusPath('lorebooks', 'Eldoria.worldinfo.st-current.json'));
      const importing = vscode.commands.executeCommand<LorebookImportResult | undefined>('storyteller.importLorebook', worldInfo, { class: 'reference' });
      const input = '.quick-input-widget input';
      try {
        const dialog = await waitFor(async () => {
          const seen = await capture('import-lorebook-folder-dialog', 300, [], [input]);
          return seen.workbenchText.includes('Into which folder of The Westhaven Campaign? Here, the campaign folder, makes lore/ for them.') && seen;
        }, 20_000, 'the titled folder dialog');
        assert.equal(dialog.located[input]?.value?.replace(/\/$/, ''), root, 'it opens on the campaign folder, not on a lore/ that is not there');
      } finally {
        // Closed whatever happened above, so no dialog is left to import into the campaign later.
        await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
      }
      assert.equal(await within(importing, 20_000, 'the import to end once its dialog closed'), undefined);
      assert.equal(fs.existsSync(path.join(root, 'lore')), false, 'closing the dialog writes nothing');
    });

    it('sends an imported entry with {{user}} and {{char}} as the persona and the narrator', async () => {
      // Imported by the test before; again here when this one runs alone.
      if (!index.store?.listSources().some((s) => s.path.startsWith('worlds/eldoria/'))) {
        await vscode.commands.executeCommand('storyteller.importLorebook', vscode.Uri.file(corpusPath('lorebooks', 'Eldoria.worldinfo.st-current.json')), { class: 'reference', folder: 'worlds/eldoria' });
      }
      const entry = await waitFor(
        () => index.store?.listSources().find((s) => s.path.startsWith('worlds/eldoria/') && index.store!.getSourceContent(s.id)?.includes('"What is Eldoria?"')),
        20_000,
        'the Eldoria entry indexed',
      );
      assert.match(fs.readFileSync(path.join(root, ...entry.path.split('/')), 'utf8'), /\{\{user\}\}: "What is Eldoria\?"/, 'the file keeps what the lorebook said');
      await vscode.commands.executeCommand('storyteller.previewContext', { campaignRoot: root, action: 'ask about the forest of Eldoria' });
      const seen = await waitFor(async () => {
        const reply = await capture('lorebook-entry-in-context', 500, [{ action: 'scrollIntoView', selector: 'pre:has-text("What is Eldoria?")' }]);
        return reportText(reply).includes('"What is Eldoria?"') && reply;
      }, 15_000, 'the Eldoria entry in the previewed context');
      const sent = reportText(seen);
      // Passages are indexed as plain text: the entry's *emphasis* marks are not part of it.
      assert.match(sent, /the player character: "What is Eldoria\?"\s+the narrator: Seraphina turns/, '{{user}} is the player (this adventure has no persona name), {{char}} the narrator');
      assert.doesNotMatch(sent, /\{\{(user|char)\}\}: /i, 'no placeholder reaches the narrator');
    });

    it('writes the campaign’s canon as a SillyTavern World Info file', async () => {
      const out = path.join(scratch, 'westhaven.worldinfo.json');
      const result = await vscode.commands.executeCommand<WorldInfoExportResult>('storyteller.exportWorldInfo', undefined, { out: vscode.Uri.file(out) });
      const canon = index.store!.listSources().filter((s) => s.class === 'canon');
      assert.equal(result.entries.length + result.skipped.length, canon.length);
      const written = JSON.parse(fs.readFileSync(out, 'utf8')) as { entries: Record<string, { comment: string; content: string }> };
      const mara = Object.values(written.entries).find((e) => e.comment === 'Sister Mara');
      assert.ok(mara, 'Sister Mara is an entry');
      assert.match(mara.content, /ledger/);
      const eldoria = Object.values(written.entries).find((e) => e.comment === 'eldoria');
      assert.equal(eldoria, undefined, 'the lorebook was imported as reference, so it stays out of a canon export');
      const report = api.reports.current?.document;
      assert.equal(report?.uri.scheme, REPORT_SCHEME, 'the export report is in the report tab');
      assert.ok(report.getText().includes(worldInfoExportReport(result, result.file).join('\n')), 'the export report, as the CLI prints it');
    });
  });

  describe('exports only read', () => {
    const large = 'tide-tables.md';
    const config = () => vscode.workspace.getConfiguration('storyteller');
    after(async () => {
      fs.rmSync(path.join(root, large), { force: true });
      await config().update('index.sizeCapBytes', undefined, vscode.ConfigurationTarget.Global);
      await waitFor(() => !sourceAt(large), 20_000, 'the large file to leave the index');
      await settled(index);
    });

    it('keeps the writer’s size cap: after both exports a 1.5 MB file keeps every passage', async () => {
      // The writer allows files up to 2 MB; campaign.yaml says nothing, so the setting decides.
      await config().update('index.sizeCapBytes', 2 * 1024 * 1024, vscode.ConfigurationTarget.Global);
      const text = Array.from({ length: 25_000 }, (_, i) => `## Day ${i}\n\nHigh water at the abbey steps, copied by hand.\n`).join('\n');
      assert.ok(text.length > 1.4 * 1024 * 1024 && text.length < 2 * 1024 * 1024);
      fs.writeFileSync(path.join(root, large), text);
      const source = await waitFor(() => {
        const found = sourceAt(large);
        return found?.lexicalState === 'ready' && found;
      }, 120_000, 'the large file indexed');
      await settled(index);
      const passages = index.store!.listPassages(source.id).length;
      assert.ok(passages > 100, `the large file has its passages (${passages})`);

      await vscode.commands.executeCommand('storyteller.exportCampaign', undefined, { out: vscode.Uri.file(path.join(scratch, 'large.storyteller.json')), embeddings: false });
      await vscode.commands.executeCommand('storyteller.exportWorldInfo', undefined, { out: vscode.Uri.file(path.join(scratch, 'large.worldinfo.json')) });
      await settled(index);
      const after = sourceAt(large)!;
      assert.equal(after.lexicalState, 'ready', 'not turned "oversize" by an export under other settings');
      assert.equal(index.store!.listPassages(after.id).length, passages);
    });
  });

  describe('getting started', () => {
    it('copies the example campaign shipped in the extension to a chosen folder, without its index', async () => {
      const extensionPath = vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath;
      const shipped = path.join(extensionPath, 'fixtures', 'example-campaign');
      const first = await vscode.commands.executeCommand<vscode.Uri>('storyteller.openExampleCampaign', { parent: vscode.Uri.file(scratch), then: 'none' });
      const second = await vscode.commands.executeCommand<vscode.Uri>('storyteller.openExampleCampaign', { parent: vscode.Uri.file(scratch), then: 'none' });
      assert.equal(first.fsPath, path.join(scratch, 'example-campaign'));
      assert.equal(second.fsPath, path.join(scratch, 'example-campaign-2'), 'a second copy never lands on the first');
      assert.equal(loadCampaign(first.fsPath).title, 'The Westhaven Campaign');
      assert.deepEqual(campaignFiles(first.fsPath), campaignFiles(shipped));
      assert.equal(fs.existsSync(path.join(shipped, '.storyteller')), false, 'the extension ships no index');
      assert.ok(campaignFiles(first.fsPath).has('characters/mara.md'));
    });

    it('offers a walkthrough whose steps open the example, index, search, play and preview context', async () => {
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      await vscode.commands.executeCommand('workbench.action.openWalkthrough', `${EXTENSION_ID}#gettingStarted`, false);
      const reply = await waitFor(async () => {
        const seen = await capture('walkthrough', 1000);
        return seen.workbenchText.includes('Get Started with Adventure Storyteller') && seen;
      }, 15_000, 'the walkthrough page');
      for (const step of ['Open the example campaign', 'Index it', 'Search its knowledge', 'Open the play panel', 'Preview the context']) {
        assert.ok(reply.workbenchText.includes(step), `the walkthrough shows the step "${step}"`);
      }
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    });
  });
});
