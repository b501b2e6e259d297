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
});
export type TurnView = z.infer<typeof TurnView>;

const ContextPassageView = z.object({ title: z.string(), detail: z.string() });

const ContextSectionView = z.object({
  id: z.string(),
  title: z.string(),
  tokens: z.number(),
  budget: z.number().nullable(),
  text: z.string(),
  items: z.array(ContextPassageView),
  leftOut: z.array(ContextPassageView),
});
export type ContextSectionView = z.infer<typeof ContextSectionView>;

/** What the webview keeps across reloads (vscode.setState), read back by the panel serializer. */
export const PanelState = z.object({ campaignRoot: z.string(), adventureId: z.string() });
export type PanelState = z.infer<typeof PanelState>;

export const HostMessage = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('state'),
    panelState: PanelState,
    campaignTitle: z.string(),
    adventure: z.object({ id: z.string(), title: z.string() }),
    turns: z.array(TurnView),
    generating: z.boolean(),
    model: z.string(),
  }),
  z.object({ type: z.literal('chunk'), turnId: z.string(), text: z.string() }),
  z.object({
    type: z.literal('context'),
    used: z.number(),
    total: z.number(),
    sections: z.array(ContextSectionView),
    warnings: z.array(z.string()),
  }),
  z.object({ type: z.literal('error'), message: z.string() }),
]);
export type HostMessage = z.infer<typeof HostMessage>;

export const WebviewMessage = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready') }),
  z.object({ type: z.literal('act'), kind: z.enum(['do', 'say', 'story']), text: z.string().trim().min(1).max(20_000) }),
  z.object({ type: z.literal('stop') }),
  z.object({ type: z.literal('retry') }),
  z.object({ type: z.literal('undo') }),
  z.object({ type: z.literal('fork'), turnId: z.string() }),
  z.object({ type: z.literal('preview'), text: z.string().max(20_000) }),
]);
export type WebviewMessage = z.infer<typeof WebviewMessage>;

