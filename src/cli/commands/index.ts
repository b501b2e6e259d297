import type { CommandEntry } from '../command';

/**
 * Every CLI command, in the order `storyteller --help` lists them. Each lives in its own file and is loaded
 * only when it runs: a command pays start-up for its own code, never for the model clients, exporters or
 * retrieval tables of the others.
 */
export const COMMANDS: CommandEntry[] = [
  {
    name: 'init',
    summary: 'make a folder of notes a campaign: a commented campaign.yaml (never overwritten), what would be indexed or skipped, and the next command',
    load: async () => (await import('./init')).initCommand,
  },
  {
    name: 'index',
    summary: "Import a campaign's files into its search index (only new and changed files are parsed)",
    load: async () => (await import('./indexCommand')).indexCommand,
  },
  {
    name: 'sources',
    summary: "List a campaign's indexed sources: class and where it came from, state, passages, problems",
    load: async () => (await import('./sources')).sourcesCommand,
  },
  {
    name: 'passages',
    summary: 'Show the passages one source was cut into: heading trail, lines, tokens, text',
    load: async () => (await import('./passages')).passagesCommand,
  },
  {
    name: 'search',
    summary: 'search the campaign knowledge: relevant passages only, ranked, each with why it matched',
    load: async () => (await import('./search')).searchCommand,
  },
  {
    name: 'context',
    summary: 'show the knowledge sections a prompt would get for this input, and every decision behind them (no model call)',
    load: async () => (await import('./context')).contextCommand,
  },
  {
    name: 'eval',
    summary: "measure research against today's selection on the campaign's questions (eval.yaml), per model: recall at 1/3/5, off-topic, refused calls, rounds, tokens, time",
    load: async () => (await import('./eval')).evalCommand,
  },
  {
    name: 'lint',
    summary:
      'Check a campaign: front matter, encoding, binary and oversize files, duplicates, unclassified files, canon conflicts, always-include budget, stale embeddings, unused sources (exit 1 on errors)',
    load: async () => (await import('./lint')).lintCommand,
  },
  {
    name: 'play',
    summary: 'play an adventure in the terminal: streamed narration, retry, undo, fork, context preview',
    load: async () => (await import('./play')).playCommand,
  },
  {
    name: 'propose',
    summary: "propose the canon edits an adventure's current branch implies, as diffs with their evidence (--write applies them)",
    load: async () => (await import('./propose')).proposeCommand,
  },
  {
    name: 'export',
    summary: 'write the whole campaign (files, source metadata, adventures) to one bundle file',
    load: async () => (await import('./export')).exportCommand,
  },
  {
    name: 'import',
    summary: 'restore a campaign bundle into a new folder (files, adventures; the index is rebuilt)',
    load: async () => (await import('./import')).importCommand,
  },
  {
    name: 'import-lorebook',
    summary: 'import a lorebook (SillyTavern World Info, Character Card V1/V2/V3 as JSON, PNG or CharX, NovelAI, Agnai, RisuAI) as campaign markdown',
    load: async () => (await import('./import')).importLorebookCommand,
  },
  {
    name: 'export-lorebook',
    summary: "write the campaign's canon as a SillyTavern World Info file",
    load: async () => (await import('./export')).exportLorebookCommand,
  },
];
