import type { Command } from '../command';
import { contextCommand } from './context';
import { exportCommand, exportLorebookCommand } from './export';
import { importCommand, importLorebookCommand } from './import';
import { indexCommand } from './indexCommand';
import { lintCommand } from './lint';
import { passagesCommand } from './passages';
import { playCommand } from './play';
import { searchCommand } from './search';
import { sourcesCommand } from './sources';

/** Every CLI command, in the order `storyteller --help` lists them. Each lives in its own file. */
export const COMMANDS: Command[] = [
  indexCommand,
  sourcesCommand,
  passagesCommand,
  searchCommand,
  contextCommand,
  lintCommand,
  playCommand,
  exportCommand,
  importCommand,
  importLorebookCommand,
  exportLorebookCommand,
];
