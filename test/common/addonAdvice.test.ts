// What a native addon's load failure tells the user to run: in a checkout setup.sh, in the installed tree
// install.sh again (never `npm ci`, which empties the live node_modules first). Real directories.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { addonLoadProblem, rebuildAdvice } from '../../src/common/addonAdvice.js';

let dir: string | undefined;
afterEach(() => dir && rmSync(dir, { recursive: true, force: true }));

describe('rebuildAdvice / addonLoadProblem', () => {
  it('a checkout: setup.sh; the installed tree (install.sh\'s lock stamp): install.sh again from the checkout; never npm ci', () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'addon-advice-'));
    expect(rebuildAdvice(dir)).toMatch(/bash scripts\/setup\.sh/);
    mkdirSync(path.join(dir, 'node_modules'));
    writeFileSync(path.join(dir, 'node_modules', '.speaker-agent-lock.sha256'), 'abc abi 115\n');
    const installed = rebuildAdvice(dir);
    expect(installed).toContain(`this is the installed speaker (${dir})`);
    expect(installed).toMatch(/sudo scripts\/install\.sh/);
    for (const a of [installed, rebuildAdvice(path.join(dir, 'nowhere'))]) expect(a).not.toMatch(/npm ci/);
  });

  it('names the addon, this Node and its ABI, and node\'s first line only', () => {
    const err = new Error("The module '/x/opus.node'\nwas compiled against a different Node.js version using\nNODE_MODULE_VERSION 9999. This version of Node.js requires\nNODE_MODULE_VERSION 115. Please try re-compiling");
    const p = addonLoadProblem('Opus', err);
    expect(p).toContain(`the Opus addon does not load in Node ${process.versions.node} (ABI ${process.versions.modules}): The module '/x/opus.node' (built for ABI 9999).`);
    expect(p).not.toContain('re-compiling');
    expect(p).toMatch(/\. (Run `bash scripts\/setup\.sh`|This is the installed speaker)/); // a sentence of its own
    expect(addonLoadProblem('speaker-sys', new Error("Cannot find module 'speaker-sys'"))).toContain(": Cannot find module 'speaker-sys'. ");
  });
});
