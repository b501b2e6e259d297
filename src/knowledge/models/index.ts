// Model servers: where they are and how they are reached.
export { resolveOllamaHost } from './ollamaHost';
export { API_KEY_ENV, BackendConfigError, MODEL_PROVIDERS, describeBackend, resolveBackend } from './backend';
export type { ModelBackend, ModelProvider } from './backend';
export { classifyOpenAIError, describeServerFailure, openAIClient } from './openaiClient';
export type { ServerFailure, ServerFailureKind } from './openaiClient';
export { OpenAICompatibleEmbedder, embedderFor } from './openaiEmbedder';
export { ModelServerError, checkServer, listModels, ollamaClient, ollamaContextLength, pullOllamaModel } from './servers';
export type { PullProgress, ServerCheck, ServerModel } from './servers';
export type { ToolCallRequest, ToolChatClient, ToolChatMessage, ToolChatOptions, ToolChatReply, ToolProtocol, ToolSpec } from './toolCalls';
export { toolChatFor } from './toolCalls';
export { OllamaToolChat } from './ollamaToolChat';
export { OpenAIToolChat } from './openaiToolChat';
export { ToolsRefusedError } from './toolReply';
