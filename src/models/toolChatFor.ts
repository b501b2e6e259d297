import type { ModelBackend } from './backend';
import { OllamaToolChat } from './ollamaToolChat';
import { OpenAIToolChat } from './openaiToolChat';
import type { ToolChatClient } from './toolCalls';

/** The tool-chat client for whichever kind of server the backend names. */
export function toolChatFor(backend: ModelBackend, options: { stream?: boolean } = {}): ToolChatClient {
  return backend.provider === 'ollama' ? new OllamaToolChat(backend, options) : new OpenAIToolChat(backend, options);
}
