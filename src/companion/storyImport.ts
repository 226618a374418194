// One story as `companion story import` and the default content give it (admin.ts validates with it);
// its own module so the seed content and admin.ts do not import each other.
import * as z from '../common/zodMini.js';

const optionalText = (max: number) => z.optional(z.nullable(z.string().check(z.maxLength(max))));
export const StoryImportSchema = z.object({
  slug: z.optional(z.nullable(z.string().check(z.trim(), z.regex(/^[a-z0-9][a-z0-9-]{0,99}$/, 'slug: lower-case letters, digits and dashes')))),
  name: z.string().check(z.trim(), z.minLength(1), z.maxLength(200)),
  transcript: z.string().check(z.trim(), z.minLength(1), z.maxLength(500_000)),
  excerpt: optionalText(2_000),
  age_group: optionalText(50),
  illustration_url: optionalText(2_000),
  illustration_alt: optionalText(500),
  sort_order: z.optional(z.number().check(z.int())),
  /** a voice id, or the name of a workspace voice */
  default_voice: z.optional(z.nullable(z.string())),
});
export type StoryImport = z.input<typeof StoryImportSchema>;
