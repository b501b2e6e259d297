// Model servers: where they are and how they are reached.
export { resolveOllamaHost } from './ollamaHost';
