// Model servers: where they are, how they are reached, and every conversation with them (the one room that talks to a model).
export { resolveOllamaHost } from './ollamaHost';
export { API_KEY_ENV, BackendConfigError, MODEL_PROVIDERS, describeBackend, refuseCredentials, resolveBackend } from './backend';
export { RedirectRefusedError } from './origin';
export type { ModelBackend, ModelProvider } from './backend';
export { classifyOpenAIError, describeServerFailure, openAIClient } from './openaiClient';
export type { ServerFailure, ServerFailureKind } from './openaiClient';
export { DEFAULT_EMBED_TIMEOUT_MS, OllamaEmbedder } from './embedder';
export type { Embedder } from './embedder';
export { OpenAICompatibleEmbedder, embedderFor } from './openaiEmbedder';
export { ModelServerError, checkServer, listModels, ollamaClient, ollamaContextLength, pullOllamaModel } from './servers';
export type { PullProgress, ServerCheck, ServerModel } from './servers';
export { NarratorError, OllamaNarrator } from './narrator';
export type { ChatMessage, GenerateRequest, GenerateResult, Narrator, NarratorErrorKind } from './narrator';
export { OpenAICompatibleNarrator, narratorFor } from './openaiNarrator';
export { OllamaJsonChat } from './jsonChat';
export { DEFAULT_REPLY_DEADLINE_MS, DEFAULT_REPLY_TOKENS, MAX_REPLY_BYTES, ReplyTooLargeError, cappedFetch } from './replyLimits';
export { neutralizeMarkers, promptField } from './promptField';
export type { ToolCallRequest, ToolChatClient, ToolChatMessage, ToolChatOptions, ToolChatReply, ToolProtocol, ToolSpec } from './toolCalls';
