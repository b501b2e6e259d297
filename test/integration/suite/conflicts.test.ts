import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import type { CampaignIndex } from '../../../src/views/campaignIndex';
import { CONFLICT_COMMANDS } from '../../../src/views/conflicts';
import { capture, waitFor } from './harness';
import { campaignWorkspace } from './workspace';

let api: StorytellerApi;
let index: CampaignIndex;
let root: string;

const uri = (rel: string) => vscode.Uri.file(path.join(root, ...rel.split('/')));
const conflictDiagnostics = (rel: string) => vscode.languages.getDiagnostics(uri(rel)).filter((d) => d.source === 'Storyteller canon');
const INFIRMARY = 'places/infirmary-notes.md';

describe('canon conflicts in the workbench', () => {
  before(async () => {
    ({ api, root, index } = await campaignWorkspace());
    // A writer adds notes that disagree with Mara's sheet (characters/mara.md: Age 34).
    fs.writeFileSync(path.join(root, ...INFIRMARY.split('/')), '---\ntitle: Infirmary Notes\n---\n# Infirmary notes\n\n## Mara\n\n- **Age:** 41\n- **Home:** the Old Abbey\n');
  });
  // Later suites count the example campaign's sources: leave it as it was found, index included.
  after(async () => {
    fs.rmSync(path.join(root, ...INFIRMARY.split('/')), { force: true });
    await waitFor(() => !index.store?.getSourceByPath(INFIRMARY), 20_000, 'the notes to leave the index');
    await index.idle();
  });

  it('puts a problem on both statements, each pointing at the other', async () => {
    const [onNotes] = await waitFor(() => conflictDiagnostics(INFIRMARY).length > 0 && conflictDiagnostics(INFIRMARY), 20_000, 'a conflict diagnostic on the new notes');
    const [onSheet] = conflictDiagnostics('characters/mara.md');
    assert.ok(onNotes && onSheet);
    assert.equal(onNotes.range.start.line, 7);
    assert.match(onNotes.message, /Sister Mara — Age: "41" here, but "34" in characters\/mara\.md:8/);
    assert.equal(onNotes.relatedInformation?.[0]?.location.uri.fsPath, uri('characters/mara.md').fsPath);
    assert.equal(onNotes.relatedInformation?.[0]?.location.range.start.line, 7);
    assert.equal(onSheet.relatedInformation?.[0]?.location.uri.fsPath, uri(INFIRMARY).fsPath);
    assert.ok(conflictDiagnostics(INFIRMARY).every((d) => !/Home/.test(d.message)), 'agreeing statements are not conflicts');
    await vscode.window.showTextDocument(uri('characters/mara.md'));
    await vscode.commands.executeCommand('workbench.actions.view.problems');
    const reply = await capture('conflict-problems');
    assert.match(reply.workbenchText, /Sister Mara — Age/);
  });

  it('hovers a fact with every statement of it, its source, class and a link to open it', async () => {
    const doc = await vscode.workspace.openTextDocument(uri('characters/mara.md'));
    const hovers = await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', doc.uri, new vscode.Position(7, 4));
    const text = hovers.flatMap((h) => h.contents.map((c) => (typeof c === 'string' ? c : 'value' in c ? c.value : ''))).join('\n');
    assert.match(text, /Sister Mara — Age\*\*: 2 canon statements/);
    assert.match(text, /⚠ \*\*34\*\* — Sister Mara \(canon\)/);
    assert.match(text, /⚠ \*\*41\*\* — Infirmary Notes \(canon\)/);
    assert.match(text, new RegExp(`command:${CONFLICT_COMMANDS.open.replace(/\./g, '\\.')}`));
    // The heading of a passage tells how many turns retrieved it (none yet in a fresh workspace).
    const heading = await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', doc.uri, new vscode.Position(5, 3));
    const headingText = heading.flatMap((h) => h.contents.map((c) => (typeof c === 'string' ? c : 'value' in c ? c.value : ''))).join('\n');
    assert.match(headingText, /1 open canon conflict/);
    assert.match(headingText, /No turn has retrieved this passage yet/);
  });

  it('offers quick fixes; marking the notes as superseding edits their front matter and resolves the pair', async () => {
    const doc = await vscode.workspace.openTextDocument(uri(INFIRMARY));
    const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', doc.uri, new vscode.Range(7, 0, 7, 5));
    const titles = actions.map((a) => a.title);
    assert.ok(titles.includes('Open the other statement (characters/mara.md:8)'), titles.join(' | '));
    assert.ok(titles.includes(`Mark ${INFIRMARY} as superseding characters/mara.md`));
    assert.ok(titles.some((t) => t.startsWith('Ignore this conflict')));

    const supersede = actions.find((a) => a.title === `Mark ${INFIRMARY} as superseding characters/mara.md`)!;
    assert.ok(await vscode.workspace.applyEdit(supersede.edit!));
    await doc.save();
    assert.equal(fs.readFileSync(doc.uri.fsPath, 'utf8'), '---\ntitle: Infirmary Notes\nsupersedes:\n  - characters/mara.md\n---\n# Infirmary notes\n\n## Mara\n\n- **Age:** 41\n- **Home:** the Old Abbey\n');
    const faded = await waitFor(() => {
      const d = conflictDiagnostics('characters/mara.md');
      return d.length === 1 && d[0]!.severity === vscode.DiagnosticSeverity.Hint && d[0]!;
    }, 20_000, 'the superseded statement to fade');
    assert.deepEqual(faded.tags, [vscode.DiagnosticTag.Unnecessary]);
    assert.equal(conflictDiagnostics(INFIRMARY).length, 0);
  });

  it('ignoring a pair removes it from Problems and remembers it in play.db', async () => {
    fs.writeFileSync(path.join(root, ...INFIRMARY.split('/')), '---\ntitle: Infirmary Notes\n---\n## Mara\n\n- **Home:** Westhaven\n');
    await waitFor(() => conflictDiagnostics(INFIRMARY).some((d) => /Home/.test(d.message)), 20_000, 'the Home conflict');
    const doc = await vscode.workspace.openTextDocument(uri(INFIRMARY));
    const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', doc.uri, new vscode.Range(5, 0, 5, 5));
    const ignore = actions.find((a) => a.title.startsWith('Ignore this conflict'))!;
    await vscode.commands.executeCommand(ignore.command!.command, ...(ignore.command!.arguments ?? []));
    assert.equal(conflictDiagnostics(INFIRMARY).length, 0);
    assert.equal(conflictDiagnostics('characters/mara.md').length, 0);
    assert.ok(fs.existsSync(path.join(root, '.storyteller', 'play.db')), 'the decision is play data');
    assert.equal(api.conflicts.analysisOf(root)?.conflicts.find((c) => c.attributeKey === 'home')?.decision, 'ignored');
  });
});
