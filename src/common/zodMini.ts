// zod/mini for the agent's load path: unlike classic zod it tree-shakes, so the bundle keeps only the schemas
// used (classic brings every locale and the JSON-schema code). Mini loads no locale, so every issue would read
// "Invalid input": English is configured here, once. Import it as `import * as z from '.../zodMini.js'`:
// `export *` keeps esbuild's tree-shaking; re-exporting a namespace object (`export { z }`) would defeat it.
import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';

z.config(en());

export * from 'zod/mini';
