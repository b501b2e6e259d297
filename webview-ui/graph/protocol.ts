// The Campaign Graph's message protocol, validated on both sides like the play panel's. Zod's mini build:
// the full one was 454 KB of the graph's 476 KB script; this one is tree-shaken to what the schemas use.
import * as z from 'zod/mini';

/** The kinds with colours of their own; a campaign's own kinds (`Monsters`, `tumulted-sea`) take the palette's. */
export const KNOWN_KINDS = ['character', 'place', 'faction', 'item', 'other'] as const;
/** Canon nodes are entities; Reference and Inspiration nodes are files that name canon entities. */
export const GRAPH_CLASSES = ['canon', 'reference', 'inspiration'] as const;

const GraphNode = z.object({
  /** The entity's key. */
  id: z.string(),
  label: z.string(),
  /** What the campaign calls its kind: a known kind, else its own `type:` or folder word (Entity.group). */
  kind: z.string(),
  /** Mentions elsewhere in the campaign: sets the node's size. */
  mentions: z.number().check(z.nonnegative()),
  /** A Reference or Inspiration file's weak mentions of canon (the bare everyday word, see Mention.weak); 0 for entities. */
  weakMentions: z.number().check(z.nonnegative()),
  /** Where it is defined (campaign-relative), the folder filter's key. */
  path: z.string(),
  summary: z.string(),
  neverMentioned: z.boolean(),
  /** No played turn retrieved its files (false while nothing was played). */
  neverRetrieved: z.boolean(),
  class: z.enum(GRAPH_CLASSES),
  /** Defined only in superseded sources: the sources that supersede them (empty for the rest). Drawn faded. */
  supersededBy: z.array(z.string()),
});
export type GraphNode = z.infer<typeof GraphNode>;

/** `count` mentions, `weak` more that are only the bare everyday word: an edge of weak mentions alone is drawn as doubtful. */
const GraphEdge = z.object({ from: z.string(), to: z.string(), count: z.number().check(z.nonnegative()), weak: z.number().check(z.nonnegative()), linked: z.boolean() });
export type GraphEdge = z.infer<typeof GraphEdge>;

/** A node's position: id, x, y. */
const Placed = z.tuple([z.string(), z.number(), z.number()]);

const ConflictSide = z.object({ value: z.string(), path: z.string(), line: z.int().check(z.positive()) });
/**
 * Canon contradicting itself: `from` is the entity defined in side a's file, `to` the one in side b's (the
 * same node when both files define it).
 */
const GraphConflict = z.object({ from: z.string(), to: z.string(), entity: z.string(), attribute: z.string(), a: ConflictSide, b: ConflictSide });
export type GraphConflict = z.infer<typeof GraphConflict>;

const SuggestionSide = z.object({ quote: z.string(), path: z.string(), line: z.int().check(z.positive()) });
/**
 * A contradiction the model suggested (Check Canon Consistency) that the writer has not yet accepted or
 * dismissed: a suggestion, never a finding, so it is drawn apart from the conflicts canon's facts show.
 */
const GraphSuggestion = z.object({ from: z.string(), to: z.string(), entity: z.string(), explanation: z.string(), a: SuggestionSide, b: SuggestionSide });
export type GraphSuggestion = z.infer<typeof GraphSuggestion>;

export const GraphHostMessage = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('graph'),
    /** The campaign's folder: what the webview saves to be drawn again after the window reloads. */
    campaignRoot: z.string(),
    campaignTitle: z.string(),
    nodes: z.array(GraphNode),
    edges: z.array(GraphEdge),
    conflicts: z.array(GraphConflict),
    suggestions: z.array(GraphSuggestion),
    /** Where an earlier webview of this campaign placed its nodes, sent to a new one: it opens on the same picture at once. */
    placed: z.array(Placed),
  }),
]);
export type GraphHostMessage = z.infer<typeof GraphHostMessage>;

/** What the graph's webview keeps across a window reload (vscode.setState), read back by the panel serializer. */
export const GraphState = z.object({ campaignRoot: z.string(), placed: z.array(Placed) });
export type GraphState = z.infer<typeof GraphState>;

export const GraphWebviewMessage = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready') }),
  /** Open the node's file: an entity's at its heading. */
  z.object({ type: z.literal('open'), id: z.string() }),
  /** The layout after it placed new nodes, kept by the extension for the campaign's next webview. */
  z.object({ type: z.literal('placed'), placed: z.array(Placed) }),
  /** Open one side of a conflict: a campaign file at a 1-based line. */
  z.object({ type: z.literal('openAt'), path: z.string(), line: z.int().check(z.positive()) }),
]);
export type GraphWebviewMessage = z.infer<typeof GraphWebviewMessage>;
