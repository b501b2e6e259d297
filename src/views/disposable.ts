import type * as vscode from 'vscode';

/** Owns the disposables it registers and releases them, newest first, exactly once. */
export abstract class Disposable implements vscode.Disposable {
  private readonly _disposables: vscode.Disposable[] = [];
  private _isDisposed = false;

  protected get isDisposed(): boolean {
    return this._isDisposed;
  }

  protected _register<T extends vscode.Disposable>(disposable: T): T {
    if (this._isDisposed) {
      disposable.dispose();
    } else {
      this._disposables.push(disposable);
    }
    return disposable;
  }

  dispose(): void {
    if (this._isDisposed) return;
    this._isDisposed = true;
    for (const disposable of this._disposables.splice(0).reverse()) disposable.dispose();
  }
}
