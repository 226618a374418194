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
