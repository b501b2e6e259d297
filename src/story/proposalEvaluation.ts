import { atxHeading, type Campaign } from '../knowledge/campaign';
import type { KnowledgeStore } from '../knowledge/indexing';
import type { ToolChatClient } from '../models';
import { proposeCanonUpdates } from './proposalDrafting';
import { campaignAdventure, PlayStore } from './playStore';
import { diskReader, type CanonProposal, type ReadFile } from './proposals';
import { TokenEstimator } from './tokenEstimator';
import { initialState } from './worldState';

/**
 * Canon proposals scored against the edits the writer expects (eval.yaml's `proposals:`): each item is one
 * played exchange, proposed on through the same door as `storyteller propose` (proposeCanonUpdates: the
 * model's propose_edit calls, then validation), in a scratch play store so nothing is played or written.
 */

/** An edit the exchange should bring: to a file (or under a heading in it), carrying these words. */
export interface ExpectedEdit {
  file: string;
  heading: string | null;
  says: string[];
}

export interface ProposalItem {
  /** The player's action; null when the exchange is narration alone. */
  action: string | null;
  narration: string;
  /** Empty: the exchange should propose nothing. */
  expect: ExpectedEdit[];
}

export interface ProposalModelScore {
  model: string;
  /** Expected edits some proposal carried, of ProposalScore.expectedEdits. */
  found: number;
  /** Proposals no expectation of their item matched. */
  unexpected: number;
  /** `expect: nothing` items the model proposed nothing on, of ProposalScore.nothingItems. */
  nothingRight: number;
  /** Drafted edits validation refused (the writer never sees them). */
  refused: number;
  /** Items the model could not draft on at all (its first reply failed). */
  failed: number;
  /** Estimated tokens sent and received per item (the product's estimator: servers do not all report them). */
  tokens: number;
  msPerItem: number;
}

export interface ProposalItemResult {
  /** 1-based, as the writer counts the set's items. */
  item: number;
  model: string;
  narration: string;
  expected: { edit: string; found: boolean }[];
  proposed: { file: string; reason: string; expected: boolean }[];
  refused: { file: string; refusal: string }[];
  failure?: string;
}

export interface ProposalScore {
  items: number;
  expectedEdits: number;
  nothingItems: number;
  models: ProposalModelScore[];
  perItem: ProposalItemResult[];
}

export interface ProposalEvalRun {
  campaign: Pick<Campaign, 'id' | 'root' | 'title' | 'ignore' | 'stats'>;
  store: KnowledgeStore;
  items: readonly ProposalItem[];
  client: ToolChatClient;
  models: readonly string[];
  signal?: AbortSignal;
}

const normalized = (text: string) => text.toLowerCase().replace(/\s+/g, ' ');

function occurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count++;
  return count;
}

/** The headings over `before`'s end, nearest first: each one level up from the last. */
function enclosingHeadings(before: string): string[] {
  const found: string[] = [];
  let level = Infinity;
  for (const line of before.split(/\r?\n/).reverse()) {
    const heading = atxHeading(line);
    if (heading && heading.level < level) {
      found.push(heading.text);
      level = heading.level;
    }
  }
  return found;
}

/** The headings a proposal writes under: those it quotes or writes, and for an edit those its text sits under. */
function headingsOf(proposal: CanonProposal, read: ReadFile): string[] {
  const written = `${proposal.oldText}\n${proposal.newText}`.split(/\r?\n/).flatMap((line) => atxHeading(line)?.text ?? []);
  if (proposal.oldText === '') return written;
  const existing = read(proposal.file);
  const at = existing?.indexOf(proposal.oldText) ?? -1;
  return at < 0 ? written : [...written, ...enclosingHeadings(existing!.slice(0, at))];
}

/**
 * The proposal carries the expected edit: to its file (or the new file standing in for it when it is locked),
 * under its heading when one is named, and adding each of its words (more of them in the new text than the old).
 */
function carries(proposal: CanonProposal, expected: ExpectedEdit, read: ReadFile): boolean {
  if (proposal.file !== expected.file && proposal.supersedes !== expected.file) return false;
  if (expected.heading !== null && !headingsOf(proposal, read).some((h) => h.trim().toLowerCase() === expected.heading!.toLowerCase())) return false;
  const [before, after] = [normalized(proposal.oldText), normalized(proposal.newText)];
  return expected.says.every((words) => occurrences(after, normalized(words)) > occurrences(before, normalized(words)));
}

