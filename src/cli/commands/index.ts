import type { Command } from '../command';
import { exportCommand } from './export';
import { importCommand, importLorebookCommand } from './import';

/** Every CLI command, in the order `storyteller --help` lists them. Each lives in its own file. */
export const COMMANDS: Command[] = [exportCommand, importCommand, importLorebookCommand];
