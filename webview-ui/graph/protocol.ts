// The Campaign Graph's message protocol, validated on both sides like the play panel's.
import { z } from 'zod';

export const GRAPH_KINDS = ['character', 'place', 'faction', 'item', 'other'] as const;

const GraphNode = z.object({
  /** The entity's key. */
  id: z.string(),
  label: z.string(),
  kind: z.enum(GRAPH_KINDS),
  /** Mentions elsewhere in the campaign: sets the node's size. */
  mentions: z.number().nonnegative(),
  /** Where it is defined (campaign-relative), the folder filter's key. */
  path: z.string(),
  summary: z.string(),
  neverMentioned: z.boolean(),
  /** No played turn retrieved its files (false while nothing was played). */
  neverRetrieved: z.boolean(),
});
export type GraphNode = z.infer<typeof GraphNode>;

const GraphEdge = z.object({ from: z.string(), to: z.string(), count: z.number().positive(), linked: z.boolean() });
export type GraphEdge = z.infer<typeof GraphEdge>;

export const GraphHostMessage = z.discriminatedUnion('type', [
  z.object({ type: z.literal('graph'), campaignTitle: z.string(), nodes: z.array(GraphNode), edges: z.array(GraphEdge) }),
]);
export type GraphHostMessage = z.infer<typeof GraphHostMessage>;

export const GraphWebviewMessage = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready') }),
  /** Open the entity's file at its heading. */
  z.object({ type: z.literal('open'), id: z.string() }),
]);
export type GraphWebviewMessage = z.infer<typeof GraphWebviewMessage>;
