import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import type { CampaignIndex } from '../../../src/views/campaignIndex';
import type { CodexNode } from '../../../src/views/codexTree';
import { TRANSCRIPT_SCHEME } from '../../../src/views/transcripts';
import { capture, harnessConfig, settled, waitFor, within } from './harness';
import { campaignWorkspace, inPlayDb } from './workspace';

let api: StorytellerApi;
let index: CampaignIndex;
let root: string;

const NOTES = 'places/harbour-notes.md';
const CREATED = 'places/harbour-master.md';
const NOTES_TEXT = '---\ntitle: Harbour Notes\n---\n# Harbour notes\n\nThe ferry waits below [[The Old Abbey#The Crypt]] for [[Sister Mara]].\nAsk [[Harbour Master]] about the tides.\n';
const uri = (rel: string) => vscode.Uri.file(path.join(root, ...rel.split('/')));
const read = (rel: string) => fs.readFileSync(path.join(root, ...rel.split('/')), 'utf8');
const linkProblems = (rel: string) => vscode.languages.getDiagnostics(uri(rel)).filter((d) => d.source === 'Storyteller links');
const hoverText = (hovers: vscode.Hover[]) => hovers.flatMap((h) => h.contents.map((c) => (typeof c === 'string' ? c : 'value' in c ? c.value : ''))).join('\n');
/** `Mara` in "…the last abbot died. Mara holds the only key." (places/old-abbey.md, line 14). */
const maraInAbbey = () => new vscode.Position(13, read('places/old-abbey.md').split('\n')[13]!.search(/Mar+a /) + 1);
const inIndex = (rel: string) => waitFor(() => api.language.modelOf(root)?.source(rel), 20_000, `${rel} in the entity model`);
const gone = (rel: string) => waitFor(() => !api.language.modelOf(root)?.source(rel), 20_000, `${rel} to leave the entity model`);

/** Saves what an edit left unsaved in the background (workspace.saveAll skipped those buffers here). */
async function saveEdited(): Promise<void> {
  for (const doc of vscode.workspace.textDocuments) {
    if (doc.uri.scheme === 'file' && doc.isDirty) assert.ok(await within(doc.save(), 20_000, `${doc.uri.fsPath} to be saved`), `${doc.uri.fsPath} saved`);
  }
}

/**
 * Puts each file's text back, in its open buffer and on disk, after a test that failed half-way through an
 * edit: a rename box or refactor preview left open is closed first, so nothing applies the edit later. It never
 * throws, so the failure that brought it here stays the test's; a buffer it cannot save is put back on disk.
 */
async function restoreTexts(texts: Map<string, string>): Promise<void> {
  for (const command of ['cancelRenameInput', 'refactorPreview.discard']) await vscode.commands.executeCommand(command).then(undefined, () => undefined);
  for (const [rel, text] of texts) {
    try {
      const doc = await vscode.workspace.openTextDocument(uri(rel));
      if (doc.getText() !== text) {
        const edit = new vscode.WorkspaceEdit();
        edit.replace(doc.uri, new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), text);
        await within(vscode.workspace.applyEdit(edit), 20_000, `${rel} restored in its buffer`);
      }
      if (doc.isDirty) await within(doc.save(), 20_000, `${rel} to be saved`);
    } catch (error) {
      console.warn(`restoring ${rel}: ${String(error)}; writing it on disk`);
    }
    if (read(rel) !== text) fs.writeFileSync(path.join(root, ...rel.split('/')), text);
  }
}

