/**
 * Most characters one narrator reply may have. A model stuck in a loop (or a server that never stops)
 * would otherwise grow a turn without bound in play.db and in the panel; past this the reply is cut and
 * kept as incomplete.
 */
export const MAX_REPLY_CHARS = 60_000;

export function replyTooLargeMessage(server: string): string {
  return `${server} kept writing past ${MAX_REPLY_CHARS.toLocaleString('en')} characters; the reply was cut there and kept as incomplete`;
}
