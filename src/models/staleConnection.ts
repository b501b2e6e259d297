import diagnostics from 'node:diagnostics_channel';

/**
 * Many servers close a kept-alive connection after a few idle seconds (Python's servers among them). When that
 * close crosses the next request, the request dies on the old connection before any byte of a reply comes
 * back: it never reached a model, so it is sent once more, on a fresh connection. fetch (undici) reports on
 * its diagnostics channels which socket carried each request, so a reused socket (one that had read an earlier
 * reply) that read nothing more before failing is told apart from any other failure. A request that got any
 * byte back is never sent again: the server may already be generating, and would generate twice.
 */

interface Sent {
  socket: { bytesRead: number };
  /** Bytes the socket had read before this request: more than 0 when an earlier reply came over it. */
  readBefore: number;
}

const sentOn = new WeakMap<object, Sent>();
const diedUnanswered = new WeakSet<object>();
let watching = false;

function watchConnections(): void {
  if (watching) return;
  watching = true;
  diagnostics.subscribe('undici:client:sendHeaders', (message) => {
    const { request, socket } = message as { request: object; socket: { bytesRead: number } };
    sentOn.set(request, { socket, readBefore: socket.bytesRead });
  });
  diagnostics.subscribe('undici:request:error', (message) => {
    const { request, error } = message as { request: object; error: unknown };
    const sent = sentOn.get(request);
    if (sent && sent.readBefore > 0 && sent.socket.bytesRead === sent.readBefore && typeof error === 'object' && error !== null) diedUnanswered.add(error);
  });
}

/** Whether fetch failed because the reused connection it was sent on closed before any byte came back. */
function diedOnStaleConnection(error: unknown): boolean {
  const cause = error instanceof Error ? error.cause : undefined;
  return typeof cause === 'object' && cause !== null && diedUnanswered.has(cause);
}

/** `base`, with a request that died unanswered on a reused connection sent once more; a streamed body cannot be sent twice. */
export function retryingStaleConnection(base: typeof fetch): typeof fetch {
  watchConnections();
  return async (input, init) => {
    try {
      return await base(input, init);
    } catch (error) {
      const resendable = !(input instanceof Request) && !(init?.body instanceof ReadableStream);
      if (!resendable || init?.signal?.aborted || !diedOnStaleConnection(error)) throw error;
      return base(input, init);
    }
  };
}
