import path from 'node:path';
import * as vscode from 'vscode';
import { findCampaignRoot } from '../knowledge/campaign';
import type { CampaignRegistry } from './campaigns';

/**
 * The folder a new campaign goes in (New Campaign, Open Example Campaign): `given`, else the writer's choice
 * in a dialog that starts beside the open campaign. Campaigns do not nest, so a folder inside one — of the
 * workspace, or only on disk (its campaign.yaml says so) — is refused, named, and nothing is written.
 */
export async function chooseFolderOutsideCampaigns(
  campaigns: CampaignRegistry,
  given: vscode.Uri | undefined,
  dialog: { openLabel: string; title: string },
): Promise<vscode.Uri | undefined> {
  await campaigns.ready();
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  const open = folder && campaigns.campaignOf(folder.fsPath);
  const parent =
    given ??
    (await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, defaultUri: open ? vscode.Uri.file(path.dirname(open.root)) : folder, ...dialog }))?.[0];
  if (!parent) return undefined;
  const enclosing = campaigns.campaignOf(parent.fsPath);
  const enclosingRoot = enclosing ? undefined : findCampaignRoot(parent.fsPath);
  if (enclosing || enclosingRoot) {
    const which = enclosing ? `the campaign "${enclosing.title}"` : `the campaign at ${enclosingRoot}`;
    // Said before the path, which a notification cuts first.
    void vscode.window.showErrorMessage(`Choose a folder outside ${which}: campaigns do not nest, and ${parent.fsPath} is inside it.`);
    return undefined;
  }
  return parent;
}

/**
 * A campaign just written outside the workspace is in no view: with no folder open it is opened; else the
 * writer opens it or adds it beside the others ('add' adds it unasked, 'none' leaves it to the caller).
 */
export function offerCampaign(root: vscode.Uri, said: string, then: 'ask' | 'add' | 'none'): void {
  const add = (): void => void vscode.workspace.updateWorkspaceFolders(vscode.workspace.workspaceFolders?.length ?? 0, 0, { uri: root });
  if (vscode.workspace.getWorkspaceFolder(root)) {
    void vscode.window.showInformationMessage(`${said} It is in Sources.`);
  } else if (then === 'none') {
    return;
  } else if (!vscode.workspace.workspaceFolders?.length) {
    void vscode.commands.executeCommand('vscode.openFolder', root);
  } else if (then === 'add') {
    add();
    void vscode.window.showInformationMessage(`${said} Added to the workspace: it is in Sources.`);
  } else {
    void vscode.window.showInformationMessage(`${said} It is outside this workspace: open it, or add it to see it in Sources.`, 'Open Folder', 'Add to Workspace').then(async (choice) => {
      if (choice === 'Open Folder') await vscode.commands.executeCommand('vscode.openFolder', root);
      if (choice === 'Add to Workspace') add();
    });
  }
}
