/**
 * The oldest Node.js the CLI runs on. better-sqlite3 13, which holds the index and play data, loads on older
 * versions and then crashes the process (a segmentation fault on Node 20) when it writes.
 */
export const MIN_NODE_MAJOR = 24;

/** Why this Node.js cannot run the CLI, in a writer's words; undefined when it can. */
export function unsupportedNode(version: string): string | undefined {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1]);
  if (major >= MIN_NODE_MAJOR) return undefined;
  return (
    `needs Node.js ${MIN_NODE_MAJOR} or newer, and this is Node.js ${version.replace(/^v?/, '')}: ` +
    `the database library it uses crashes on older versions. Install Node.js ${MIN_NODE_MAJOR}, ` +
    'or run it from the project with `npm run storyteller --`, which uses the Node.js 24 the project installs.'
  );
}
