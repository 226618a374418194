// zod/mini for the agent's load path: unlike classic zod it tree-shakes, so the bundle keeps only the schemas
// used (classic brings every locale and the JSON-schema code). Mini loads no locale, so every issue would read
// "Invalid input": English is configured here, once. Import it as `import * as z from '.../zodMini.js'`:
// `export *` keeps esbuild's tree-shaking; re-exporting a namespace object (`export { z }`) would defeat it.
import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';

z.config(en());

export * from 'zod/mini';

// Shapes both settings schemas use (agent and companion server).

/** A number, also from the text of an environment variable. Only text is converted: null, true or [5000] in a
 *  config file are errors, where z.coerce (Number()) made them 0, 1 and 5000 (`"followUpMs": null` turned the
 *  follow-up off without a word). */
export function coercedNumber() {
  return z.pipe(z.transform((v: unknown) => (typeof v === 'string' && v.trim() !== '' ? Number(v) : v)), z.number());
}

/** A whole number, also from a string (environment variables), within [min, max]. */
export function coercedInt(min: number, max: number) {
  return coercedNumber().check(z.int(), z.minimum(min), z.maximum(max));
}

/** A string of at least one character. */
export function nonEmpty() {
  return z.string().check(z.minLength(1));
}

/** The environment variable overriding one setting, declared on the setting's schema (withEnv). */
export interface EnvMeta {
  env: string;
  description: string;
  /** the text is JSON (structured values) */
  json?: boolean;
}

export interface EnvOverride extends EnvMeta {
  /** dotted settings key */
  key: string;
}

const envRegistry = z.registry<EnvMeta>();

/** Declares the variable that overrides this setting: the override table is derived from the schema
 *  (envOverrides), so a variable cannot name a setting that does not exist and every setting's variable is listed. */
export function withEnv<T extends z.ZodMiniType>(schema: T, env: string, description: string, json?: boolean): T {
  envRegistry.add(schema, { env, description, ...(json ? { json } : {}) } as never);
  return schema;
}

/** The dotted keys of `value` that `schema` does not know (an object schema ignores them): a typo such as
 *  "workspacekey" vanished without a word, and the agent said the key was missing. */
export function unknownKeys(schema: z.ZodMiniType, value: unknown, prefix = ''): string[] {
  let def = schema._zod.def as { type: string; shape?: Record<string, z.ZodMiniType>; innerType?: z.ZodMiniType };
  while (def.type !== 'object' && def.innerType) def = def.innerType._zod.def as typeof def; // default, prefault, optional
  if (def.type !== 'object' || !def.shape || typeof value !== 'object' || value === null || Array.isArray(value)) return [];
  const out: string[] = [];
  for (const [k, v] of Object.entries(value)) {
    const key = prefix ? `${prefix}.${k}` : k;
    const inner = Object.hasOwn(def.shape, k) ? def.shape[k] : undefined;
    if (!inner) out.push(key);
    else out.push(...unknownKeys(inner, v, key));
  }
  return out;
}

/** Every variable declared with withEnv inside a schema, with its dotted key, in the schema's order. */
export function envOverrides(schema: z.ZodMiniType, prefix = ''): EnvOverride[] {
  const out: EnvOverride[] = [];
  const visit = (s: z.ZodMiniType, key: string): void => {
    const meta = envRegistry.get(s);
    if (meta) out.push({ ...meta, key });
    const def = s._zod.def as { type: string; shape?: Record<string, z.ZodMiniType>; innerType?: z.ZodMiniType };
    if (def.type === 'object' && def.shape) {
      for (const [k, v] of Object.entries(def.shape)) visit(v, key ? `${key}.${k}` : k);
    } else if (def.innerType) visit(def.innerType, key); // default, prefault, optional, nullable
  };
  visit(schema, prefix);
  return out;
}
