// One bounded wait for both sides of the integration run: the driver (Playwright's evaluate, content and `$`
// have no timeout of their own, and a frame that is detaching or busy may never answer them) and the suite
// (an index settling, a command finishing: a test must fail by its own bounded waits, before mocha's timeout
// abandons it still running beside the next test).

/** Resolves as `work` does, or rejects naming `what` after `timeoutMs`. */
export async function within<T>(work: PromiseLike<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}
