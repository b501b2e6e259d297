import type { Command } from '../command';
import { playCommand } from './play';

/** Every CLI command, in the order `storyteller --help` lists them. Each lives in its own file. */
export const COMMANDS: Command[] = [playCommand];
