import type { Command } from '../command';
import { importLorebookCommand } from './import';

/** Every CLI command, in the order `storyteller --help` lists them. Each lives in its own file. */
export const COMMANDS: Command[] = [importLorebookCommand];
