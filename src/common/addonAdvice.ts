// What to run when a native addon does not load (a Node upgraded under the install, a library removed by a
// Debian upgrade). Never `npm ci` in the installed tree: it empties node_modules first, so a failed download or a
// compile out of memory left a speaker that could not start; install.sh builds a staged copy and swaps it in.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from './projectRoot.js';

/** install.sh's stamp of the lockfile and the Node ABI it built for: only the installed tree has it. */
const INSTALL_STAMP = path.join('node_modules', '.speaker-agent-lock.sha256');

/** The command that rebuilds the addons for the Node that runs this, where this runs. */
export function rebuildAdvice(root = projectRoot()): string {
  return existsSync(path.join(root, INSTALL_STAMP))
    ? `this is the installed speaker (${root}): run \`sudo scripts/install.sh\` again from the checkout it was installed from (it rebuilds the addons for this Node in a staged copy and swaps it in)`
    : 'run `bash scripts/setup.sh` in this checkout (it rebuilds the addons for this Node; needs portaudio19-dev, python3, make, g++)';
}

/** An addon's load failure in words: which one, this Node, node's first line (and the ABI it was built for, which
 *  node says on a later line), and what to run. */
export function addonLoadProblem(addon: string, err: unknown): string {
  const message = String((err as Error)?.message ?? err);
  const first = message.split('\n')[0]!.replace(/[.\s]+$/, '');
  const builtFor = /NODE_MODULE_VERSION (\d+)/.exec(message)?.[1];
  const abi = builtFor && builtFor !== process.versions.modules ? ` (built for ABI ${builtFor})` : '';
  const advice = rebuildAdvice();
  return `the ${addon} addon does not load in Node ${process.versions.node} (ABI ${process.versions.modules}): ${first}${abi}. ${advice[0]!.toUpperCase()}${advice.slice(1)}`;
}
