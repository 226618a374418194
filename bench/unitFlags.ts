// The node flags and environment a systemd unit of ours runs node with, so a benchmark measures the service as it is run.
import { readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');

/** Flags between `ExecStart=.../launch-node.sh /usr/bin/node` and `-- /opt/speaker-agent/bin/speaker-agent.js <command>` in systemd/<unit>
 *  (the command's own options after it, `run --virtual-audio never`, are the CLI's, not node's). */
export function unitNodeFlags(unit: 'speaker-agent.service' | 'speaker-agent-companion.service', command: 'run' | 'companion'): string[] {
  const text = readFileSync(path.join(ROOT, 'systemd', unit), 'utf8');
  const exec = new RegExp(`^ExecStart=/opt/speaker-agent/bin/launch-node\\.sh \\S+ (.*?) ?-- /opt/speaker-agent/bin/speaker-agent\\.js ${command}(?: .*)?$`, 'm').exec(text);
  if (!exec) throw new Error(`systemd/${unit}: no ExecStart running speaker-agent.js ${command}`);
  return exec[1] ? exec[1].split(/\s+/) : [];
}

/** `Environment=NAME=value` settings of systemd/<unit> (what glibc or node reads before our code runs), with the
 *  installed tree /opt/speaker-agent read as this checkout (install.sh rewrites it to its PREFIX the same way). */
export function unitEnvironment(unit: 'speaker-agent.service' | 'speaker-agent-companion.service'): Record<string, string> {
  const text = readFileSync(path.join(ROOT, 'systemd', unit), 'utf8');
  const env: Record<string, string> = {};
  for (const m of text.matchAll(/^Environment=(\w+)=(\S*)$/gm)) env[m[1]] = m[2].replaceAll('/opt/speaker-agent', ROOT);
  return env;
}
