// Worker-thread entry (bundled as dist/parse-worker.js): parses source text off the caller's thread.
import { parentPort } from 'node:worker_threads';
import { parseDocument } from './chunker';
import type { ParseRequest, ParseResponse } from './parsePool';

parentPort?.on('message', (request: ParseRequest) => {
  let response: ParseResponse;
  try {
    response = { id: request.id, ok: true, document: parseDocument(request.text, request.kind) };
  } catch (error) {
    response = { id: request.id, ok: false, error: error instanceof Error ? error.message : String(error) };
  }
  parentPort?.postMessage(response);
});
