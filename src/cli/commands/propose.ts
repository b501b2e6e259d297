import path from 'node:path';
import { CampaignError, DATA_DIR } from '../../knowledge/campaign';
import { withWriteLock } from '../../knowledge/files';
import type { PlayStore } from '../../story/playStore';
import { proposeCanonUpdates, type ProposalSet } from '../../story/proposalDrafting';
import {
  ProposalWriteError,
  clearSettledConflicts,
  diskReader,
  listDiscarded,
  proposalDiff,
  restoreDiscarded,
  writeProposals,
  type CanonProposal,
  type DiscardedProposal,
} from '../../story/proposals';
import type { Adventure } from '../../story/types';
import { EXIT, UsageError, emit, stringOption, type Command } from '../command';
import { campaignRootOption, refuse } from './import';
import { openCliSession } from '../knowledgeAccess';
import { oneLine } from '../terminalText';
import { MODEL_SERVER_OPTIONS, MODEL_SERVER_USAGE, backendFromArgs } from '../modelArgs';
import { toolChatFor } from '../../models';

function pickAdventure(play: PlayStore, campaignId: string, id: string | undefined, playPath: string): Adventure {
  if (id) {
    const found = play.getAdventure(id) ?? play.listAdventures(campaignId).find((a) => a.id.startsWith(id));
    if (!found) throw new UsageError(`no adventure '${id}' in ${playPath}`);
    return found;
  }
  const latest = play.listAdventures(campaignId)[0];
  if (!latest) throw new UsageError(`no adventure has been played in this campaign (${playPath}): play one first`);
  return latest;
}

function describeProposal(proposal: CanonProposal, index: number, diff: string): string {
  const turns = proposal.turns.length > 0 ? `turn${proposal.turns.length === 1 ? '' : 's'} ${proposal.turns.map((t) => t.number).join(', ')}` : '';
  const from = [turns, proposal.origin === 'model' ? 'drafted by the model' : ''].filter(Boolean).join('; ');
  return [
    `${index + 1}. ${oneLine(proposal.file)}${from ? ` (${from})` : ''}: ${oneLine(proposal.reason)}`,
    ...(proposal.dropped ? [`   front matter left out: ${proposal.dropped.fields.map(oneLine).join(', ')} — ${oneLine(proposal.dropped.reason)}`] : []),
    ...proposal.evidence.map((e) => `   ${oneLine(e)}`),
    diff,
  ].join('\n');
}

function report(set: ProposalSet, diffs: readonly string[], written: readonly string[] | undefined): string {
  const count = set.proposals.length;
  const lines = [`Canon proposals from "${oneLine(set.adventure.title)}" — ${set.drafting}.`, ''];
  if (count === 0) lines.push('The canon already agrees with this branch: nothing to propose.');
  set.proposals.forEach((p, i) => lines.push(describeProposal(p, i, diffs[i]!), ''));
  if (set.discardedBefore > 0) lines.push(`${set.discardedBefore} proposal${set.discardedBefore === 1 ? '' : 's'} you discarded before for the same turns left out (--discarded lists them, --undo-discard brings them back).`);
  if (set.refused.length > 0) {
    lines.push(`Refused (${set.refused.length}):`);
    for (const r of set.refused) lines.push(`  ${oneLine(r.file || '(no file)')}: ${oneLine(r.refusal)}${r.reason ? ` — ${oneLine(r.reason)}` : ''}`);
  }
  if (written) lines.push(`Wrote ${written.length} file${written.length === 1 ? '' : 's'}: ${written.map(oneLine).join(', ')}; the index is up to date with them.`);
  else if (count > 0) lines.push(`Dry run: nothing was written. Run again with --write to apply ${count === 1 ? 'this edit' : `these ${count} edits`}.`);
  return lines.join('\n');
}

function discardedReport(adventure: Adventure, discards: readonly DiscardedProposal[]): string {
  if (discards.length === 0) return `Nothing from "${oneLine(adventure.title)}" has been discarded.`;
  return [
    `Discarded canon proposals from "${oneLine(adventure.title)}" (not proposed again for the same turns):`,
    ...discards.map((d) => `  ${d.key.replace(/^proposal:/, '').slice(0, 12)}  ${d.at.slice(0, 10)}  ${oneLine(d.file)}: ${oneLine(d.reason)}`),
    'Bring one back with --undo-discard <id>, or all with --undo-discard all.',
  ].join('\n');
}

