// zod/mini for the agent's load path: unlike classic zod it tree-shakes, so the bundle keeps only the schemas
// used (classic brings every locale and the JSON-schema code). Mini loads no locale, so every issue would read
// "Invalid input": English is configured here, once. Import it as `import * as z from '.../zodMini.js'`:
// `export *` keeps esbuild's tree-shaking; re-exporting a namespace object (`export { z }`) would defeat it.
import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';

z.config(en());

export * from 'zod/mini';

// Shapes both settings schemas use (agent and companion server).

/** A whole number, also from a string (environment variables), within [min, max]. */
export function coercedInt(min: number, max?: number) {
  const n = z.coerce.number();
  return max === undefined ? n.check(z.int(), z.minimum(min)) : n.check(z.int(), z.minimum(min), z.maximum(max));
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
