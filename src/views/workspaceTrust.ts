import * as vscode from 'vscode';

/**
 * Whether `action` (something that sends the story to a model server or writes files) may run: in a
 * workspace the writer has not trusted it waits, and the writer is told why and where trust is given.
 * The commands are also disabled there (`isWorkspaceTrusted` in package.json); this covers calls from
 * buttons, links and other extensions, which enablement does not.
 */
export function trustedFor(action: string): boolean {
  if (vscode.workspace.isTrusted) return true;
  void vscode.window
    .showWarningMessage(`${action} waits until you trust this workspace: in a workspace you have not trusted, Storyteller sends nothing to a model server and writes no files.`, 'Manage Workspace Trust')
    .then((choice) => choice && vscode.commands.executeCommand('workbench.trust.manage'));
  return false;
}