/** `--undo-discard <id|all>`: the discards it names, by the id --discarded prints (any unique prefix of the key). */
function discardsNamed(discards: readonly DiscardedProposal[], wanted: string): DiscardedProposal[] {
  if (wanted === 'all') return [...discards];
  const found = discards.filter((d) => d.key.replace(/^proposal:/, '').startsWith(wanted.replace(/^proposal:/, '')));
  if (found.length === 0) throw new UsageError(`no discarded proposal '${wanted}': --discarded lists them`);
  if (found.length > 1) throw new UsageError(`'${wanted}' names ${found.length} discarded proposals: give more of the id`);
  return found;
}

export const proposeCommand: Command = {
  usage: `storyteller propose [campaign-dir] [--adventure <id>] [--model <name> ${MODEL_SERVER_USAGE}] [--write] [--discarded] [--undo-discard <id|all>] [--json] (API key: $STORYTELLER_API_KEY)`,
  options: {
    adventure: { type: 'string' },
    write: { type: 'boolean', default: false },
    // The proposals the writer discarded (in the refactor preview): listed, and brought back.
    discarded: { type: 'boolean', default: false },
    'undo-discard': { type: 'string' },
    // The model that drafts through propose_edit; without one only the deterministic rules run.
    model: { type: 'string' },
    ...MODEL_SERVER_OPTIONS,
  },
  async run(args, io) {
    if (args.positionals.length > 1) throw new UsageError('give at most one campaign folder');
    const root = campaignRootOption(args.positionals[0], io.cwd);
    const model = stringOption(args, 'model');
    if (!model && (stringOption(args, 'provider') ?? stringOption(args, 'base-url') ?? stringOption(args, 'ollama-host')) !== undefined) {
      throw new UsageError('--provider and --base-url name the server of the model that drafts: give it with --model <name>');
    }
    // The server is named as play and context --research name it; it is asked only when a model is.
    const drafter = model ? { client: toolChatFor(backendFromArgs(args, io)), model } : undefined;
    const session = openCliSession(root);
    const run = async (): Promise<number> => {
      // Proposals read the files as they are: the index is brought in line with them first.
      await session.reindex();
      const campaign = session.campaign;
      const adventure = pickAdventure(session.play, campaign.id, stringOption(args, 'adventure'), campaign.playPath);
      const undo = stringOption(args, 'undo-discard');
      if (args.values.discarded === true || undo !== undefined) {
        const discards = listDiscarded(session.play.db, campaign.id, adventure.id);
        if (undo === undefined) {
          emit(io, args, { adventure: { id: adventure.id, title: adventure.title }, discarded: discards }, () => discardedReport(adventure, discards));
          return EXIT.ok;
        }
        const restored = discardsNamed(discards, undo);
        restoreDiscarded(session.play.db, campaign.id, restored);
        emit(io, args, { adventure: { id: adventure.id, title: adventure.title }, restored }, () =>
          [`${restored.length} discarded proposal${restored.length === 1 ? '' : 's'} from "${oneLine(adventure.title)}" will be proposed again:`, ...restored.map((d) => `  ${oneLine(d.file)}: ${oneLine(d.reason)}`)].join('\n'),
        );
        return EXIT.ok;
      }
      const read = diskReader(campaign.root);
      const set = await proposeCanonUpdates({ campaign, store: session.store, play: session.play, adventure }, { read, ...drafter });
      // The diffs are taken before anything is written, against the files they were proposed for.
      const diffs = set.proposals.map((p) => proposalDiff(p, p.oldText === '' ? undefined : read(p.file)));
      if (args.values.write !== true || set.proposals.length === 0) {
        emit(io, args, { ...set, diffs, written: [] }, () => report(set, diffs, undefined));
        return EXIT.ok;
      }
      let written: string[];
      try {
        written = writeProposals(campaign.root, set.proposals);
      } catch (error) {
        if (!(error instanceof ProposalWriteError)) throw error;
        await session.reindex();
        return refuse(io, args, 'propose', error.message);
      }
      clearSettledConflicts(session.play.db, campaign.id, set.proposals);
      await session.reindex();
      emit(io, args, { ...set, diffs, written }, () => report(set, diffs, written));
      return EXIT.ok;
    };
    try {
      if (args.values.write !== true) return await run();
      // One writing run at a time, from reading the files to writing them: a second drafts from what the first wrote.
      const onWait = (holder: string) => io.stderr.write(`storyteller propose: another run (${holder}) is writing this campaign's files; waiting for it to finish\n`);
      return await withWriteLock(path.join(session.campaign.root, DATA_DIR), run, { onWait });
    } catch (error) {
      if (error instanceof CampaignError) return refuse(io, args, 'propose', error.message);
      throw error;
    } finally {
      await session.close();
    }
  },
};
