import type { Command } from '../command';
import { indexCommand } from './indexCommand';
import { lintCommand } from './lint';
import { passagesCommand } from './passages';
import { sourcesCommand } from './sources';

/** Every CLI command, in the order `storyteller --help` lists them. Each lives in its own file. */
export const COMMANDS: Command[] = [indexCommand, sourcesCommand, passagesCommand, lintCommand];
