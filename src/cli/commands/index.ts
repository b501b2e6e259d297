import type { Command } from '../command';
import { contextCommand } from './context';
import { playCommand } from './play';
import { searchCommand } from './search';

/** Every CLI command, in the order `storyteller --help` lists them. Each lives in its own file. */
export const COMMANDS: Command[] = [searchCommand, contextCommand, playCommand];
