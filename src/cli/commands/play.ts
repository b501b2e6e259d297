import readline from 'node:readline';
import { CampaignError, type Campaign } from '../../knowledge/campaign';
import { calibratedModels } from '../../knowledge/retrieval';
import { describeBackend, NarratorError } from '../../models';
import { RESEARCH_MODES, type ResearchMode, type TurnOutcome } from '../../story/engine';
import { childrenOf } from '../../story/branches';
import { campaignAdventure, type PlayStore } from '../../story/playStore';
import { defaultSettings, openSession, type CampaignSession } from '../../session';
import { renderContextSummary, researchHeadline, researchLines } from '../../story/contextReport';
import type { Adventure, PlayerAction } from '../../story/types';
import { hasWorldState, renderStateSection } from '../../story/worldState';
import { EXIT, UsageError, stringOption, type CliIo, type Command } from '../command';
import { buildIfEmpty, IndexMissingError } from '../knowledgeAccess';
import { MODEL_SERVER_OPTIONS, MODEL_SERVER_USAGE, backendFromArgs } from '../modelArgs';

const HELP = [
  'Type an action and press Enter. Commands:',
  '  /say <words>     speak          /story <text>   write what happens    /continue   let the narrator go on',
  '  /retry           ask again      /undo           step back one turn     /fork <id>  continue from any turn',
  '  /edit <words>    rewrite the last action and play it again',
  '  /context [text]  show the prompt the action would get (no model call)',
  '  /research [id]   show what the last turn (or turn <id>) looked up before it was narrated, as recorded',
  '  /tree  /state  /memories  /pin <id>  /help  /quit',
].join('\n');

// Ids are shown only where the writer types them back (--adventure, /fork, /research, /pin); labels use names.
const shortId = (id: string) => id.slice(0, 8);

/** A turn as a writer counts it: its place in the story, not its id. */
const turnName = (turn: { depth: number }) => `turn ${turn.depth + 1}`;

function pickAdventure(store: PlayStore, campaign: Campaign, id: string | undefined, title: string | undefined): Adventure {
  if (id) {
    const found = store.getAdventure(id) ?? store.listAdventures(campaign.id).find((a) => a.id.startsWith(id));
    if (!found) throw new UsageError(`no adventure '${id}' in ${campaign.playPath}`);
    return found;
  }
  if (title === undefined) {
    const latest = store.listAdventures(campaign.id)[0];
    if (latest) return latest;
  }
  return store.createAdventure(campaignAdventure(campaign, title || `${campaign.title} — new adventure`));
}

function renderTree(store: PlayStore, adventure: Adventure): string {
  const head = new Set(store.lineage(adventure.headTurnId).map((t) => t.id));
  const turns = store.allTurns(adventure.id);
  if (turns.length === 0) return 'No turns yet.';
  const byParent = childrenOf(turns);
  const out: string[] = [];
  // Depth first from a stack of its own, so a branch thousands of turns long needs no deeper a call stack. A
  // turn's only child goes on at its indent; the replies to one moment (retries, forks) each indent a step.
  const stack = [...(byParent.get(null) ?? [])].reverse().map((turn) => ({ turn, indent: 0 }));
  for (let next = stack.pop(); next; next = stack.pop()) {
    const { turn: t, indent } = next;
    const mark = t.id === adventure.headTurnId ? '▶' : head.has(t.id) ? '•' : ' ';
    const status = t.status === 'complete' ? '' : ` [${t.status}]`;
    // The id is what /fork and /research take.
    out.push(`${'  '.repeat(indent)}${mark} ${shortId(t.id)} ${t.action.kind}: ${t.action.text.slice(0, 60)}${status}`);
    const children = byParent.get(t.id) ?? [];
    for (const child of [...children].reverse()) stack.push({ turn: child, indent: children.length > 1 ? indent + 1 : indent });
  }
  return out.join('\n');
}

function parseAction(line: string): PlayerAction | null {
  const command = /^\/(say|story|continue)\b\s*(.*)$/.exec(line);
  if (command) return { kind: command[1] as PlayerAction['kind'], text: command[2]! };
  if (line.startsWith('/')) return null;
  return { kind: 'do', text: line };
}

