import * as vscode from 'vscode';

/** Steps of "Get Started with Adventure Storyteller" that tick when the writer has done them. */
export type WalkthroughStep = 'indexed' | 'searched' | 'played' | 'previewed';

/**
 * Ticks a walkthrough step by the context key its completion event waits for. A step ticks for what was
 * done, however it was started (a tree button, the play panel, another command), not only when its own
 * command link was clicked.
 */
export function walkthroughDone(step: WalkthroughStep): void {
  void vscode.commands.executeCommand('setContext', `storyteller.walkthrough.${step}`, true);
}
