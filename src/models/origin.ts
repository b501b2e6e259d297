import { retryingStaleConnection } from './staleConnection';

/**
 * A model server answered with a redirect to another origin. It is not followed: the request carries the
 * prompt (narrator-only canon included) and any API key, and goes only to the server the writer chose.
 */
export class RedirectRefusedError extends Error {
  constructor(
    readonly status: number,
    /** Where it pointed, without any user name or password. */
    readonly location: string,
  ) {
    super(`answered ${status} with a redirect to ${location}; not followed, since a request (the prompt, and any key) goes only to the server you chose. If that server is the right one, set the base URL to it`);
    this.name = 'RedirectRefusedError';
  }
}

/** An error of class `kind` behind a client's error, however deeply the client wrapped it. */
export function causeOf<T extends Error>(error: unknown, kind: abstract new (...args: never[]) => T): T | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof kind) return e;
  }
  return undefined;
}

/** A URL as it may be shown: user name and password left out. */
export function withoutCredentials(url: URL): string {
  const shown = new URL(url);
  shown.username = '';
  shown.password = '';
  return shown.toString();
}

const MAX_REDIRECTS = 5;

/**
 * A fetch that follows a redirect only within the origin it was sent to (a server moving `/v1/x` to
 * `/v1/x/`), and ends in `RedirectRefusedError` for one to anywhere else. Fetch's own following would send
 * the whole request on without a word. Every model request goes through here, so this is also where a request
 * lost to a server's closing of an idle connection is sent again (see staleConnection.ts).
 */
export function sameOriginFetch(base: typeof fetch = fetch): typeof fetch {
  const send = retryingStaleConnection(base);
  return async (input, init) => {
    let url = new URL(input instanceof Request ? input.url : input);
    for (let hop = 0; ; hop++) {
      const response = await send(url, { ...init, redirect: 'manual' });
      const location = response.status >= 300 && response.status < 400 ? response.headers.get('location') : null;
      if (location === null) return response;
      await response.body?.cancel();
      const next = new URL(location, url);
      if (next.origin !== url.origin || hop >= MAX_REDIRECTS) throw new RedirectRefusedError(response.status, withoutCredentials(next));
      url = next;
    }
  };
}
