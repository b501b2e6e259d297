import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { atxHeading, pathInside, type Campaign } from '../knowledge/campaign';
import { FactCache, isOpenConflict, type CanonConflict, type ConflictAnalysis, type ConflictDecision } from '../knowledge/conflicts';
import { clearConflictDecision, loadConflictDecisions, recordConflictDecision } from '../knowledge/conflicts';
import { supersedesEdit } from '../knowledge/conflicts';
import { analyzeStoreConflicts } from '../knowledge/conflicts';
import { describeWorldFact, supersededByState } from '../knowledge/conflicts';
import type { WorldFact } from '../knowledge/retrieval';
import { canonConsistencyPassages, checkCanonConsistency, pairPassagesByEntity, type SuggestedConflict } from '../knowledge/conflicts';
import type { FactStatement } from '../knowledge/conflicts';
import { stripInlineMarkup } from '../knowledge/names';
import { passageRetrievalCounts } from '../knowledge/health';
import type { Db } from '../knowledge/indexing';
import type { KnowledgeStore } from '../knowledge/indexing';
import { currentAdventureStates } from '../story/playStore';
import { stateWorldFacts } from '../story/worldState';
import { INDEX_CHANGE_REDRAW_MS, throttled } from './throttle';
import { trustedFor } from './workspaceTrust';

/**
 * Canon conflicts in the editor: Problems entries on both statements (each pointing at the other), a hover
 * listing every statement of the fact with its source and class, and quick fixes — open the other
 * statement, mark one source as superseding the other (a front-matter edit the writer can undo), or ignore
 * the pair (remembered in play.db). Also the model-assisted "Check Canon Consistency" and, on a passage's
 * heading, how many turns retrieved it.
 */

export interface ConflictCampaign {
  readonly campaign: Pick<Campaign, 'root' | 'id' | 'title' | 'playPath'>;
  /** Undefined until the campaign's index has been opened. */
  readonly store: KnowledgeStore | undefined;
}

export interface ConflictFeatureDeps {
  /** The workspace's campaigns with their indexes (KnowledgeService.list()). */
  campaigns(): readonly ConflictCampaign[];
  /** Fires after any campaign's index changed. */
  onDidChangeIndex: vscode.Event<unknown>;
  /** Ollama host and narrator model for Check Canon Consistency; undefined when not configured. */
  ollama(): { host: string; model: string } | undefined;
  /**
   * The campaign session's play.db, where decisions live. Without `create`, only one that exists already:
   * reading counts must not create a database.
   */
  playDb(campaignRoot: string, create: boolean): Db | undefined;
}

export const CONFLICT_COMMANDS = {
  open: 'storyteller.conflicts.openStatement',
  ignore: 'storyteller.conflicts.ignore',
  keep: 'storyteller.conflicts.keepStatement',
  unignore: 'storyteller.conflicts.unignore',
  decideSuggestion: 'storyteller.conflicts.decideSuggestion',
  checkConsistency: 'storyteller.checkCanonConsistency',
} as const;

const DIAGNOSTIC_SOURCE = 'Storyteller canon';

interface CampaignState {
  entry: ConflictCampaign;
  analysis: ConflictAnalysis;
  suggestions: SuggestedConflict[];
  decisions: Map<string, ConflictDecision>;
}

function undecided(state: CampaignState): SuggestedConflict[] {
  return state.suggestions.filter((s) => !state.decisions.has(s.key));
}

function uriOf(root: string, relPath: string): vscode.Uri {
  return vscode.Uri.file(path.join(root, ...relPath.split('/')));
}

function rangeOf(s: FactStatement): vscode.Range {
  return new vscode.Range(s.line - 1, s.startColumn, s.line - 1, Math.max(s.endColumn, s.startColumn + 1));
}

function commandUri(command: string, args: unknown[]): vscode.Uri {
  return vscode.Uri.parse(`command:${command}?${encodeURIComponent(JSON.stringify(args))}`);
}

function otherSide(conflict: CanonConflict, statement: FactStatement): FactStatement {
  return conflict.a === statement || (conflict.a.path === statement.path && conflict.a.line === statement.line) ? conflict.b : conflict.a;
}

/** Markdown-escape text taken from the writer's files before it goes into a hover. */
export function md(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!<>|]/g, '\\$&');
}

/** `path:line` opening the file at that line, for hovers trusted with CONFLICT_COMMANDS.open. */
export function openLink(root: string, relPath: string, line: number): string {
  return `[${md(relPath)}:${line}](${commandUri(CONFLICT_COMMANDS.open, [uriOf(root, relPath).toString(), line]).toString()})`;
}

