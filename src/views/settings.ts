import * as vscode from 'vscode';
import { z } from 'zod';
import { resolveOllamaHost } from '../knowledge/models';
import { DEFAULTS, type StorytellerSettings as CoreSettings } from '../session';
import { Disposable } from './disposable';

const SECTION = 'storyteller';

/**
 * The extension's settings as the code uses them. Each key matches a `storyteller.*` setting contributed
 * in package.json (where the descriptions and defaults live); a value that fails validation is named to
 * the writer and its default used instead, so one typo never breaks the rest.
 */
const SETTINGS = {
  'ollama.host': z.string().trim(),
  'narrator.model': z.string().trim().min(1, 'must name a model, e.g. llama3.1:8b'),
  'embedding.model': z.string().trim(),
  'context.length': z.number().int().min(512, 'must be at least 512 tokens'),
  'context.budgets': z
    .object({
      alwaysInclude: z.number().int().min(0),
      canon: z.number().int().min(0),
      reference: z.number().int().min(0),
      inspiration: z.number().int().min(0),
    })
    .strict(),
  'index.sizeCapBytes': z.number().int().positive('must be a positive number of bytes'),
  'memory.cadence': z.number().int().min(1, 'must be at least 1 turn'),
} as const;

type SettingKey = keyof typeof SETTINGS;
type RawSettings = { [K in SettingKey]: z.infer<(typeof SETTINGS)[K]> };

/** The defaults of each setting: the shared defaults module, which package.json's contributed defaults match. */
const DEFAULT_OF: RawSettings = {
  'ollama.host': DEFAULTS.ollamaHost,
  'narrator.model': DEFAULTS.narratorModel,
  'embedding.model': DEFAULTS.embeddingModel,
  'context.length': DEFAULTS.contextLength,
  'context.budgets': { ...DEFAULTS.budgets },
  'index.sizeCapBytes': DEFAULTS.sizeCapBytes,
  'memory.cadence': DEFAULTS.memoryCadence,
};

export interface StorytellerSettings extends CoreSettings {
  /** Messages for the settings that were rejected, e.g. "storyteller.context.length must be at least 512 tokens". */
  problems: string[];
}

export function readSettings(config: vscode.WorkspaceConfiguration): StorytellerSettings {
  const problems: string[] = [];
  const value = <K extends SettingKey>(key: K): RawSettings[K] => {
    const raw = config.get(key);
    const parsed = SETTINGS[key].safeParse(raw);
    if (parsed.success) return parsed.data as RawSettings[K];
    problems.push(`${SECTION}.${key} ${parsed.error.issues[0]?.message ?? 'is invalid'}; using the default`);
    return DEFAULT_OF[key];
  };
  return {
    ollamaHost: resolveOllamaHost(value('ollama.host')),
    narratorModel: value('narrator.model'),
    embeddingModel: value('embedding.model'),
    contextLength: value('context.length'),
    budgets: value('context.budgets'),
    sizeCapBytes: value('index.sizeCapBytes'),
    memoryCadence: value('memory.cadence'),
    problems,
  };
}

export class Settings extends Disposable {
  private readonly _onDidChange = this._register(new vscode.EventEmitter<StorytellerSettings>());
  readonly onDidChange = this._onDidChange.event;
  current: StorytellerSettings;

  constructor(private readonly log: vscode.LogOutputChannel) {
    super();
    this.current = this.read();
    this._register(
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (!event.affectsConfiguration(SECTION)) return;
        this.current = this.read();
        this._onDidChange.fire(this.current);
      }),
    );
  }

  private read(): StorytellerSettings {
    const settings = readSettings(vscode.workspace.getConfiguration(SECTION));
    for (const problem of settings.problems) {
      this.log.warn(problem);
      void vscode.window.showWarningMessage(problem, 'Open Settings').then((choice) => {
        if (choice) void vscode.commands.executeCommand('workbench.action.openSettings', SECTION);
      });
    }
    return settings;
  }
}