describe('the campaign as a language', () => {
  let adventure: { adventure: string; turn: string };

  before(async () => {
    ({ api, root, index } = await campaignWorkspace());
    fs.writeFileSync(path.join(root, ...NOTES.split('/')), NOTES_TEXT);
    await inIndex(NOTES);
    const abbey = index.store!.getSourceByPath('places/old-abbey.md')!;
    const passage = index.store!.listPassages(abbey.id)[0]!;
    // A short adventure that mentions Mara, whose second turn retrieved the Abbey's first passage.
    adventure = JSON.parse(
      inPlayDb(
        index.campaign.playPath,
        `const a = store.createAdventure({ campaignId: process.env.CAMPAIGN, title: 'Night at the Abbey', persona: { name: 'Kell' } });
         const done = (id, narration) => store.finishTurn(id, { status: 'complete', narration, error: null, stateDelta: null, stateAfter: {}, refusals: [], promptEvalCount: null, evalCount: null });
         const t1 = store.createTurn({ adventureId: a.id, parentId: null, action: { kind: 'do', text: 'I knock on the abbey gate' }, model: null, stateAfter: {} });
         done(t1.id, 'Sister Mara opens the gate a hand’s width.');
         const t2 = store.createTurn({ adventureId: a.id, parentId: t1.id, action: { kind: 'say', text: 'Is the crypt locked?' }, model: null, stateAfter: {} });
         done(t2.id, 'Mara touches the key at her belt.');
         store.db.prepare('INSERT INTO turn_passages (turn_id, passage_id, source_id, selected, reason) VALUES (?, ?, ?, 1, ?)').run(t2.id, process.env.PASSAGE, process.env.SOURCE, 'selected');
         process.stdout.write(JSON.stringify({ adventure: a.id, turn: t2.id }));`,
        { CAMPAIGN: index.campaign.id, PASSAGE: passage.id, SOURCE: abbey.id },
      ),
    ) as { adventure: string; turn: string };
  });

  // Later suites count the example campaign's sources and adventures: leave them as they were found.
  after(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    for (const rel of [NOTES, CREATED]) fs.rmSync(path.join(root, ...rel.split('/')), { force: true });
    inPlayDb(index.campaign.playPath, 'store.deleteAdventure(process.env.ADVENTURE);', { ADVENTURE: adventure.adventure });
    await gone(NOTES);
    await gone(CREATED);
    await settled(index);
  });

  it('goes to an entity\'s definition from a name and from a [[link]] to its heading, and peeks it', async () => {
    const [fromName] = await vscode.commands.executeCommand<vscode.LocationLink[]>('vscode.executeDefinitionProvider', uri('places/old-abbey.md'), maraInAbbey());
    assert.equal(fromName?.targetUri.fsPath, uri('characters/mara.md').fsPath);
    assert.equal(fromName?.targetRange.start.line, 5, 'the heading "# Sister Mara"');

    const crypt = new vscode.Position(5, NOTES_TEXT.split('\n')[5]!.indexOf('Crypt'));
    const [fromLink] = await vscode.commands.executeCommand<vscode.LocationLink[]>('vscode.executeDefinitionProvider', uri(NOTES), crypt);
    assert.equal(fromLink?.targetUri.fsPath, uri('places/old-abbey.md').fsPath);
    assert.equal(read('places/old-abbey.md').split('\n')[fromLink!.targetRange.start.line], '## The Crypt');

    const editor = await vscode.window.showTextDocument(uri('places/old-abbey.md'));
    editor.selection = new vscode.Selection(maraInAbbey(), maraInAbbey());
    await vscode.commands.executeCommand('editor.action.peekDefinition');
    const seen = await capture('language-peek-definition', 1200);
    assert.match(seen.workbenchText, /mara\.md/);
    assert.match(seen.workbenchText, /Definitions \(1\)/);
    assert.match(seen.workbenchText, /Keeper\sof\sthe\sOld\sAbbey/, 'the peek shows Mara\'s sheet');
    await vscode.commands.executeCommand('closeReferenceSearch');
  });

  it('links each [[link]] to its file and line, and shows a link that names nothing until its file is created', async () => {
    // Links are computed for documents the editor has loaded.
    await vscode.window.showTextDocument(uri(NOTES));
    const links = await vscode.commands.executeCommand<vscode.DocumentLink[]>('vscode.executeLinkProvider', uri(NOTES));
    assert.deepEqual(
      links.map((l) => `${path.relative(root, l.target!.fsPath).split(path.sep).join('/')}#${l.target!.fragment}`),
      ['places/old-abbey.md#L11', 'characters/mara.md#L6'],
    );
    const [problem, ...more] = await waitFor(() => linkProblems(NOTES).length > 0 && linkProblems(NOTES), 20_000, 'a problem on [[Harbour Master]]');
    assert.equal(more.length, 0, 'the two links that resolve are not problems');
    assert.equal(problem!.message, '[[Harbour Master]] names no page, alias or heading in this campaign');
    assert.equal(problem!.range.start.line, 6);

    const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', uri(NOTES), problem!.range);
    const create = actions.find((a) => a.title === `Create ${CREATED} for [[Harbour Master]]`);
    assert.ok(create?.command, `offered: ${actions.map((a) => a.title).join(' | ')}`);
    await vscode.commands.executeCommand(create.command.command, ...(create.command.arguments ?? []));
    assert.equal(read(CREATED), '---\ntitle: Harbour Master\n---\n# Harbour Master\n\n');
    assert.equal(vscode.window.activeTextEditor?.document.uri.fsPath, uri(CREATED).fsPath, 'the new page is open to write in');
    await waitFor(() => linkProblems(NOTES).length === 0, 20_000, 'the problem to clear once the page is indexed');
  });

  it('hovers a name with the entity\'s summary, canon facts and where it is defined', async () => {
    const text = hoverText(await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', uri('places/old-abbey.md'), maraInAbbey()));
    assert.match(text, /\*\*Sister Mara\*\* · Character · \d+ mentions? in \d+ files?/);
    assert.match(text, /Mara came to the Abbey as a foundling/);
    assert.match(text, /Canon facts:\n- Age: \*\*34\*\*/);
    assert.match(text, /Defined in \[characters\/mara\\\.md:6\]/);
  });

  it('finds every reference: campaign files, links, and the adventure transcript', async () => {
    const refs = await vscode.commands.executeCommand<vscode.Location[]>('vscode.executeReferenceProvider', uri('places/old-abbey.md'), maraInAbbey());
    const where = refs.map((r) => (r.uri.scheme === TRANSCRIPT_SCHEME ? `transcript ${r.uri.path}:${r.range.start.line}` : `${path.relative(root, r.uri.fsPath).split(path.sep).join('/')}:${r.range.start.line}`));
    for (const expected of ['places/old-abbey.md:13', 'characters/mara.md:11', `${NOTES}:5`, 'characters/mara.md:5']) assert.ok(where.includes(expected), `${expected} in ${where.join(', ')}`);
    const inTranscript = refs.filter((r) => r.uri.scheme === TRANSCRIPT_SCHEME && r.uri.path === '/Night at the Abbey.md');
    assert.equal(inTranscript.length, 2, 'both turns name her');
    const transcript = await vscode.workspace.openTextDocument(inTranscript[0]!.uri);
    assert.equal(transcript.getText(inTranscript[0]!.range), 'Sister Mara');
  });

  it('completes entity names inside [[ as the writer types', async () => {
    const editor = await vscode.window.showTextDocument(uri(NOTES));
    const end = new vscode.Position(7, 0);
    await editor.edit((e) => e.insert(end, 'Then [[Si'));
    const at = new vscode.Position(7, 'Then [[Si'.length);
    editor.selection = new vscode.Selection(at, at);
    const list = await vscode.commands.executeCommand<vscode.CompletionList>('vscode.executeCompletionItemProvider', uri(NOTES), at, '[');
    const mara = list.items.find((i) => (typeof i.label === 'string' ? i.label : i.label.label) === 'Sister Mara');
    assert.equal(mara?.insertText, 'Sister Mara]]');
    await vscode.commands.executeCommand('editor.action.triggerSuggest');
    const seen = await capture('language-completion', 1200);
    assert.match(seen.workbenchText, /Sister Mara/);
    await vscode.commands.executeCommand('hideSuggestWidget');
    await editor.edit((e) => e.delete(new vscode.Range(end, at)));
    await editor.document.save();
    assert.equal(read(NOTES), NOTES_TEXT);
  });

  it('renames an entity across the campaign as one edit shown in a preview and applied from it, and back again', async function () {
    // Two renames, each waiting for the index and the entity model to settle: slow on a loaded machine.
    this.timeout(180_000);
    const before = new Map(['characters/mara.md', 'places/old-abbey.md', NOTES].map((rel) => [rel, read(rel)]));
    try {
      const editor = await vscode.window.showTextDocument(uri('places/old-abbey.md'));
      const prepared = await vscode.commands.executeCommand<{ range: vscode.Range; placeholder: string }>('vscode.prepareRename', uri('places/old-abbey.md'), maraInAbbey());
      assert.equal(prepared.placeholder, 'Mara');
      const edit = await vscode.commands.executeCommand<vscode.WorkspaceEdit>('vscode.executeDocumentRenameProvider', uri('places/old-abbey.md'), maraInAbbey(), 'Marra');
      const changed = edit.entries().map(([file, edits]) => `${path.relative(root, file.fsPath).split(path.sep).join('/')}:${edits.map((e) => e.range.start.line).join(',')}`);
      assert.deepEqual(changed.sort(), ['characters/mara.md:1,2,2,5,11', `${NOTES}:5`, 'places/old-abbey.md:13']);

      // F2 as a writer presses it, with Ctrl+Enter: the preview lists every change before any is made.
      editor.selection = new vscode.Selection(maraInAbbey(), maraInAbbey());
      const renaming = vscode.commands.executeCommand('editor.action.rename');
      await capture('language-rename-input', 800, [
        { action: 'fill', selector: '.rename-box input', text: 'Marra' },
        { action: 'press', selector: '.rename-box input', key: 'Control+Enter' },
      ]);
      // The preview edits a copy of each file (its own scheme, the same path), and the extension hears that copy
      // change: no rename has landed, so her file's rename is not offered yet.
      const maraPath = uri('characters/mara.md').path;
      await waitFor(() => vscode.workspace.textDocuments.some((d) => d.uri.scheme !== 'file' && d.uri.path === maraPath && d.getText().includes('Sister Marra')), 20_000, 'the preview’s copy of her file');
      const seen = await capture('language-rename-preview', 1500);
      assert.match(seen.workbenchText, /Refactor\sPreview/);
      assert.doesNotMatch(seen.workbenchText, /still named after the old name/, 'no file rename offered while the rename is only previewed');
      // Each change shows the old spelling struck through beside the new one.
      assert.match(seen.workbenchText, /title:\sSister\sMaraMarra/);
      assert.match(seen.workbenchText, /\[\[Sister\sMaraMarra\]\]/);
      assert.match(seen.workbenchText, /MaraMarra\scame\sto\sthe\sAbbey/);
      for (const [rel, text] of before) assert.equal(read(rel), text, `${rel} untouched by the preview`);
      // The writer presses the preview's Apply button.
      await capture('language-rename-applied', 300, [{ action: 'click', selector: '.bulk-edit-panel .buttons .monaco-button:has-text("Apply")' }]);
      const abbey = uri('places/old-abbey.md').fsPath;
      await waitFor(() => vscode.workspace.textDocuments.some((d) => d.uri.fsPath === abbey && d.getText().includes('Marra holds the only key')), 20_000, 'the rename applied from the preview');
      await within(renaming, 20_000, 'the rename command to end once its preview was applied');
      // VS Code saves the files a refactoring edited (files.refactoring.autoSave) after the rename command has
      // returned: the test waits for those saves instead of starting its own.
      const dirty = (rel: string) => vscode.workspace.textDocuments.some((d) => d.uri.fsPath === uri(rel).fsPath && d.isDirty);
      const savedByVsCode = (rel: string) => read(rel).includes('Marra') && !dirty(rel);
      // Should a save stall here again (old-abbey.md "Writing into file…" was VS Code's Local History copy, see
      // run.ts), the failure says which file and at which side, its buffer or the disk.
      const unsaved = () => [...before.keys()].filter((rel) => !savedByVsCode(rel)).map((rel) => `${rel} (${dirty(rel) ? 'buffer unsaved' : 'buffer clean'}, ${read(rel).includes('Marra') ? 'new' : 'old'} text on disk)`);
      await waitFor(() => [...before.keys()].every(savedByVsCode), 20_000, 'VS Code to save the files the rename edited').catch((error: Error) => {
        throw new Error(`${error.message}: ${unsaved().join(', ')}`);
      });
      assert.match(read('characters/mara.md'), /^---\ntitle: Sister Marra\nentities: \[Marra, Sister Marra\]\n(?:.*\n){2}# Sister Marra\n/);
      assert.match(read(NOTES), /\[\[Sister Marra\]\]/);
      assert.match(read('places/old-abbey.md'), /abbot died\. Marra holds the only key/);
      // Her file is named after the old name: renaming it is offered, not done.
      await waitFor(async () => (await capture('language-rename-file-offered', 300)).workbenchText.includes('characters/mara.md is still named after the old name. Rename it to characters/marra.md?'), 20_000, 'the offer to rename her file');
      assert.ok(fs.existsSync(uri('characters/mara.md').fsPath), 'the file keeps its name until the writer says so');
      await vscode.commands.executeCommand('notifications.clearAll');
      await waitFor(() => api.language.modelOf(root)?.resolveName('Marra'), 20_000, 'the renamed entity in the model');
      await settled(index);
      const back = await vscode.commands.executeCommand<vscode.WorkspaceEdit>('vscode.executeDocumentRenameProvider', uri('places/old-abbey.md'), maraInAbbey(), 'Mara');
      assert.ok(await vscode.workspace.applyEdit(back));
      await saveEdited();
      for (const [rel, text] of before) assert.equal(read(rel), text, `${rel} restored by renaming back`);
    } finally {
      // Whatever failed above, the tests after this one find Mara as she was.
      await restoreTexts(before);
    }
    await waitFor(() => api.language.modelOf(root)?.resolveName('Mara'), 20_000, 'Mara back in the model');
    await settled(index);
  });

  it('renames the file named after an entity too, when the writer takes the offer', async function () {
    this.timeout(120_000);
    const [page, renamed] = ['places/gull-tower.md', 'places/gull-keep.md'];
    fs.writeFileSync(uri(page).fsPath, '---\ntitle: Gull Tower\n---\n# Gull Tower\n\nThe Gull Tower leans over the harbour.\n');
    try {
      await waitFor(() => api.language.modelOf(root)?.resolveName('Gull Tower'), 20_000, 'Gull Tower in the model');
      await vscode.window.showTextDocument(uri(page));
      // The rename answers once the page's entity is in the model the editor asks (a moment after the index).
      const edit = await waitFor(
        async () => vscode.commands.executeCommand<vscode.WorkspaceEdit | undefined>('vscode.executeDocumentRenameProvider', uri(page), new vscode.Position(5, 6), 'Gull Keep'),
        20_000,
        'the rename of Gull Tower',
      );
      assert.ok(await vscode.workspace.applyEdit(edit));
      await saveEdited();
      const button = '.notifications-toasts .monaco-button:has-text("Rename File")';
      await waitFor(async () => (await capture('language-rename-file-offer', 300, [], [button])).located[button], 20_000, 'the offer to rename gull-tower.md');
      await capture('language-rename-file-taken', 300, [{ action: 'click', selector: button }]);
      await waitFor(() => fs.existsSync(uri(renamed).fsPath) && !fs.existsSync(uri(page).fsPath), 20_000, `${page} renamed to ${renamed}`);
      assert.match(read(renamed), /^---\ntitle: Gull Keep\n---\n# Gull Keep\n\nThe Gull Keep leans/);
      await inIndex(renamed);
    } finally {
      for (const rel of [page, renamed]) fs.rmSync(uri(rel).fsPath, { force: true });
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      await gone(renamed);
    }
  });

  it('lists the Codex: entities by kind with mentions, defining files, never mentioned and never retrieved', async () => {
    let top: CodexNode[] = [];
    const group = (name: string) => top.find((n): n is Extract<CodexNode, { kind: 'group' }> => n.kind === 'group' && n.group === name);
    const entry = (groupName: string, display: string) => group(groupName)?.entries.find((e) => e.entity.display === display);
    // The Codex reads the index, which settles a moment after the rename before this test was saved.
    const mara = await waitFor(() => {
      top = api.codex.getChildren();
      const found = entry('character', 'Sister Mara');
      return found && found.mentions >= 3 && found;
    }, 20_000, 'Sister Mara mentioned in the Codex');
    assert.deepEqual(mara.mentioningFiles.sort(), [NOTES, 'places/old-abbey.md']);
    assert.equal(entry('place', 'The Old Abbey')?.retrieved, true, 'a turn retrieved the Abbey');
    assert.ok(group('never-mentioned')?.entries.some((e) => e.entity.display === 'Harbour Notes'), 'nothing names the notes');
    assert.ok(group('never-retrieved')?.entries.some((e) => e.entity.display === 'Harbour Notes'));
    const children = api.codex.getChildren({ kind: 'entity', root, entry: mara });
    assert.equal(api.codex.getTreeItem(children[0]!).label, 'defined in characters/mara.md');

    await vscode.commands.executeCommand('storyteller.codex.focus');
    const seen = await capture('language-codex', 1200);
    assert.match(seen.workbenchText, /Characters/);
    // The Codex says what her hover says: the same mentions in the same files.
    const hover = hoverText(await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', uri('places/old-abbey.md'), maraInAbbey()));
    const said = /\d+ mentions? in \d+ files?/.exec(hover)?.[0];
    assert.ok(said, hover);
    assert.ok(seen.workbenchText.includes(`Sister Mara${said}`) || seen.workbenchText.includes(`Sister Mara ${said}`), `the Codex shows '${said}' as the hover does: ${seen.workbenchText.slice(0, 600)}`);
  });

  it('exports the transcript of a branch as markdown', async () => {
    const target = vscode.Uri.file(path.join(harnessConfig().artifactsDir, 'night-at-the-abbey.md'));
    const node = api.adventures.getChildren().find((n) => n.kind === 'adventure' && n.adventure.id === adventure.adventure);
    assert.ok(node);
    const written = await vscode.commands.executeCommand<vscode.Uri>('storyteller.exportTranscript', node, target);
    assert.equal(written?.fsPath, target.fsPath);
    const text = fs.readFileSync(target.fsPath, 'utf8');
    assert.match(text, /^# Night at the Abbey\n\n_The Westhaven Campaign · 2 turns · played as Kell_\n/);
    assert.match(text, /> \*\*Kell:\*\* I knock on the abbey gate\n\nSister Mara opens the gate a hand’s width\./);
    assert.match(text, /> \*\*Kell says:\*\* “Is the crypt locked\?”\n\nMara touches the key at her belt\.\n$/);
    assert.equal(vscode.window.activeTextEditor?.document.uri.fsPath, target.fsPath, 'the transcript opens');
  });
});
