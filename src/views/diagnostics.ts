import * as vscode from 'vscode';
import type { SourceIssue, SourceRecord } from '../knowledge/campaign';
import { groupRepeats, repeatGroupMessage, type RepeatGroup } from '../knowledge/health';
import { Disposable } from './disposable';
import type { KnowledgeService } from './knowledgeService';
import { sourceUri } from './sourcesTree';
import { INDEX_CHANGE_REDRAW_MS, throttled } from './throttle';

const lineRange = (issue: SourceIssue): vscode.Range => {
  const line = Math.max(0, (issue.line ?? 1) - 1);
  return new vscode.Range(line, 0, line, Number.MAX_SAFE_INTEGER);
};

function diagnostic(range: vscode.Range, message: string, code: string, severity: vscode.DiagnosticSeverity): vscode.Diagnostic {
  const item = new vscode.Diagnostic(range, message, severity);
  item.source = 'Storyteller';
  item.code = code;
  return item;
}

/**
 * Text repeated in reference or inspiration material (an SRD repeats itself by the hundred) is one
 * information per group of repeats, on its first file, with every repeating file as related information:
 * it is indexed once either way and the writer has nothing to fix there, so Problems stays readable.
 */
function groupDiagnostic(root: string, group: RepeatGroup): vscode.Diagnostic {
  const [first] = group.repeats;
  const item = diagnostic(lineRange(first!.issue), repeatGroupMessage(group), 'duplicate', vscode.DiagnosticSeverity.Information);
  if (group.repeats.length > 1) {
    item.relatedInformation = group.repeats.map(
      ({ source, issue }) => new vscode.DiagnosticRelatedInformation(new vscode.Location(sourceUri(root, source), lineRange(issue)), issue.message),
    );
  }
  return item;
}

/**
 * Problems panel: every issue the index recorded for a source (front matter, encoding, size), and the
 * repeated text: repeated canon stays a warning on each file, since two canon files saying the same thing
 * may drift apart; other repeats are grouped.
 */
export class SourceDiagnostics extends Disposable {
  private readonly collection = this._register(vscode.languages.createDiagnosticCollection('storyteller'));

  constructor(private readonly knowledge: KnowledgeService) {
    super();
    this._register(knowledge.onDidChange(this._register(throttled(() => this.refresh(), INDEX_CHANGE_REDRAW_MS))));
  }

  private refresh(): void {
    this.collection.clear();
    for (const index of this.knowledge.list()) {
      const store = index.store;
      if (!store) continue;
      const root = index.campaign.root;
      const byUri = new Map<string, { uri: vscode.Uri; items: vscode.Diagnostic[] }>();
      const add = (source: SourceRecord, item: vscode.Diagnostic) => {
        const uri = sourceUri(root, source);
        const entry = byUri.get(uri.toString()) ?? { uri, items: [] };
        entry.items.push(item);
        byUri.set(uri.toString(), entry);
      };
      const sources = store.listSources();
      for (const source of sources) {
        for (const issue of source.issues) {
          if (issue.code === 'duplicate') continue;
          add(source, diagnostic(lineRange(issue), issue.message, issue.code, issue.severity === 'error' ? vscode.DiagnosticSeverity.Error : vscode.DiagnosticSeverity.Warning));
        }
      }
      const repeats = groupRepeats(sources, store.repeatedPassageHolders());
      for (const { source, issue } of repeats.canon) add(source, diagnostic(lineRange(issue), issue.message, issue.code, vscode.DiagnosticSeverity.Warning));
      for (const group of repeats.groups) add(group.repeats[0]!.source, groupDiagnostic(root, group));
      for (const { uri, items } of byUri.values()) this.collection.set(uri, items);
    }
  }
}
