// The play panel's message protocol, validated with zod on both sides: the host never trusts what the
// webview posts, and the webview never trusts what arrives (a stale or foreign message is dropped).
import { z } from 'zod';

const TurnView = z.object({
  id: z.string(),
  actionKind: z.string(),
  action: z.string(),
  narration: z.string(),
  status: z.enum(['pending', 'streaming', 'complete', 'incomplete', 'error']),
  error: z.string().nullable(),
  /** The turn's place in its branch, counted from 1. */
  number: z.number(),
  /** The replies to the same moment (retries, edits, forks), to flip between in place. */
  siblings: z.object({ index: z.number(), count: z.number(), previousId: z.string().nullable(), nextId: z.string().nullable() }),
});
export type TurnView = z.infer<typeof TurnView>;

const ContextPassageView = z.object({ title: z.string(), detail: z.string() });

/** A section's budget drawn as a stacked bar (src/story/contextReport.ts budgetBar): widths are tokens over scale. */
const BudgetBarView = z.object({
  scale: z.number().positive(),
  used: z.number(),
  budget: z.number().nullable(),
  segments: z.array(z.object({ kind: z.enum(['item', 'frame', 'left-out']), tokens: z.number().nonnegative(), title: z.string(), detail: z.string() })),
  unsizedLeftOut: z.number(),
});
export type BudgetBarView = z.infer<typeof BudgetBarView>;

const ContextSectionView = z.object({
  id: z.string(),
  /** The prompt's own heading; `label` and `note` are how the panel names it. */
  title: z.string(),
  label: z.string(),
  note: z.string(),
  tokens: z.number(),
  budget: z.number().nullable(),
  text: z.string(),
  items: z.array(ContextPassageView),
  leftOut: z.array(ContextPassageView),
  bar: BudgetBarView,
});
export type ContextSectionView = z.infer<typeof ContextSectionView>;

/** The writer's setup of the adventure, as edited in the panel (limits as the play store enforces them). */
export const AdventureSetup = z.object({
  persona: z.object({ name: z.string().max(80), pronouns: z.string().max(40), description: z.string().max(4000) }),
  plotEssentials: z.string().max(20_000),
  authorsNote: z.string().max(20_000),
});
export type AdventureSetup = z.infer<typeof AdventureSetup>;

/** The head turn's world state as the narrator is told it (one line per character, the world, flags, milestones). */
const WorldStateView = z.object({
  tracked: z.boolean(),
  lines: z.array(z.string()),
  /** What the head turn changed, path by path (`player.hp → 95`). */
  changes: z.array(z.string()),
  /** What the model proposed last turn that was refused, and why. */
  refusals: z.array(z.string()),
});
export type WorldStateView = z.infer<typeof WorldStateView>;

/** What the webview keeps across reloads (vscode.setState), read back by the panel serializer. */
export const PanelState = z.object({ campaignRoot: z.string(), adventureId: z.string() });
export type PanelState = z.infer<typeof PanelState>;

/** The webview's own saved state: the panel state plus a setup the writer has not saved yet. */
export const WebviewState = PanelState.extend({ setupDraft: AdventureSetup.optional() });
export type WebviewState = z.infer<typeof WebviewState>;

export const HostMessage = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('state'),
    panelState: PanelState,
    campaignTitle: z.string(),
    adventure: z.object({ id: z.string(), title: z.string() }),
    turns: z.array(TurnView),
    setup: AdventureSetup,
    worldState: WorldStateView,
    generating: z.boolean(),
    model: z.string(),
  }),
  z.object({ type: z.literal('chunk'), turnId: z.string(), text: z.string() }),
  z.object({
    type: z.literal('context'),
    used: z.number(),
    /** The budget it was assembled within; null for a context read back from a turn's snapshot. */
    total: z.number().nullable(),
    sections: z.array(ContextSectionView),
    warnings: z.array(z.string()),
    /** What research looked up before this context was packed, one line a step; empty when none ran. */
    research: z.array(z.string()),
    /** SillyTavern World Info: the headline, then each entry fired or held back and why; empty when the campaign has none. */
    worldInfo: z.array(z.string()),
  }),
  z.object({ type: z.literal('error'), message: z.string() }),
  /** Something the writer should know that is not a failure (where a fork left the later turns). */
  /** What just happened, in words; `offer` a button that takes it back (Redo after an Undo, Undo after a delete). */
  z.object({ type: z.literal('notice'), message: z.string(), offer: z.object({ id: z.string(), label: z.string() }).optional() }),
  /** The action typed in the box is stored as a turn: only now may the box be cleared. */
  z.object({ type: z.literal('accepted'), text: z.string() }),
  z.object({ type: z.literal('setupSaved') }),
  /** A keybinding (Ctrl+Enter and its kin, which the writer can change) plays what the action box holds. */
  z.object({ type: z.literal('send'), kind: z.enum(['do', 'say', 'story']) }),
  /** A turn opened from the Adventure Map: the story scrolls to it and marks it. */
  z.object({ type: z.literal('reveal'), turnId: z.string() }),
  /** The narrator model and its server as the preflight last found them; `problem` says what is wrong. */
  z.object({ type: z.literal('server'), narrator: z.string(), problem: z.string().nullable() }),
]);
export type HostMessage = z.infer<typeof HostMessage>;

export const WebviewMessage = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready') }),
  z.object({ type: z.literal('act'), kind: z.enum(['do', 'say', 'story']), text: z.string().trim().min(1).max(20_000) }),
  z.object({ type: z.literal('stop') }),
  z.object({ type: z.literal('retry') }),
  z.object({ type: z.literal('undo') }),
  z.object({ type: z.literal('fork'), turnId: z.string() }),
  /** Show another reply to the same moment (a swipe). */
  z.object({ type: z.literal('switch'), turnId: z.string() }),
  /** Delete one reply to a moment (a swipe) and everything after it; the notice offers Undo. */
  z.object({ type: z.literal('deleteReply'), turnId: z.string() }),
  /** The writer took a notice's offer. */
  z.object({ type: z.literal('takeOffer'), id: z.string() }),
  z.object({ type: z.literal('preview'), text: z.string().max(20_000) }),
  z.object({ type: z.literal('editAction'), turnId: z.string(), text: z.string().trim().min(1).max(20_000) }),
  z.object({ type: z.literal('saveSetup'), setup: AdventureSetup }),
  z.object({ type: z.literal('fixServer') }),
]);
export type WebviewMessage = z.infer<typeof WebviewMessage>;

