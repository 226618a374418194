// The import graph of src/: agent and companion stand side by side (neither imports the other), protocol and
// common sit below both, and no module reaches itself through its imports. Parsed with TypeScript's own parser,
// so `import type`, `export ... from` and `import()` all count.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..');
const src = path.join(root, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** Every module specifier a file names: static imports and re-exports, import(), and import types. */
function specifiers(text: string, fileName = 'x.ts'): string[] {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const visit = (n: ts.Node): void => {
    if ((ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier)) {
      out.push(n.moduleSpecifier.text);
    } else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword && n.arguments[0] && ts.isStringLiteralLike(n.arguments[0])) {
      out.push(n.arguments[0].text);
    } else if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument) && ts.isStringLiteral(n.argument.literal)) {
      out.push(n.argument.literal.text);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/** src-relative module -> the src-relative modules it imports (relative specifiers only; packages are not ours). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(src)) {
    const from = path.relative(src, file);
    const deps: string[] = [];
    for (const spec of specifiers(readFileSync(file, 'utf8'), file)) {
      if (!spec.startsWith('.')) continue;
      const target = path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts');
      // An unresolved specifier would silently drop an arrow: fail instead.
      if (!existsSync(target)) throw new Error(`${from}: cannot resolve ${spec}`);
      deps.push(path.relative(src, target));
    }
    graph.set(from, deps);
  }
  return graph;
}

/** Strongly connected components with more than one module, or a module importing itself (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const strong = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) strong(v);
  return found;
}

const top = (module: string) => module.split(path.sep)[0];

/** Which top-level folders of src/ may not import which. */
const FORBIDDEN: Record<string, string[]> = {
  agent: ['companion', 'cli'],
  companion: ['agent', 'cli'],
  protocol: ['agent', 'companion', 'cli'],
  common: ['agent', 'companion', 'cli'],
};

/** Classes declared `extends Error` (directly) in a file. */
function errorSubclasses(text: string): string[] {
  const sf = ts.createSourceFile('x.ts', text, ts.ScriptTarget.Latest, true);
  return sf.statements.filter(ts.isClassDeclaration).filter((c) =>
    c.heritageClauses?.some((h) => h.token === ts.SyntaxKind.ExtendsKeyword && h.types.some((t) => t.expression.getText(sf) === 'Error')),
  ).map((c) => c.name?.text ?? '(anonymous)');
}

describe('the error classes of src/', () => {
  it('all extend the one base with a code and a cause (common/errors.ts)', () => {
    expect(errorSubclasses('export class A extends Error {}\nclass B extends A {}')).toEqual(['A']);
    const direct = sourceFiles(src).flatMap((f) => errorSubclasses(readFileSync(f, 'utf8')).map((c) => `${path.relative(src, f)}: ${c}`));
    expect(direct).toEqual([`common${path.sep}errors.ts: CodedError`]);
  });
});

describe('the import graph of src/', () => {
  const graph = importGraph();

  it('reads every kind of module reference', () => {
    const text = `import a from './a.js'; import type { B } from './b.js'; export * from './c.js';
      export { d } from './d.js'; import './e.js'; const f = await import('./f.js'); type G = typeof import('./g.js');
      // import x from './comment.js'
      const s = "import y from './string.js'";`;
    expect(specifiers(text)).toEqual(['./a.js', './b.js', './c.js', './d.js', './e.js', './f.js', './g.js']);
    expect(graph.size).toBeGreaterThan(100);
  });

  it('finds a cycle when there is one', () => {
    const g = new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['d']], ['e', ['a']]]);
    expect(cycles(g)).toEqual([['a', 'b', 'c'], ['d']]);
  });

  it('has no arrow between agent and companion, and protocol/common import neither', () => {
    const bad: string[] = [];
    for (const [from, deps] of graph) {
      for (const to of deps) if (FORBIDDEN[top(from)]?.includes(top(to))) bad.push(`${from} -> ${to}`);
    }
    expect(bad).toEqual([]);
  });

  it('has no cycle', () => {
    expect(cycles(graph)).toEqual([]);
  });
});
