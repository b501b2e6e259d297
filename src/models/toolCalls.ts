import type { ModelBackend } from './backend';

/**
 * The contract for a conversation in which the model may call tools (research, canon proposals). Both
 * providers speak it: Ollama through `tools` / `tool_calls`, OpenAI-compatible servers through `tools`
 * with streamed tool-call deltas; a server that cannot take tools falls back to a JSON reply protocol.
 * Everything a model returns here is untrusted: names and arguments are checked by the caller.
 */

/** A tool the model may call: its name, what it does in plain words, and JSON Schema for its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** One call as the model wrote it. The arguments stay unparsed text: the caller validates them. */
export interface ToolCallRequest {
  id: string;
  name: string;
  argumentsText: string;
}

export type ToolChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCallRequest[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string };

/** How the model was asked to call tools: natively, or through the JSON reply protocol. */
export type ToolProtocol = 'native' | 'json';

export interface ToolChatReply {
  content: string;
  toolCalls: ToolCallRequest[];
  protocol: ToolProtocol;
  /** Why the reply ended, as the server said it ('stop', 'tool_calls', 'length'), or 'cut' when the client stopped it. */
  finishReason: string;
}

export interface ToolChatOptions {
  model: string;
  /** Most tokens the reply may have: sent to the server and enforced by the client. */
  maxTokens: number;
  /** Whole-reply deadline. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Never fall back to the JSON reply protocol: a model that cannot use tools is a ToolsRefusedError. */
  nativeOnly?: boolean;
  /** Ask that the model call a tool (`tool_choice: "required"`) where the server takes it (SERVER_TOOL_TRAITS). */
  requireToolCall?: boolean;
  /** The context window the conversation is fitted to: Ollama is asked for it (`num_ctx`), as it otherwise uses its own default. */
  contextWindow?: number;
}

/** A conversation with tools on one backend; implementations live beside the provider clients. */
export interface ToolChatClient {
  readonly backend: ModelBackend;
  /** Whether the model takes tools natively (else the JSON reply protocol is used), as far as the server has said. */
  canUseTools?(model: string, signal?: AbortSignal): Promise<boolean>;
  chat(messages: ToolChatMessage[], tools: ToolSpec[], options: ToolChatOptions): Promise<ToolChatReply>;
}

