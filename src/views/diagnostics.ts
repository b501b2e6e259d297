import * as vscode from 'vscode';
import type { SourceIssue, SourceRecord } from '../knowledge/campaign';
import { Disposable } from './disposable';
import type { KnowledgeService } from './knowledgeService';
import { sourceUri } from './sourcesTree';

/**
 * How loud an issue is in Problems. Text repeated in reference or inspiration material (an SRD repeats
 * itself by the hundred) is information: it is indexed once either way and the writer has nothing to fix
 * there. Repeated canon stays a warning, since two canon files saying the same thing may drift apart.
 */
function severityOf(issue: SourceIssue, source: SourceRecord): vscode.DiagnosticSeverity {
  if (issue.severity === 'error') return vscode.DiagnosticSeverity.Error;
  return issue.code === 'duplicate' && source.class !== 'canon' ? vscode.DiagnosticSeverity.Information : vscode.DiagnosticSeverity.Warning;
}

function toDiagnostic(issue: SourceIssue, source: SourceRecord): vscode.Diagnostic {
  const line = Math.max(0, (issue.line ?? 1) - 1);
  const diagnostic = new vscode.Diagnostic(new vscode.Range(line, 0, line, Number.MAX_SAFE_INTEGER), issue.message, severityOf(issue, source));
  diagnostic.source = 'Storyteller';
  diagnostic.code = issue.code;
  return diagnostic;
}

/** Problems panel: every issue the index recorded for a source (front matter, encoding, duplicates, size). */
export class SourceDiagnostics extends Disposable {
  private readonly collection = this._register(vscode.languages.createDiagnosticCollection('storyteller'));

  constructor(private readonly knowledge: KnowledgeService) {
    super();
    this._register(knowledge.onDidChange(() => this.refresh()));
  }

  private refresh(): void {
    this.collection.clear();
    for (const index of this.knowledge.list()) {
      for (const source of index.store?.listSources() ?? []) {
        if (source.issues.length > 0) this.collection.set(sourceUri(index.campaign.root, source), source.issues.map((issue) => toDiagnostic(issue, source)));
      }
    }
  }
}
