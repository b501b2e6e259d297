import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StorytellerApi } from '../../../src/extension';
import type { LintReport } from '../../../src/knowledge/health/lint';
import { REPORT_SCHEME } from '../../../src/views/reportDocuments';
import { activatedExtension, capture, harnessConfig, settled, waitFor } from './harness';

/** "Check Campaign Health" in the real workbench: lint's checks on the live index, with the writer's settings. */
describe('campaign health', () => {
  let api: StorytellerApi;
  let root: string;
  const broken = 'notes/broken.md';
  const config = () => vscode.workspace.getConfiguration('storyteller');

  before(async () => {
    api = (await activatedExtension()).exports as StorytellerApi;
    root = path.resolve(harnessConfig().workspace);
    await settled(api.knowledge, 'every campaign index');
  });

  after(async () => {
    await config().update('context.budgets', undefined, vscode.ConfigurationTarget.Global);
    fs.rmSync(path.join(root, 'notes'), { recursive: true, force: true });
    // The suites after this one count the campaign's sources: the removed folder must have left the index.
    const index = api.knowledge.get(root)!;
    await waitFor(() => !index.store?.listSources().some((s) => s.path.startsWith('notes/')), 15_000, 'notes/ to leave the index');
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  it('reports a broken file and always-include canon over the budget the writer set, as a report with links', async () => {
    fs.mkdirSync(path.join(root, 'notes'), { recursive: true });
    fs.writeFileSync(path.join(root, broken), '---\nclass: lore\n---\n# Broken\n\nThe class is not one of ours.\n');
    const index = api.knowledge.get(root)!;
    await waitFor(() => index.store?.listSources().some((s) => s.path === broken), 15_000, `${broken} to be indexed`);
    await config().update('context.budgets', { alwaysInclude: 10, canon: 1500, reference: 900, inspiration: 300 }, vscode.ConfigurationTarget.Global);
    await waitFor(() => api.settings.current.budgets.alwaysInclude === 10, 20_000, 'the budget setting');

    const report = (await vscode.commands.executeCommand<LintReport>('storyteller.checkHealth'))!;
    const front = report.findings.find((f) => f.path === broken);
    assert.equal(front?.severity, 'error', JSON.stringify(report.findings.filter((f) => f.severity !== 'info')));
    assert.match(front!.message, /class/);
    const overflow = report.findings.find((f) => f.code === 'always-include-over-budget');
    assert.ok(overflow, 'the always-include budget from the settings is checked');
    assert.match(overflow.message, /as a prompt sends it, over its 10-token budget/);

    const document = api.reports.current?.document;
    assert.equal(document?.uri.scheme, REPORT_SCHEME);
    assert.equal(api.reports.current?.title, 'Campaign health: The Westhaven Campaign');
    const text = document!.getText();
    assert.match(text, /^# Campaign health: The Westhaven Campaign/);
    assert.match(text, new RegExp(`^- \`${broken}:\\d+\` `, 'm'), 'each finding at its path:line, as Go to File takes it');
    assert.doesNotMatch(text, /file:\/\/|\]\[\d+\]/, 'no file: links, which the preview shows as literal text');
    assert.match(text, /## Warnings \(\d+\)/);
    const shown = await waitFor(async () => {
      const seen = await capture('campaign-health-report', 300);
      return seen.frames.some((f) => /Campaign health: The Westhaven Campaign/.test(f.text) && !/^# /m.test(f.text)) && seen;
    }, 15_000, 'the health report rendered in the report tab');
    assert.ok(shown);
  });

  it('is clean of those findings once the file is fixed and the budget restored', async () => {
    fs.writeFileSync(path.join(root, broken), '---\nclass: reference\n---\n# Fixed\n\nNow a reference note.\n');
    await config().update('context.budgets', undefined, vscode.ConfigurationTarget.Global);
    const index = api.knowledge.get(root)!;
    await waitFor(() => index.store?.listSources().find((s) => s.path === broken)?.title === 'Fixed', 15_000, 'the fixed file to be indexed');
    const report = (await vscode.commands.executeCommand<LintReport>('storyteller.checkHealth'))!;
    assert.deepEqual(report.findings.filter((f) => f.path === broken && f.severity === 'error'), []);
    assert.equal(report.findings.filter((f) => f.code === 'always-include-over-budget').length, 0);
  });
});
