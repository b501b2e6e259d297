import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import { DEFAULT_KNOWLEDGE_BUDGETS } from '../../../src/knowledge/retrieval';
import type { CampaignIndex } from '../../../src/views/campaignIndex';
import { CONFLICT_COMMANDS } from '../../../src/views/conflicts';
import type { SourcesNode } from '../../../src/views/sourcesTree';
import { capture, settled, waitFor } from './harness';
import { campaignWorkspace, inPlayDb } from './workspace';

let api: StorytellerApi;
let index: CampaignIndex;
let root: string;

const uri = (rel: string) => vscode.Uri.file(path.join(root, ...rel.split('/')));
const conflictDiagnostics = (rel: string) => vscode.languages.getDiagnostics(uri(rel)).filter((d) => d.source === 'Storyteller canon');
const INFIRMARY = 'places/infirmary-notes.md';

type SourceNode = Extract<SourcesNode, { kind: 'source' }>;
const children = async (node?: SourcesNode) => (await api.sources.getChildren(node)) ?? [];
/** The canon source's node in the Sources tree, read as the view reads it. */
async function canonSourceNode(rel: string): Promise<SourceNode | undefined> {
  const [campaign] = await children();
  const canon = (await children(campaign)).find((n) => n.kind === 'class' && n.knowledgeClass === 'canon');
  return (await children(canon)).find((n): n is SourceNode => n.kind === 'source' && n.source.path === rel);
}
const hoverText = (hovers: vscode.Hover[]) => hovers.flatMap((h) => h.contents.map((c) => (typeof c === 'string' ? c : 'value' in c ? c.value : ''))).join('\n');

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
    await settled(index);
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

  it('lists a source\'s conflicts under it in the Sources tree and in its inspector; a conflict opens the other statement', async () => {
    const notes = await waitFor(async () => {
      const node = await canonSourceNode(INFIRMARY);
      return node && node.conflicts.length > 0 && node;
    }, 20_000, 'the notes to list their conflict in the Sources tree');
    const item = api.sources.getTreeItem(notes);
    assert.equal(item.collapsibleState, vscode.TreeItemCollapsibleState.Collapsed);
    assert.equal(item.description, `${INFIRMARY} · 1 conflict`);
    assert.match(String(item.tooltip), /\ncanon conflicts \(1\):\n- Sister Mara — Age: "41" \(line 8\) vs "34" in characters\/mara\.md:8 · open$/);
    const [onNotes, ...more] = await children(notes);
    assert.equal(more.length, 0, 'Home agrees with the sheet: not a conflict');
    const conflict = api.sources.getTreeItem(onNotes!);
    assert.equal(conflict.label, 'Sister Mara — Age: "41" vs "34"');
    assert.equal(conflict.description, 'characters/mara.md:8');
    assert.match(String(conflict.tooltip), /here \(line 8\): - \*\*Age:\*\* 41\nSister Mara \(characters\/mara\.md:8\): /);
    const [onSheet] = await children(await canonSourceNode('characters/mara.md'));
    assert.equal(api.sources.getTreeItem(onSheet!).label, 'Sister Mara — Age: "34" vs "41"', 'the other source lists it from its side');
    assert.equal(api.sources.getTreeItem(onSheet!).description, `${INFIRMARY}:8`);

    await vscode.commands.executeCommand(conflict.command!.command, ...(conflict.command!.arguments ?? []));
    const editor = vscode.window.activeTextEditor;
    assert.equal(editor?.document.uri.fsPath, uri('characters/mara.md').fsPath, 'clicking opens the other statement');
    assert.equal(editor?.selection.active.line, 7);

    await vscode.commands.executeCommand('workbench.view.extension.storyteller');
    // Room for the conflict's label: the default sidebar cuts it at the first value.
    await vscode.commands.executeCommand('workbench.action.closeAuxiliaryBar');
    // Narrowing the focused editor widens the sidebar beside it.
    await vscode.commands.executeCommand('workbench.action.focusActiveEditorGroup');
    for (let i = 0; i < 6; i++) await vscode.commands.executeCommand('workbench.action.decreaseViewWidth');
    await api.sources.view.reveal(onNotes!, { expand: true, select: true, focus: true });
    const reply = await capture('sources-tree-conflicts');
    assert.match(reply.workbenchText, /Infirmary Notes\s*places\/infirmary-notes\.md · 1 conflict/);
    assert.match(reply.workbenchText, /Sister Mara — Age: "41" vs "34"\s*characters\/mara\.md:8/);
    await vscode.commands.executeCommand('workbench.action.focusActiveEditorGroup');
    for (let i = 0; i < 6; i++) await vscode.commands.executeCommand('workbench.action.increaseViewWidth');
  });

  it('hovers a fact with every statement of it, its source, class and a link to open it', async () => {
    const doc = await vscode.workspace.openTextDocument(uri('characters/mara.md'));
    const hovers = await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', doc.uri, new vscode.Position(7, 4));
    const text = hoverText(hovers);
    assert.match(text, /Sister Mara — Age\*\*: 2 canon statements/);
    assert.match(text, /⚠ \*\*34\*\* — Sister Mara \(canon\)/);
    assert.match(text, /⚠ \*\*41\*\* — Infirmary Notes \(canon\)/);
    assert.match(text, new RegExp(`command:${CONFLICT_COMMANDS.open.replace(/\./g, '\\.')}`));
    // The heading of a passage tells how many turns retrieved it (none yet in a fresh workspace).
    const heading = await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', doc.uri, new vscode.Position(5, 3));
    const headingText = hoverText(heading);
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
    // The tree follows the analysis: the pair stays listed, as resolved history, and no longer counts.
    const notes = (await canonSourceNode(INFIRMARY))!;
    assert.equal(api.sources.getTreeItem(notes).description, INFIRMARY);
    const [resolved] = await children(notes);
    assert.equal(api.sources.getTreeItem(resolved!).description, `characters/mara.md:8 · resolved: ${INFIRMARY} supersedes`);
    // The window draws the tree after the extension host tells it to: wait for the screen to show it.
    await waitFor(
      async () => /resolved: places\/infirmary-notes\.md supersedes/.test((await capture('sources-tree-conflict-resolved')).workbenchText),
      10_000,
      'the visible tree to show the pair resolved',
    );
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
    assert.deepEqual((await canonSourceNode(INFIRMARY))?.conflicts, [], 'nor listed under the source');
  });

  it('keeping one statement settles the pair with no file edited, and the narrator gets the other as superseded', async () => {
    fs.writeFileSync(path.join(root, ...INFIRMARY.split('/')), '---\ntitle: Infirmary Notes\n---\n## Mara\n\n- **Age:** 41\n');
    await waitFor(() => conflictDiagnostics(INFIRMARY).some((d) => /Age/.test(d.message)), 20_000, 'the Age conflict');
    const before = fs.readFileSync(path.join(root, ...INFIRMARY.split('/')), 'utf8');
    const doc = await vscode.workspace.openTextDocument(uri(INFIRMARY));
    const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', doc.uri, new vscode.Range(5, 0, 5, 5));
    const keep = actions.find((a) => a.title === `Keep "41" (${INFIRMARY}:6); the narrator gets the other as superseded`);
    assert.ok(keep, actions.map((a) => a.title).join(' | '));
    await vscode.commands.executeCommand(keep.command!.command, ...(keep.command!.arguments ?? []));

    assert.equal(fs.readFileSync(path.join(root, ...INFIRMARY.split('/')), 'utf8'), before, 'no file is edited');
    assert.equal(conflictDiagnostics(INFIRMARY).length, 0);
    const [faded] = conflictDiagnostics('characters/mara.md');
    assert.equal(faded?.severity, vscode.DiagnosticSeverity.Hint);
    const [resolved] = await children((await canonSourceNode(INFIRMARY))!);
    assert.equal(api.sources.getTreeItem(resolved!).description, `characters/mara.md:8 · resolved: kept ${INFIRMARY}:6`);
    const sent = await index.session.knowledge().retrieve({ input: 'I ask Sister Mara how old she is', stage: 'narrator', budgets: DEFAULT_KNOWLEDGE_BUDGETS });
    const canonText = [...sent.sections.alwaysInclude, ...sent.sections.canon].map((p) => p.text).join('\n');
    assert.doesNotMatch(canonText, /Age: 34/);
    assert.match(canonText, new RegExp(`Age: superseded by ${INFIRMARY.replace(/[./]/g, '\\$&')} — now 41`));
    const reply = await capture('sources-tree-conflict-kept');
    assert.match(reply.workbenchText, /resolved: kept places\/infirmary-notes\.md:6/, 'the visible tree refreshed');
  });

  it('hovers canon the story has moved past as superseded in play, naming the adventure, and reports no problem', async () => {
    const BRIDGE = 'places/old-bridge.md';
    fs.writeFileSync(path.join(root, ...BRIDGE.split('/')), '---\ntitle: The Old Bridge\nentities: [the bridge]\n---\n# The Old Bridge\n\n- **Status:** standing\n');
    const schema = JSON.stringify({ world: { bridge: { initial: 'destroyed', options: ['standing', 'destroyed'] } } });
    const siege = inPlayDb(index.campaign.playPath, `process.stdout.write(store.createAdventure({ campaignId: process.env.CAMPAIGN, title: 'The Siege', statSchema: JSON.parse(process.env.SCHEMA) }).id);`, {
      CAMPAIGN: index.campaign.id,
      SCHEMA: schema,
    });
    try {
      // The watcher may reindex the new file more than once; the hover speaks for the settled analysis.
      const text = await waitFor(async () => {
        const shown = hoverText(await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', uri(BRIDGE), new vscode.Position(6, 4)));
        return /Superseded in play/.test(shown) && shown;
      }, 20_000, 'the bridge canon to be analyzed and hovered');
      assert.match(text, /^_Superseded in play in adventure \*\*The Siege\*\*: now \*\*destroyed\*\* \(world\\\.bridge = destroyed\)\._$/);
      assert.deepEqual(conflictDiagnostics(BRIDGE), [], 'play moving on is not a problem in canon');
    } finally {
      inPlayDb(index.campaign.playPath, 'store.deleteAdventure(process.env.ADVENTURE);', { ADVENTURE: siege });
      fs.rmSync(path.join(root, ...BRIDGE.split('/')), { force: true });
      await waitFor(() => !index.store?.getSourceByPath(BRIDGE), 20_000, 'the bridge to leave the index');
    }
  });
});