export const playCommand: Command = {
  usage: `storyteller play [campaign-dir] [--adventure <id>] [--new <title>] [--model <name>] [--max-tokens N] [--research auto|on|off] ${MODEL_SERVER_USAGE} (API key: $STORYTELLER_API_KEY)`,
  options: {
    adventure: { type: 'string' },
    research: { type: 'string' },
    new: { type: 'string' },
    model: { type: 'string' },
    'max-tokens': { type: 'string' },
    // The Ollama host, as before --base-url.
    host: { type: 'string' },
    ...MODEL_SERVER_OPTIONS,
  },
  async run(args, io: CliIo) {
    if (!io.stdin) throw new UsageError('play reads actions from standard input, and none is available');
    // Narrator and embeddings on the server the flags name (an Ollama host also stays the settings' Ollama host).
    const backend = backendFromArgs(args, io);
    const model = stringOption(args, 'model');
    const maxTokensText = stringOption(args, 'max-tokens');
    const maxReplyTokens = maxTokensText === undefined ? undefined : Number(maxTokensText);
    if (maxReplyTokens !== undefined && (!Number.isInteger(maxReplyTokens) || maxReplyTokens < 16)) {
      throw new UsageError(`--max-tokens must be a whole number of tokens, at least 16, not '${maxTokensText}'`);
    }
    const research = stringOption(args, 'research');
    if (research !== undefined && !(RESEARCH_MODES as readonly string[]).includes(research)) throw new UsageError(`--research is auto, on or off, not '${research}'`);
    let settings = defaultSettings({
      ...(maxReplyTokens !== undefined ? { maxReplyTokens } : {}),
      ...(research ? { research: research as ResearchMode } : {}),
      narratorBackend: backend,
      embeddingBackend: backend,
      ...(backend.provider === 'ollama' ? { ollamaHost: backend.baseUrl } : {}),
      ...(model ? { narratorModel: model } : {}),
    });
    let session: CampaignSession;
    try {
      session = openSession(args.positionals[0] ?? io.cwd, { settings: () => settings });
    } catch (error) {
      if (!(error instanceof CampaignError)) throw error;
      io.stderr.write(`storyteller play: ${error.message}\n`);
      return EXIT.failure;
    }
    if (session.hasIndex) {
      // The narrator is fed the campaign's knowledge: an index holding nothing (a damaged one moved aside) is built first.
      try {
        await buildIfEmpty('play', session, io);
      } catch (error) {
        if (!(error instanceof IndexMissingError)) throw error;
        io.stderr.write(`storyteller play: ${error.message}\n`);
        await session.close();
        return EXIT.failure;
      }
    }
    // Semantic retrieval with the model most recently calibrated in this index, when there is one.
    const calibrated = session.hasIndex ? calibratedModels(session.store)[0]?.model : undefined;
    if (calibrated) settings = { ...settings, embeddingModel: calibrated };
    const { campaign, play: store, engine } = session;
    const say = (text: string) => io.stdout.write(`${text}\n`);
    try {
      let adventure = pickAdventure(store, campaign, stringOption(args, 'adventure'), stringOption(args, 'new'));
      // The short id is what --adventure takes to come back to this adventure.
      say(`${adventure.title} — narrator ${engine.settings.model} on ${describeBackend(backend)}. /help for commands; play it again with --adventure ${shortId(adventure.id)}.`);

      let current: AbortController | null = null;
      const rl = readline.createInterface({ input: io.stdin, terminal: false });
      const onSigint = () => (current ? current.abort() : rl.close());
      if (io.stdin === process.stdin) process.on('SIGINT', onSigint);

      const play = async (run: (handlers: { signal: AbortSignal; onChunk: (t: string) => void }) => Promise<TurnOutcome>) => {
        current = new AbortController();
        let outcome: TurnOutcome;
        try {
          outcome = await run({ signal: current.signal, onChunk: (t) => io.stdout.write(t) });
        } finally {
          current = null;
        }
        const { turn, error } = outcome;
        if (turn.narration) io.stdout.write('\n');
        if (error) {
          const kind = error instanceof NarratorError ? error.kind : 'error';
          say(turn.status === 'incomplete' ? `⚠ incomplete (${kind}): ${error.message} — the text so far is kept; /retry to ask again` : `✖ ${error.message} — your action is saved; /retry to try again`);
        }
        const replaced = outcome.replacedFailures.length;
        if (replaced > 0) say(`  removed ${replaced === 1 ? 'the failed attempt' : `${replaced} failed attempts`} at this action: this reply replaces ${replaced === 1 ? 'it' : 'them'}`);
        if (outcome.context?.research) say(`  ${researchHeadline(outcome.context.research)}`);
        if (outcome.context?.research?.learned) say(`  ${outcome.context.research.learned} (this process remembers it until it ends)`);
        for (const [path, value] of Object.entries(outcome.applied)) say(`  state: ${path} → ${String(value)}`);
        for (const refusal of turn.refusals) say(`  state refused: ${refusal}`);
        if (outcome.memoryError) say(`  ! memory not written: ${outcome.memoryError}`);
        // The id is what /pin takes.
        for (const memory of outcome.memories) say(`  memory ${shortId(memory.id)}: ${memory.text}`);
      };

      let quit = false;
      for await (const raw of rl) {
        const line = raw.trim();
        if (!line) continue;
        adventure = store.adventure(adventure.id);
        const [word, ...rest] = line.split(/\s+/);
        const argument = rest.join(' ');
        try {
          switch (word) {
            case '/quit':
            case '/exit':
              quit = true;
              break;
            case '/help':
              say(HELP);
              break;
            case '/research': {
              const turn = argument ? store.allTurns(adventure.id).find((t) => t.id.startsWith(argument)) : adventure.headTurnId ? store.turn(adventure.headTurnId) : undefined;
              if (!turn) throw new UsageError(argument ? `no turn '${argument}' in this adventure; /tree lists them` : 'nothing played yet');
              const recorded = store.getSnapshot(turn.id)?.research;
              say(recorded ? researchLines(recorded).join('\n') : `Turn ${turn.depth + 1} ran no research.`);
              break;
            }
            case '/retry':
              await play((h) => engine.retry(adventure.id, undefined, h));
              break;
            case '/edit':
              if (!argument) throw new UsageError('/edit needs the new words of the action');
              if (!adventure.headTurnId) throw new UsageError('nothing to edit yet');
              await play((h) => engine.editAction(adventure.id, adventure.headTurnId!, argument, h));
              break;
            case '/undo': {
              const head = engine.undo(adventure.id);
              say(head ? `Back at ${turnName(head)}: ${head.action.text}` : 'Back at the start.');
              break;
            }
            case '/fork': {
              const target = store.allTurns(adventure.id).find((t) => argument && t.id.startsWith(argument));
              if (!target) throw new UsageError(`no turn '${argument}' in this adventure; /tree lists them`);
              engine.fork(adventure.id, target.id);
              say(`Continuing from ${turnName(target)}: ${target.narration.slice(-200) || target.action.text}`);
              break;
            }
            case '/context':
              say(renderContextSummary(await engine.previewContext(adventure.id, { kind: argument ? 'do' : 'continue', text: argument })));
              break;
            case '/tree':
              say(renderTree(store, adventure));
              break;
            case '/state': {
              const head = adventure.headTurnId ? store.turn(adventure.headTurnId) : null;
              say(hasWorldState(adventure.statSchema) ? renderStateSection(adventure.statSchema, head?.stateAfter ?? {}, adventure.persona) : 'This adventure tracks no world state.');
              break;
            }
            case '/memories': {
              const visible = store.memoriesForLineage(adventure.id, store.lineage(adventure.headTurnId));
              // The id is what /pin takes.
              say(visible.length === 0 ? 'No memories on this branch yet.' : visible.map((m) => `${m.pinned ? '📌' : '-'} ${shortId(m.id)} ${m.text}`).join('\n'));
              break;
            }
            case '/pin': {
              const memory = store.listMemories(adventure.id).find((m) => argument && m.id.startsWith(argument));
              if (!memory) throw new UsageError(`no memory '${argument}'; /memories lists them`);
              say(store.setMemoryPinned(memory.id, !memory.pinned).pinned ? 'Pinned.' : 'Unpinned.');
              break;
            }
            default: {
              const action = parseAction(line);
              if (!action) throw new UsageError(`unknown command ${word}; /help lists them`);
              await play((h) => engine.takeTurn(adventure.id, action, h));
            }
          }
        } catch (error) {
          say(`! ${error instanceof Error ? error.message : String(error)}`);
        }
        // Lines already read stay queued in the iterator, so quitting must leave the loop, not just close it.
        if (quit) break;
      }
      rl.close();
      if (io.stdin === process.stdin) process.off('SIGINT', onSigint);
      return EXIT.ok;
    } finally {
      await session.close();
    }
  },
};
