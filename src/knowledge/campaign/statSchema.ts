import { z } from 'zod';

/**
 * An adventure's stat schema (campaign.yaml's `stats:` block, kept on each adventure): what its world state
 * may hold. It lives with the campaign's files, below the story, because play data restored from a bundle is
 * checked against it before the story ever reads it.
 */

const StatDefSchema = z
  .object({
    initial: z.union([z.number(), z.string()]),
    min: z.number().optional(),
    max: z.number().optional(),
    /** Allowed values of a text stat. */
    options: z.array(z.string()).optional(),
    desc: z.string().optional(),
  })
  .strict();

const NpcSchema = z
  .object({
    name: z.string().min(1),
    desc: z.string().optional(),
    keys: z.array(z.string()).optional(),
    stats: z.record(z.string(), StatDefSchema).default({}),
  })
  .strict();

const StatSchemaSchema = z
  .object({
    world: z.record(z.string(), StatDefSchema).default({}),
    player: z.record(z.string(), StatDefSchema).default({}),
    npcs: z.record(z.string(), NpcSchema).default({}),
    flags: z.record(z.string(), z.object({ initial: z.boolean().default(false), desc: z.string().optional() }).strict()).default({}),
    milestones: z.record(z.string(), z.object({ desc: z.string().optional() }).strict()).default({}),
  })
  .strict();

export type StatDef = z.infer<typeof StatDefSchema>;
export type StatSchema = z.infer<typeof StatSchemaSchema>;

export class StatSchemaError extends Error {}

export function parseStatSchema(input: unknown): StatSchema {
  const parsed = StatSchemaSchema.safeParse(input ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new StatSchemaError(`stat schema: ${issue.path.join('.') || 'schema'}: ${issue.message}`);
  }
  return parsed.data;
}