export function describeExpectedEdit(expected: ExpectedEdit): string {
  return `${expected.file}${expected.heading !== null ? `#${expected.heading}` : ''} says ${expected.says.map((w) => JSON.stringify(w)).join(', ')}`;
}

/** Counts what the drafting conversation sends and receives, as the product's estimator prices it. */
function counted(client: ToolChatClient, estimator: TokenEstimator): { client: ToolChatClient; tokens: () => number } {
  let tokens = 0;
  return {
    client: {
      backend: client.backend,
      chat: async (messages, tools, options) => {
        tokens += estimator.count(messages.map((m) => m.content ?? '').join('\n')) + estimator.count(JSON.stringify(tools));
        const reply = await client.chat(messages, tools, options);
        tokens += estimator.count(`${reply.content}${reply.toolCalls.map((c) => `${c.name}${c.argumentsText}`).join('')}`);
        return reply;
      },
    },
    tokens: () => tokens,
  };
}

/** Each model proposes on each item, one scratch adventure per item; scored against the item's expected edits. */
export async function evaluateProposals(run: ProposalEvalRun): Promise<ProposalScore> {
  const { campaign, items } = run;
  const read = diskReader(campaign.root);
  // In memory: the eval plays nothing into the campaign, and the writer's discards and settled conflicts stay out of it.
  const play = new PlayStore(':memory:');
  try {
    const adventures = items.map((item, i) => {
      const adventure = play.createAdventure(campaignAdventure(campaign, `Evaluation exchange ${i + 1}`));
      const stateAfter = initialState(adventure.statSchema);
      const action = item.action === null ? { kind: 'continue' as const, text: '' } : { kind: 'do' as const, text: item.action };
      const turn = play.createTurn({ adventureId: adventure.id, parentId: null, action, model: null, stateAfter });
      play.finishTurn(turn.id, { status: 'complete', narration: item.narration, error: null, stateDelta: null, stateAfter, refusals: [], promptEvalCount: null, evalCount: null });
      return play.getAdventure(adventure.id)!;
    });
    const score: ProposalScore = {
      items: items.length,
      expectedEdits: items.reduce((n, item) => n + item.expect.length, 0),
      nothingItems: items.filter((item) => item.expect.length === 0).length,
      models: [],
      perItem: [],
    };
    for (const model of run.models) {
      const tally: ProposalModelScore = { model, found: 0, unexpected: 0, nothingRight: 0, refused: 0, failed: 0, tokens: 0, msPerItem: 0 };
      const estimator = new TokenEstimator(model);
      for (const [i, item] of items.entries()) {
        run.signal?.throwIfAborted();
        const drafter = counted(run.client, estimator);
        const started = performance.now();
        const set = await proposeCanonUpdates(
          { campaign, store: run.store, play, adventure: adventures[i]! },
          { client: drafter.client, model, read, ...(run.signal ? { signal: run.signal } : {}) },
        );
        tally.msPerItem += performance.now() - started;
        tally.tokens += drafter.tokens();
        const expected = item.expect.map((e) => ({ edit: describeExpectedEdit(e), found: set.proposals.some((p) => carries(p, e, read)) }));
        const proposed = set.proposals.map((p) => ({ file: p.file, reason: p.reason, expected: item.expect.some((e) => carries(p, e, read)) }));
        tally.found += expected.filter((e) => e.found).length;
        tally.unexpected += proposed.filter((p) => !p.expected).length;
        if (item.expect.length === 0 && proposed.length === 0 && set.modelFailure === undefined) tally.nothingRight++;
        tally.refused += set.refused.length;
        if (set.modelFailure !== undefined) tally.failed++;
        score.perItem.push({
          item: i + 1,
          model,
          narration: item.narration,
          expected,
          proposed,
          refused: set.refused.map((r) => ({ file: r.file, refusal: r.refusal })),
          ...(set.modelFailure !== undefined ? { failure: set.modelFailure } : {}),
        });
      }
      if (items.length > 0) for (const key of ['tokens', 'msPerItem'] as const) tally[key] /= items.length;
      score.models.push(tally);
    }
    return score;
  } finally {
    play.close();
  }
}
