// The Adventure Map's message protocol, validated on both sides like the play panel's and the graph's; on
// zod's mini build, as the graph's, so the page carries only what the schemas use.
import * as z from 'zod/mini';

const MapNode = z.object({
  id: z.string(),
  parentId: z.nullable(z.string()),
  row: z.int().check(z.nonnegative()),
  column: z.int().check(z.nonnegative()),
  number: z.int().check(z.positive()),
  actionKind: z.string(),
  action: z.string(),
  summary: z.string(),
  status: z.enum(['pending', 'streaming', 'complete', 'incomplete', 'error']),
  current: z.boolean(),
  head: z.boolean(),
  alternative: z.nullable(z.enum(['swipe', 'fork'])),
  siblings: z.object({ index: z.number(), count: z.number() }),
});
export type MapNode = z.infer<typeof MapNode>;

const MapEdge = z.object({ from: z.string(), to: z.string(), current: z.boolean() });
export type MapEdge = z.infer<typeof MapEdge>;

/** Which adventure a map draws, kept by its webview across a window reload (vscode.setState) for the panel serializer. */
export const MapState = z.object({ campaignRoot: z.string(), adventureId: z.string() });
export type MapState = z.infer<typeof MapState>;

export const MapHostMessage = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('map'),
    target: MapState,
    campaignTitle: z.string(),
    adventureTitle: z.string(),
    /** A turn is being told: fork and undo wait for it. */
    generating: z.boolean(),
    nodes: z.array(MapNode),
    edges: z.array(MapEdge),
    columns: z.int().check(z.nonnegative()),
    rows: z.int().check(z.nonnegative()),
  }),
]);
export type MapHostMessage = z.infer<typeof MapHostMessage>;

export const MapWebviewMessage = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready') }),
  /** Open the turn in the play panel, making its branch the story shown. */
  z.object({ type: z.literal('open'), turnId: z.string() }),
  z.object({ type: z.literal('fork'), turnId: z.string() }),
  z.object({ type: z.literal('undo') }),
]);
export type MapWebviewMessage = z.infer<typeof MapWebviewMessage>;
