import * as vscode from 'vscode';
import type { SourceIssue } from '../knowledge/campaign';
import { Disposable } from './disposable';
import type { KnowledgeService } from './knowledgeService';
import { sourceUri } from './sourcesTree';

function toDiagnostic(issue: SourceIssue): vscode.Diagnostic {
  const line = Math.max(0, (issue.line ?? 1) - 1);
  const diagnostic = new vscode.Diagnostic(
    new vscode.Range(line, 0, line, Number.MAX_SAFE_INTEGER),
    issue.message,
    issue.severity === 'error' ? vscode.DiagnosticSeverity.Error : vscode.DiagnosticSeverity.Warning,
  );
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
        if (source.issues.length > 0) this.collection.set(sourceUri(index.campaign.root, source), source.issues.map(toDiagnostic));
      }
    }
  }
}
