import { describeBackend, type ModelBackend, type ModelProvider } from './backend';

/**
 * What the product knows of a model's tool use, in one place: what each kind of server takes (written from
 * the servers' documentation, not measured), and what each model on each server has shown (learned in
 * play, remembered through a port the surface persists).
 */

export interface ServerToolTraits {
  /** Whether a request may say `tool_choice: "required"` so the model must call a tool. */
  toolChoiceRequired: boolean;
  /** Where the context window of a researching model comes from. */
  contextWindow: 'api-show' | 'setting';
  /** Said in the docs and in a refusal's reason. */
  note: string;
}

/**
 * Per kind of server. A server that turns out not to take `tool_choice` (400 naming it) is asked again
 * without it, and from then on for that model.
 */
export const SERVER_TOOL_TRAITS: Record<ModelProvider, ServerToolTraits> = {
  ollama: {
    toolChoiceRequired: false,
    contextWindow: 'api-show',
    note: "Ollama's /api/chat has no tool_choice; /api/show lists a model's capabilities and its context_length",
  },
  'openai-compatible': {
    toolChoiceRequired: true,
    contextWindow: 'setting',
    note: 'the OpenAI API, vLLM (0.8.3 and later), llama.cpp\'s server (with --jinja) and LM Studio document tool_choice "required"; the context window is storyteller.narrator.contextWindow, else what /v1/models reports',
  },
};

/** What a model on a server has shown about tools: it used them, or refused them (HTTP 400, or prose every time it was offered them). */
export interface ToolSupportVerdict {
  tools: 'native' | 'refused';
  /** In plain words: the server's refusal, or "answered in prose twice in a row though offered tools". */
  reason: string;
  /** ISO time it was learned. */
  since: string;
}

/** Where verdicts are kept: the extension's workspace state, or a process's memory (the CLI). */
export interface ToolSupportMemory {
  get(key: string): ToolSupportVerdict | undefined;
  set(key: string, verdict: ToolSupportVerdict): void;
  /** Forgets every verdict; returns the models forgotten, as `toolSupportName` says them. */
  forget(): string[];
}

/** One model on one server: the same name on two servers may be two models. */
export function toolSupportKey(backend: Pick<ModelBackend, 'provider' | 'baseUrl'>, model: string): string {
  return JSON.stringify([backend.provider, backend.baseUrl, model]);
}

/** A key as a writer reads it: "'llama3.2' on Ollama at http://…". */
export function toolSupportName(key: string): string {
  const [provider, baseUrl, model] = JSON.parse(key) as [ModelProvider, string, string];
  return `'${model}' on ${describeBackend({ provider, baseUrl })}`;
}

/** Verdicts for one process: what the CLI keeps. */
export class ProcessToolSupport implements ToolSupportMemory {
  private readonly verdicts = new Map<string, ToolSupportVerdict>();

  get(key: string): ToolSupportVerdict | undefined {
    return this.verdicts.get(key);
  }

  set(key: string, verdict: ToolSupportVerdict): void {
    this.verdicts.set(key, verdict);
  }

  forget(): string[] {
    const names = [...this.verdicts.keys()].map(toolSupportName);
    this.verdicts.clear();
    return names;
  }
}
