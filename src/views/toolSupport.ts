import type * as vscode from 'vscode';
import { toolSupportName, type ToolSupportMemory, type ToolSupportVerdict } from '../models';

const KEY = 'storyteller.toolSupport';

/** What research on auto learned of each model's tools, kept in the workspace's state across windows and restarts. */
export class WorkspaceToolSupport implements ToolSupportMemory {
  constructor(private readonly state: vscode.Memento) {}

  private all(): Record<string, ToolSupportVerdict> {
    return this.state.get<Record<string, ToolSupportVerdict>>(KEY) ?? {};
  }

  get(key: string): ToolSupportVerdict | undefined {
    return this.all()[key];
  }

  set(key: string, verdict: ToolSupportVerdict): void {
    void this.state.update(KEY, { ...this.all(), [key]: verdict });
  }

  forget(): string[] {
    const names = Object.keys(this.all()).map(toolSupportName);
    void this.state.update(KEY, undefined);
    return names;
  }
}
