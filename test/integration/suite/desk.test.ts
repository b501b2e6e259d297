import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as vscode from 'vscode';
import type { ConsistencyCheckSummary } from '../../../src/views/conflicts';
import { writeSrdCopy } from '../../support/corpora';
import { unusedLoopbackUrl } from '../../support/fakeOllama';
import { capture, harnessConfig, settled, waitFor } from './harness';
import { campaignWorkspace, type CampaignWorkspace } from './workspace';

/** The writer's desk around the play panel: walkthrough, problems, the example, the canon check. */
describe("the writer's desk", () => {
  let workspace: CampaignWorkspace;

  before(async () => {
    workspace = await campaignWorkspace();
  });

  it('ticks every walkthrough step for what the writer did, also what was done before the walkthrough loaded', async () => {
    const { root } = workspace;
    const walkthrough = 'storyteller.adventure-storyteller#gettingStarted';
    // The campaign was open and indexed seconds after start-up, before VS Code registered the walkthrough
    // (a key already true then never ticks its step on its own). The writer glances at the walkthrough,
    // goes to work (search, preview and play, started from commands, not from the walkthrough's links),
    // and comes back to it.
    await vscode.commands.executeCommand('workbench.action.openWalkthrough', walkthrough, false);
    await waitFor(async () => (await capture('walkthrough-first-look', 300)).workbenchText.includes('Preview the context'), 20_000, 'the walkthrough registered and shown');
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await vscode.commands.executeCommand('storyteller.search', 'abbey bells');
    await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
    await vscode.commands.executeCommand('storyteller.previewContext', { campaignRoot: root, action: 'ring the abbey bells' });
    await vscode.commands.executeCommand('storyteller.openPlayPanel', { campaignRoot: root });
    // Editors that earlier suites left open squeeze the walkthrough into a column with its steps off screen.
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await vscode.commands.executeCommand('workbench.action.openWalkthrough', walkthrough, false);
    const steps = ['openExample', 'index', 'search', 'play', 'previewContext'].map((id) => `button.getting-started-step[data-step-id$="#${id}"][aria-checked="true"]`);
    const seen = await waitFor(async () => {
      const reply = await capture('walkthrough-ticked', 300, [], steps);
      return steps.every((s) => reply.located[s]) && reply;
    }, 20_000, 'every walkthrough step ticked');
    assert.ok(seen.workbenchText.includes('Get Started with Adventure Storyteller'));
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  it('never copies the example campaign inside an open campaign', async () => {
    const inside = vscode.Uri.file(path.join(workspace.root, 'characters'));
    const before = fs.readdirSync(inside.fsPath);
    const copied = await vscode.commands.executeCommand<vscode.Uri | undefined>('storyteller.openExampleCampaign', { parent: inside, then: 'none' });
    assert.equal(copied, undefined);
    assert.deepEqual(fs.readdirSync(inside.fsPath), before, 'nothing was written');
    await waitFor(async () => (await capture('example-refused-inside-campaign', 300)).workbenchText.includes('campaigns do not nest'), 20_000, 'the refusal on screen');
  });

  it('never copies the example campaign inside a campaign that is only on disk, outside the workspace', async () => {
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'storyteller-elsewhere-'));
    try {
      fs.writeFileSync(path.join(elsewhere, 'campaign.yaml'), 'id: elsewhere\ntitle: Elsewhere\n');
      fs.mkdirSync(path.join(elsewhere, 'notes'));
      const copied = await vscode.commands.executeCommand<vscode.Uri | undefined>('storyteller.openExampleCampaign', { parent: vscode.Uri.file(path.join(elsewhere, 'notes')), then: 'none' });
      assert.equal(copied, undefined);
      assert.deepEqual(fs.readdirSync(path.join(elsewhere, 'notes')), [], 'nothing was written');
      await waitFor(async () => (await capture('example-refused-inside-disk-campaign', 300)).workbenchText.includes(`Choose a folder outside the campaign at ${elsewhere}`), 20_000, 'the refusal naming the campaign on screen');
    } finally {
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it('keeps repeated reference text out of the warnings, and warns about repeated canon', async () => {
    const { root, index } = workspace;
    const text = 'The harbour tolls at dusk; every ship answers with a lantern.\n';
    const files = { 'desk-ref-a.md': 'reference', 'desk-ref-b.md': 'reference', 'desk-canon-a.md': 'canon', 'desk-canon-b.md': 'canon' } as const;
    for (const [name, cls] of Object.entries(files)) fs.writeFileSync(path.join(root, name), `---\nclass: ${cls}\n---\n# Harbour ${cls}\n\n${text}`);
    try {
      const severityOf = (name: string) => vscode.languages.getDiagnostics(vscode.Uri.file(path.join(root, name))).find((d) => d.code === 'duplicate')?.severity;
      await waitFor(() => severityOf('desk-ref-b.md') !== undefined && severityOf('desk-canon-b.md') !== undefined, 20_000, 'the duplicates to be reported');
      assert.equal(severityOf('desk-ref-b.md'), vscode.DiagnosticSeverity.Information, 'reference repeating reference: nothing for the writer to fix');
      assert.equal(severityOf('desk-canon-b.md'), vscode.DiagnosticSeverity.Warning, 'canon repeating canon: may drift apart');
      await vscode.commands.executeCommand('workbench.actions.view.problems');
      await capture('duplicates-in-problems', 800);
    } finally {
      for (const name of Object.keys(files)) fs.rmSync(path.join(root, name), { force: true });
      await waitFor(() => !index.store?.listSources().some((s) => s.path.startsWith('desk-')), 20_000, 'the files to leave the index');
      await vscode.commands.executeCommand('workbench.action.closePanel');
    }
  });

  it('asks the canon check about one campaign and says which pairs it could not check', async () => {
    const config = vscode.workspace.getConfiguration('storyteller');
    const down = await unusedLoopbackUrl();
    await config.update('ollama.host', down, vscode.ConfigurationTarget.Global);
    await waitFor(() => workspace.api.settings.current.ollamaHost === down, 20_000, 'the Ollama host setting');
    try {
      const summary = await vscode.commands.executeCommand<ConsistencyCheckSummary>('storyteller.checkCanonConsistency', { campaignRoot: workspace.root });
      assert.equal(summary.campaignTitle, 'The Westhaven Campaign');
      assert.ok(summary.pairs > 0, 'the example has canon passages about the same entity');
      assert.equal(summary.checked, 0, 'with no model server nothing was checked');
      assert.equal(summary.failures, summary.pairs);
      const seen = await waitFor(async () => {
        const reply = await capture('canon-check-unchecked', 300);
        return reply.workbenchText.includes(`checked 0 of ${summary.pairs} pairs`) && reply;
      }, 20_000, 'the message saying what was not checked');
      assert.doesNotMatch(seen.workbenchText, /No suggested canon conflicts\.$/m, 'never "no conflicts" for pairs that were not checked');
    } finally {
      await config.update('ollama.host', undefined, vscode.ConfigurationTarget.Global);
    }
  });

  describe('with the D&D SRD copied in as reference material', () => {
    const srd = () => path.join(workspace.root, 'srd');
    const sourcesUnder = (folder: string) => workspace.index.store?.listSources().filter((s) => s.path.startsWith(`${folder}/`)) ?? [];
    const srdSources = () => sourcesUnder('srd');
    /** Copies the SRD into the campaign once; the index picks it up in the background. Returns how many files it indexes (1028 .md, SOURCE.txt). */
    const copySrd = (): number => {
      if (!fs.existsSync(srd())) writeSrdCopy(srd(), 0);
      return (fs.readdirSync(srd(), { recursive: true }) as string[]).filter((f) => /\.(md|txt)$/.test(f)).length;
    };
    /** The typing test's further copies of the SRD, 1 to N-1, distinct text each (copy 0 is srd/ itself). */
    const VOLUMES = 'srd-volumes';
    /** Deletes a folder of the campaign and waits until its files have left the index. */
    const removeFolder = async (folder: string) => {
      fs.rmSync(path.join(workspace.root, folder), { recursive: true, force: true });
      await waitFor(() => sourcesUnder(folder).length === 0, 300_000, `${folder}/ to leave the index`);
    };

    after(async function () {
      this.timeout(600_000);
      await removeFolder('srd');
      await removeFolder(VOLUMES);
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      await vscode.commands.executeCommand('workbench.action.closePanel');
    });

    /**
     * Keydown-to-paint in the browser while N distinct copies of the SRD index into the campaign (N from
     * STORYTELLER_TYPING_COPIES, default 2: issue 35 measures ten), against the same typing with the index idle.
     * One copy was not enough under two CPU-bound processes: it finished indexing before the last key was typed.
     * The numbers go to artifacts/typing-latency.json and the log; speed is not asserted as wall time here,
     * only that the typing really happened while indexing ran.
     */
    it('measures typing lag in the play panel and an editor while a large campaign indexes', async function () {
      const copies = Number(process.env.STORYTELLER_TYPING_COPIES || 2);
      assert.ok(Number.isInteger(copies) && copies >= 1, `STORYTELLER_TYPING_COPIES=${process.env.STORYTELLER_TYPING_COPIES} is not a number of copies`);
      // Each key is typed and timed on its own round trip, on a loaded machine, and every further copy is a
      // thousand files to index and then to take out again: minutes, not seconds.
      this.timeout((10 + 2 * (copies - 1)) * 60_000);
      const { root, index } = workspace;
      const note = path.join(root, 'desk-typing.md');
      fs.writeFileSync(note, '# Typing\n\n');
      const sentence = 'fog over the harbour';
      // Every key waits for its own paint in the page, while the SRD indexes on a loaded machine.
      const TYPING_BUDGET_MS = 3 * 60_000;
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.95)]!;
      const load = () => os.loadavg().map((l) => Number(l.toFixed(2)));
      const openPanel = async (name: string) => {
        await vscode.commands.executeCommand('workbench.action.closeAllEditors');
        await vscode.commands.executeCommand('storyteller.openPlayPanel', { campaignRoot: root });
        await waitFor(async () => (await capture(`${name}-panel-ready`, 300, [], ['#action textarea'])).located['#action textarea'], 20_000, 'the play panel to load');
      };
      /** Types the sentence in the open play panel, then in the note; `mark` is called before each and after both. */
      const typeIn = async (name: string, mark: (moment: string) => void = () => undefined) => {
        mark('panelTypingStarted');
        const panel = await capture(`${name}-panel`, 300, [{ action: 'typeTimed', selector: '#action textarea', text: sentence }], [], TYPING_BUDGET_MS);
        await vscode.window.showTextDocument(vscode.Uri.file(note), { viewColumn: vscode.ViewColumn.One });
        mark('editorTypingStarted');
        const editor = await capture(`${name}-editor`, 300, [{ action: 'typeTimed', selector: '.monaco-editor textarea', text: sentence }], [], TYPING_BUDGET_MS);
        mark('typingEnded');
        return { panel: panel.typing, editor: editor.typing };
      };
      try {
        await settled(index);
        await openPanel('typing-idle');
        const idleLoad = load();
        const idle = await typeIn('typing-idle');
        // The panel opens before the SRD arrives: on a loaded machine, opening it inside the indexing window
        // left the SRD indexed (1029 of 1029) before the last key was typed.
        await openPanel('typing-while-indexing');
        // Copy 0 in srd/, which the next test keeps; the others beside it, which leave with this test.
        let files = copySrd();
        for (let k = 1; k < copies; k++) files += writeSrdCopy(path.join(root, VOLUMES, `srd-${k}`), k);
        const indexed = () => srdSources().length + sourcesUnder(VOLUMES).length;
        await waitFor(() => indexed() > 0, 120_000, 'the SRD to start indexing');
        const progress: Record<string, { filesIndexed: string; load: number[] }> = {};
        const busy = await typeIn('typing-while-indexing', (moment) => (progress[moment] = { filesIndexed: `${indexed()} of ${files}`, load: load() }));
        const stillIndexing = indexed() < files;
        const summary = {
          anchor: 'keydown to the second animation frame after it, in the page, ms',
          idle: { panel: { median: median(idle.panel), p95: p95(idle.panel) }, editor: { median: median(idle.editor), p95: p95(idle.editor) } },
          indexing: { panel: { median: median(busy.panel), p95: p95(busy.panel) }, editor: { median: median(busy.editor), p95: p95(busy.editor) } },
          // Issue 35's measure: keydown-to-paint while indexing against idle, median over median (goal ≤ 1.5×).
          ratioWhileIndexing: { panel: median(busy.panel) / median(idle.panel), editor: median(busy.editor) / median(idle.editor) },
          // What was indexing: distinct copies of the SRD and their files, and how far the index had got.
          srdCopies: copies,
          filesIndexing: files,
          ...progress,
          // 1, 5 and 15 minute load averages of the machine (os.loadavg), with its cores.
          idleLoad,
          cores: os.cpus().length,
          keys: sentence.length,
        };
        fs.writeFileSync(path.join(harnessConfig().artifactsDir, 'typing-latency.json'), JSON.stringify({ summary, idle, busy }, null, 2));
        console.log(`typing latency: ${JSON.stringify(summary)}`);
        assert.equal(idle.panel.length, sentence.length, 'every key was measured');
        assert.equal(busy.editor.length, sentence.length);
        assert.ok(stillIndexing, `the typing happened while the SRD was indexing (${progress.typingEnded?.filesIndexed} indexed when it ended)`);
      } finally {
        fs.rmSync(note, { force: true });
        await vscode.commands.executeCommand('workbench.action.closeAllEditors');
        await removeFolder(VOLUMES);
      }
    });

    it('groups the text the SRD repeats into a handful of findings in Problems, each listing its files', async function () {
      this.timeout(10 * 60_000);
      const { index } = workspace;
      const files = copySrd();
      await waitFor(async () => {
        await settled(index);
        return srdSources().length === files;
      }, 300_000, 'the SRD indexed');
      const repeating = srdSources().filter((s) => s.issues.some((i) => i.code === 'duplicate'));
      const inSrd = () =>
        vscode.languages.getDiagnostics().flatMap(([uri, items]) => (uri.fsPath.startsWith(srd() + path.sep) ? items.filter((d) => d.code === 'duplicate') : []));
      // Each finding lists its files as related information; a group of one is that file's own finding.
      const listed = (findings: vscode.Diagnostic[]) => findings.reduce((n, d) => n + (d.relatedInformation?.length || 1), 0);
      const findings = await waitFor(() => listed(inSrd()) === repeating.length && inSrd(), 30_000, 'the grouped findings in Problems');
      assert.ok(repeating.length > 90, `the SRD repeats text in ${repeating.length} files`);
      assert.equal(findings.length, 5, `${findings.length} findings for ${repeating.length} repeating files`);
      assert.ok(findings.every((d) => d.severity === vscode.DiagnosticSeverity.Information), 'reference material: nothing for the writer to fix');
      const monsters = findings.find((d) => d.message.startsWith('33 files in srd/Monsters (Alt) repeat text already indexed from srd/Monsters'));
      assert.ok(monsters, findings.map((d) => d.message).join('\n'));
      assert.ok(monsters.relatedInformation!.some((r) => r.location.uri.fsPath === path.join(srd(), 'Monsters (Alt)', 'Monsters D.md')));

      // Each finding with its files beneath it; the panel's count and the status bar say five in all.
      await vscode.commands.executeCommand('workbench.actions.view.problems');
      await waitFor(async () => (await capture('srd-duplicates-in-problems', 800)).workbenchText.includes('9 files in srd/Classes repeat text'), 20_000, 'a group with its files on screen');
    });
  });
});