const FACTS_SHOWN = 12;

export class ConflictFeatures implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  private readonly diagnostics = vscode.languages.createDiagnosticCollection('storyteller-conflicts');
  private readonly states = new Map<string, CampaignState>();
  private readonly factCaches = new Map<string, FactCache>();
  private readonly _onDidRefresh = new vscode.EventEmitter<void>();
  /** Fires after conflicts were recomputed and diagnostics published (tests wait on it). */
  readonly onDidRefresh = this._onDidRefresh.event;

  constructor(private readonly deps: ConflictFeatureDeps) {
    const selector: vscode.DocumentSelector = [{ scheme: 'file', language: 'markdown' }, { scheme: 'file', language: 'plaintext' }];
    const refreshOnIndexChange = throttled(() => this.refresh(), INDEX_CHANGE_REDRAW_MS);
    this.disposables.push(
      this.diagnostics,
      this._onDidRefresh,
      // Once per burst of index changes (a library copied in is indexed file by file), not per file.
      refreshOnIndexChange,
      deps.onDidChangeIndex(refreshOnIndexChange),
      vscode.languages.registerHoverProvider(selector, { provideHover: (doc, pos) => this.hover(doc, pos) }),
      vscode.languages.registerCodeActionsProvider(selector, { provideCodeActions: (doc, range) => this.codeActions(doc, range) }, {
        providedCodeActionKinds: [vscode.CodeActionKind.QuickFix],
      }),
      vscode.commands.registerCommand(CONFLICT_COMMANDS.open, (uri: string, line: number) => this.open(uri, line)),
      vscode.commands.registerCommand(CONFLICT_COMMANDS.ignore, (root: string, key: string) => this.decide(root, key, 'ignored')),
      vscode.commands.registerCommand(CONFLICT_COMMANDS.keep, (root: string, key: string, side: 'a' | 'b') => this.decide(root, key, side === 'a' ? 'kept-a' : 'kept-b')),
      vscode.commands.registerCommand(CONFLICT_COMMANDS.unignore, (root: string, key: string) => this.decide(root, key, null)),
      vscode.commands.registerCommand(CONFLICT_COMMANDS.decideSuggestion, (root: string, key: string, decision: 'accepted' | 'dismissed') =>
        this.decide(root, key, decision),
      ),
      vscode.commands.registerCommand(CONFLICT_COMMANDS.checkConsistency, (options?: { campaignRoot?: string }) => this.checkConsistency(options)),
    );
    this.refresh();
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
  }

  /** The current analysis of the campaign at `root` (for the Sources tree and the source inspector). */
  analysisOf(root: string): ConflictAnalysis | undefined {
    return this.states.get(root)?.analysis;
  }

  /** The model's suggested conflicts in the campaign at `root` that the writer has neither accepted nor dismissed. */
  suggestionsOf(root: string): SuggestedConflict[] {
    const state = this.states.get(root);
    return state ? undecided(state) : [];
  }

  private playDb(root: string, create: boolean): Db | undefined {
    return this.deps.playDb(root, create);
  }

  refresh(): void {
    const seen = new Set<string>();
    for (const entry of this.deps.campaigns()) {
      if (!entry.store) continue;
      const root = entry.campaign.root;
      seen.add(root);
      const decisions = (() => {
        const db = this.playDb(root, false);
        return db ? loadConflictDecisions(db, entry.campaign.id) : new Map<string, ConflictDecision>();
      })();
      const previous = this.states.get(root);
      const cache = this.factCaches.get(root) ?? new FactCache();
      this.factCaches.set(root, cache);
      this.states.set(root, { entry, analysis: analyzeStoreConflicts(entry.store, decisions, cache), suggestions: previous?.suggestions ?? [], decisions });
    }
    for (const root of [...this.states.keys()]) {
      if (seen.has(root)) continue;
      this.states.delete(root);
      this.factCaches.delete(root);
    }
    this.publish();
    this._onDidRefresh.fire();
  }

  private publish(): void {
    this.diagnostics.clear();
    const byUri = new Map<string, { uri: vscode.Uri; items: vscode.Diagnostic[] }>();
    const add = (uri: vscode.Uri, diagnostic: vscode.Diagnostic) => {
      const key = uri.toString();
      const entry = byUri.get(key) ?? { uri, items: [] };
      entry.items.push(diagnostic);
      byUri.set(key, entry);
    };
    for (const [root, state] of this.states) {
      for (const conflict of state.analysis.conflicts) {
        if (conflict.decision === 'ignored') continue;
        for (const [here, there] of [
          [conflict.a, conflict.b],
          [conflict.b, conflict.a],
        ] as const) {
          const uri = uriOf(root, here.path);
          if (isOpenConflict(conflict)) {
            const d = new vscode.Diagnostic(
              rangeOf(here),
              `${conflict.entity} — ${conflict.attribute}: "${here.value}" here, but "${there.value}" in ${there.path}:${there.line}`,
              vscode.DiagnosticSeverity.Warning,
            );
            d.source = DIAGNOSTIC_SOURCE;
            d.code = 'canon-conflict';
            d.relatedInformation = [
              new vscode.DiagnosticRelatedInformation(new vscode.Location(uriOf(root, there.path), rangeOf(there)), `${there.sourceTitle} (${there.class}): ${there.quote}`),
            ];
            add(uri, d);
          } else if (conflict[conflict.supersededBy!] === there) {
            // The losing side fades: still there, still readable, no longer an error.
            const d = new vscode.Diagnostic(rangeOf(here), `superseded by ${there.path}:${there.line} ("${there.value}")`, vscode.DiagnosticSeverity.Hint);
            d.source = DIAGNOSTIC_SOURCE;
            d.code = 'canon-superseded';
            d.tags = [vscode.DiagnosticTag.Unnecessary];
            add(uri, d);
          }
        }
      }
      for (const s of undecided(state)) {
        for (const [here, there] of [
          [s.a, s.b],
          [s.b, s.a],
        ] as const) {
          const d = new vscode.Diagnostic(
            new vscode.Range(here.line - 1, 0, here.line - 1, Number.MAX_SAFE_INTEGER),
            `Suggested (model): ${s.explanation} — "${here.quote}" vs "${there.quote}" in ${there.sourcePath}:${there.line}`,
            vscode.DiagnosticSeverity.Information,
          );
          d.source = DIAGNOSTIC_SOURCE;
          d.code = 'canon-suggestion';
          d.relatedInformation = [
            new vscode.DiagnosticRelatedInformation(new vscode.Location(uriOf(root, there.sourcePath), new vscode.Position(there.line - 1, 0)), there.quote),
          ];
          add(uriOf(root, here.sourcePath), d);
        }
      }
    }
    for (const { uri, items } of byUri.values()) this.diagnostics.set(uri, items);
  }

  private locate(doc: vscode.TextDocument): { root: string; relPath: string; state: CampaignState } | undefined {
    for (const [root, state] of this.states) {
      const relPath = pathInside(root, doc.uri.fsPath);
      if (relPath !== undefined) return { root, relPath, state };
    }
    return undefined;
  }

  private hover(doc: vscode.TextDocument, pos: vscode.Position): vscode.Hover | undefined {
    const where = this.locate(doc);
    if (!where) return undefined;
    const { root, relPath, state } = where;
    const line = pos.line + 1;
    const parts: string[] = [];
    const statementLink = (s: FactStatement) => openLink(root, s.path, s.line);
    const describe = (s: FactStatement, conflicting: boolean) =>
      `- ${conflicting ? '⚠ ' : ''}**${md(s.value)}** — ${md(s.sourceTitle)} (${s.class}) ${statementLink(s)}`;

    const statements = state.analysis.statementsAt(relPath, line);
    const inPlay = statements.length > 0 ? this.adventureFacts(root, state.entry.campaign.id) : [];
    for (const statement of statements) {
      // Play moving on is the story, not a mistake in canon: told as information, never as a problem.
      for (const { title, facts } of inPlay) {
        for (const { current } of supersededByState([statement], facts, state.analysis.names)) {
          parts.push(`_Superseded in play in adventure **${md(title)}**: now **${md(current.value)}** (${md(describeWorldFact(current))})._`);
        }
      }
      const all = state.analysis.statementsAbout(statement.entityKey, statement.attributeKey);
      const conflicts = state.analysis.conflicts.filter(
        (c) => c.entityKey === statement.entityKey && c.attributeKey === statement.attributeKey && c.decision !== 'ignored',
      );
      if (all.length < 2 && conflicts.length === 0) continue;
      const disagreeing = new Set(conflicts.filter(isOpenConflict).flatMap((c) => [c.a, c.b]));
      parts.push(`**${md(conflicts[0]?.entity ?? statement.entity)} — ${md(statement.attribute)}**: ${all.length} canon statements`);
      parts.push(all.map((s) => describe(s, disagreeing.has(s))).join('\n'));
      for (const c of conflicts.filter((x) => x.supersededBy)) {
        const winner = c[c.supersededBy!];
        const loser = otherSide(c, winner);
        parts.push(
          c.settledBy === 'writer'
            ? `_"${md(loser.value)}" (${md(loser.path)}:${loser.line}) is superseded: you kept "${md(winner.value)}" (${md(winner.path)}:${winner.line})._`
            : `_${md(loser.path)} is superseded by ${md(winner.path)} here._`,
        );
      }
    }

    const text = doc.lineAt(pos.line).text;
    const heading = atxHeading(text);
    // An entity named in the heading is described by the entity hover (entityHoverParts), conflicts included.
    if (heading && state.entry.store) {
      // Passages start below their heading; a long section is several passages with the same heading path.
      const source = state.entry.store.getSourceByPath(relPath);
      const headingText = stripInlineMarkup(heading.text);
      const after = (source ? state.entry.store.listPassages(source.id) : []).filter((p) => p.startLine > line).sort((a, b) => a.startLine - b.startLine);
      const first = after[0];
      const section = first && first.headingPath.at(-1) === headingText ? after.filter((p) => JSON.stringify(p.headingPath) === JSON.stringify(first.headingPath)) : [];
      if (section.length > 0) {
        const db = this.playDb(root, false);
        const counts = db ? passageRetrievalCounts(db, section.map((p) => p.id)) : new Map<string, { used: number; considered: number }>();
        const considered = section.reduce((sum, p) => sum + (counts.get(p.id)?.considered ?? 0), 0);
        const used = section.reduce((sum, p) => sum + (counts.get(p.id)?.used ?? 0), 0);
        const what = section.length === 1 ? 'this passage' : `these ${section.length} passages`;
        parts.push(considered > 0 ? `Turns retrieved ${what} ${considered} time${considered === 1 ? '' : 's'}; used in ${used}.` : `No turn has retrieved ${what} yet.`);
      }
    }
    if (parts.length === 0) return undefined;
    const content = new vscode.MarkdownString(parts.join('\n\n'));
    content.isTrusted = { enabledCommands: [CONFLICT_COMMANDS.open] };
    return new vscode.Hover(content, doc.lineAt(pos.line).range);
  }

  /**
   * What the entity hover says about canon: the entity's facts (⚠ on the disputed ones) and its open
   * conflicts. `entityKey` is the analysis' key (the entity model groups names the same way).
   */
  entityHoverParts(root: string, entityKey: string): string[] {
    const analysis = this.states.get(root)?.analysis;
    if (!analysis) return [];
    const parts: string[] = [];
    const conflicts = analysis.conflictsOfEntity(entityKey).filter(isOpenConflict);
    const disputed = new Set(conflicts.flatMap((c) => [c.a, c.b]));
    const facts = analysis.facts.filter((f) => f.entityKey === entityKey);
    if (facts.length > 0) {
      const shown = facts.slice(0, FACTS_SHOWN).map((f) => `- ${disputed.has(f) ? '⚠ ' : ''}${md(f.attribute)}: **${md(f.value)}** ${openLink(root, f.path, f.line)}`);
      if (facts.length > FACTS_SHOWN) shown.push(`- …and ${facts.length - FACTS_SHOWN} more`);
      parts.push(`Canon facts:\n${shown.join('\n')}`);
    }
    if (conflicts.length > 0) {
      parts.push(`**${md(conflicts[0]!.entity)}**: ${conflicts.length} open canon conflict${conflicts.length === 1 ? '' : 's'}`);
      parts.push(conflicts.map((c) => `- ${md(c.attribute)}: **${md(c.a.value)}** ${openLink(root, c.a.path, c.a.line)} vs **${md(c.b.value)}** ${openLink(root, c.b.path, c.b.line)}`).join('\n'));
    }
    return parts;
  }

  /** Each adventure's current state as facts about entities; none until something was played. */
  private adventureFacts(root: string, campaignId: string): { title: string; facts: WorldFact[] }[] {
    const db = this.playDb(root, false);
    return db ? currentAdventureStates(db, campaignId).map(({ adventure, state }) => ({ title: adventure.title, facts: stateWorldFacts(adventure.statSchema, state) })) : [];
  }

  private codeActions(doc: vscode.TextDocument, range: vscode.Range | vscode.Selection): vscode.CodeAction[] {
    const where = this.locate(doc);
    if (!where) return [];
    const { root, relPath, state } = where;
    const actions: vscode.CodeAction[] = [];
    for (let line = range.start.line + 1; line <= range.end.line + 1; line++) {
      for (const conflict of state.analysis.conflictsAt(relPath, line).filter(isOpenConflict)) {
        const here = conflict.a.path === relPath && conflict.a.line === line ? conflict.a : conflict.b;
        const there = otherSide(conflict, here);
        const label = `${conflict.entity} — ${conflict.attribute}`;

        const open = new vscode.CodeAction(`Open the other statement (${there.path}:${there.line})`, vscode.CodeActionKind.QuickFix);
        open.command = { command: CONFLICT_COMMANDS.open, title: open.title, arguments: [uriOf(root, there.path).toString(), there.line] };
        actions.push(open);

        for (const [winner, loser] of [
          [here, there],
          [there, here],
        ] as const) {
          if (winner.path === loser.path) continue;
          const action = new vscode.CodeAction(`Mark ${winner.path} as superseding ${loser.path}`, vscode.CodeActionKind.QuickFix);
          const edit = this.supersedeWorkspaceEdit(root, winner.path, loser.path);
          if (edit instanceof vscode.WorkspaceEdit) action.edit = edit;
          else action.disabled = { reason: edit };
          actions.push(action);
        }

        // Settles the pair alone, with no file edited: works where `supersedes:` cannot (both in one file).
        for (const side of ['a', 'b'] as const) {
          const kept = conflict[side];
          const keep = new vscode.CodeAction(`Keep "${kept.value}" (${kept.path}:${kept.line}); the narrator gets the other as superseded`, vscode.CodeActionKind.QuickFix);
          keep.command = { command: CONFLICT_COMMANDS.keep, title: keep.title, arguments: [root, conflict.key, side] };
          actions.push(keep);
        }

        const ignore = new vscode.CodeAction(`Ignore this conflict (${label}): both statements are true, both are sent`, vscode.CodeActionKind.QuickFix);
        ignore.command = { command: CONFLICT_COMMANDS.ignore, title: ignore.title, arguments: [root, conflict.key] };
        actions.push(ignore);
      }
      for (const s of undecided(state)) {
        if (!((s.a.sourcePath === relPath && s.a.line === line) || (s.b.sourcePath === relPath && s.b.line === line))) continue;
        for (const decision of ['accepted', 'dismissed'] as const) {
          const action = new vscode.CodeAction(`${decision === 'accepted' ? 'Accept' : 'Dismiss'} suggested conflict: ${s.explanation}`, vscode.CodeActionKind.QuickFix);
          action.command = { command: CONFLICT_COMMANDS.decideSuggestion, title: action.title, arguments: [root, s.key, decision] };
          actions.push(action);
        }
      }
    }
    return actions;
  }

  /** The front-matter edit, or the reason it cannot be made (the file's front matter is broken). */
  private supersedeWorkspaceEdit(root: string, winnerPath: string, loserPath: string): vscode.WorkspaceEdit | string {
    const uri = uriOf(root, winnerPath);
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    let text: string;
    try {
      text = open ? open.getText() : fs.readFileSync(uri.fsPath, 'utf8');
    } catch (error) {
      return `${winnerPath} cannot be read: ${(error as Error).message}`;
    }
    try {
      const edit = supersedesEdit(text, loserPath);
      const workspaceEdit = new vscode.WorkspaceEdit();
      if (edit) {
        workspaceEdit.replace(uri, new vscode.Range(edit.startLine, edit.startColumn, edit.endLine, edit.endColumn), edit.newText, {
          label: `Mark ${winnerPath} as superseding ${loserPath}`,
          needsConfirmation: false,
        });
      }
      return workspaceEdit;
    } catch (error) {
      return `${winnerPath}: ${(error as Error).message}`;
    }
  }

  private async open(uri: string, line: number): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(uri));
    const position = new vscode.Position(Math.max(0, line - 1), 0);
    await vscode.window.showTextDocument(doc, { selection: new vscode.Range(position, position), preview: false });
  }

  private decide(root: string, key: string, decision: ConflictDecision | null): void {
    const state = this.states.get(root);
    const db = this.playDb(root, true);
    if (!state || !db) return;
    if (decision) recordConflictDecision(db, state.entry.campaign.id, key, decision);
    else clearConflictDecision(db, state.entry.campaign.id, key);
    this.refresh();
  }

  /** The campaign to check, among those indexed: the one named, the only one, or the writer's pick. */
  private async consistencyTarget(indexed: CampaignState[], campaignRoot?: string): Promise<CampaignState | undefined> {
    if (campaignRoot) return indexed.find((state) => state.entry.campaign.root === campaignRoot);
    if (indexed.length === 1) return indexed[0];
    const picked = await vscode.window.showQuickPick(
      indexed.map((state) => ({ label: state.entry.campaign.title, description: vscode.workspace.asRelativePath(state.entry.campaign.root), state })),
      { placeHolder: 'Check the canon of which campaign?' },
    );
    return picked?.state;
  }

  /**
   * Asks the narrator model about every pair of canon passages that speak of the same entity, in one
   * campaign, and says what it checked: a pair the model could not answer is never counted as consistent.
   */
  private async checkConsistency(options: { campaignRoot?: string } = {}): Promise<ConsistencyCheckSummary | undefined> {
    if (!trustedFor('Check Canon Consistency')) return undefined;
    const ollama = this.deps.ollama();
    if (!ollama) {
      void vscode.window.showWarningMessage('Check Canon Consistency needs a narrator model on Ollama: set storyteller.provider to ollama and storyteller.narrator.model.');
      return undefined;
    }
    const indexed = [...this.states.values()].filter((state) => state.entry.store);
    if (indexed.length === 0) {
      void vscode.window.showInformationMessage('No indexed campaign to check: a campaign is a folder with a campaign.yaml.');
      return undefined;
    }
    const state = await this.consistencyTarget(indexed, options.campaignRoot);
    const store = state?.entry.store;
    // The writer dismissed the pick, or the root named is not an indexed campaign.
    if (!state || !store) return undefined;
    const { title } = state.entry.campaign;
    const pairs = pairPassagesByEntity(canonConsistencyPassages(store), state.analysis.names);
    let answered = 0;
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Checking the canon of ${title}`, cancellable: true },
      async (progress, token) => {
        const abort = new AbortController();
        token.onCancellationRequested(() => abort.abort());
        return checkCanonConsistency({
          ...ollama,
          pairs,
          signal: abort.signal,
          onProgress: (done, total) => {
            answered = done;
            progress.report({ message: `${done}/${total} pairs`, increment: 100 / Math.max(1, total) });
          },
        });
      },
    );
    state.suggestions = result.suggestions;
    this.publish();
    this._onDidRefresh.fire();
    const summary: ConsistencyCheckSummary = {
      campaignTitle: title,
      pairs: pairs.length,
      checked: answered - result.failures.length,
      failures: result.failures.length,
      suggestions: result.suggestions,
    };
    const message = consistencyMessage(summary, result.failures[0]?.reason);
    if (summary.checked < summary.pairs) void vscode.window.showWarningMessage(message);
    else void vscode.window.showInformationMessage(message);
    return summary;
  }
}

export interface ConsistencyCheckSummary {
  campaignTitle: string;
  /** Pairs of canon passages about the same entity. */
  pairs: number;
  /** Pairs the model answered for. */
  checked: number;
  /** Pairs the model could not answer for (the rest of the unchecked ones were cancelled). */
  failures: number;
  suggestions: SuggestedConflict[];
}

/** What a consistency check found and, as plainly, what it did not check. */
export function consistencyMessage(summary: ConsistencyCheckSummary, firstFailure?: string): string {
  const { campaignTitle, pairs, checked, failures, suggestions } = summary;
  if (pairs === 0) return `${campaignTitle}: no two canon passages speak of the same entity, so there was nothing to compare.`;
  const found = suggestions.length === 0 ? 'no suggested conflicts' : `${suggestions.length} suggested conflict${suggestions.length === 1 ? '' : 's'} (see the Problems panel)`;
  if (checked === pairs) return `${campaignTitle}: checked all ${pairs} pairs of canon passages about the same entity: ${found}.`;
  const cancelled = pairs - checked - failures;
  const notChecked = [failures > 0 ? `${failures} could not be checked (${firstFailure ?? 'the model did not answer'})` : '', cancelled > 0 ? `${cancelled} were not reached (cancelled)` : '']
    .filter(Boolean)
    .join(' and ');
  return `${campaignTitle}: checked ${checked} of ${pairs} pairs of canon passages: ${found} among them. ${notChecked[0]!.toUpperCase()}${notChecked.slice(1)}; run the check again once the model answers.`;
}
