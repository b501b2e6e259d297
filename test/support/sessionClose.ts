import type { CampaignSession } from '../../src/session/session';

/** Reindexes and closes the session once the import has stored `afterFiles` files; resolves with the
 * reindex's report (undefined when the close cancelled it) after the close has finished. */
export async function reindexClosingMidway(session: CampaignSession, afterFiles = 2): Promise<unknown> {
  let closing: Promise<void> | undefined;
  const sub = session.indexing.onDidChangeState((state) => {
    if (state.kind === 'indexing' && state.done >= afterFiles) closing ??= session.close();
  });
  const report = await session.reindex();
  sub.dispose();
  await closing;
  return report;
}
