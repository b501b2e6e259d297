import * as vscode from 'vscode';

/** Steps of "Get Started with Adventure Storyteller" that tick when the writer has done them. */
export type WalkthroughStep = 'indexed' | 'searched' | 'played' | 'previewed';

/**
 * Ticks a walkthrough step by the context key its completion event waits for. A step ticks for what was
 * done, however it was started (a tree button, the play panel, another command), not only when its own
 * command link was clicked.
 *
 * VS Code counts an `onContext` event only when its expression turns true after the walkthrough was
 * registered, which happens seconds after start-up: a campaign opened and indexed before that would never
 * tick. So each step waits on its key twice, once with the walkthrough page active and once without
 * (package.json): whichever was true at registration, the other turns true when the writer opens or
 * leaves the page.
 */
export function walkthroughDone(step: WalkthroughStep): void {
  void vscode.commands.executeCommand('setContext', `storyteller.walkthrough.${step}`, true);
}
