// Writing the agent's config.json: `conf` (atomic writes, file mode 0600, dotted keys). Only the commands that
// change the configuration (enroll) load it; the daemon reads the same plain JSON file with readConfigFile
// (settings.ts), which keeps conf and its schema validator (ajv) out of the daemon: ~5 MB of resident memory.
import Conf from 'conf';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { jsonSyntaxError } from '../common/jsonSyntax.js';
import { AgentError } from './errors.js';
import { CONFIG_FILE_NAME } from './settings.js';

/** The conf store of <configDir>/config.json, created with mode 0600 (conf's default is 0666). */
export function openConfigStore(configDir: string): Conf<Record<string, unknown>> {
  try {
    return new Conf<Record<string, unknown>>({
      cwd: configDir,
      configName: path.basename(CONFIG_FILE_NAME, '.json'),
      configFileMode: 0o600,
      clearInvalidConfig: false,
      projectSuffix: '',
    });
  } catch (err) {
    const file = path.join(configDir, CONFIG_FILE_NAME);
    const code = (err as NodeJS.ErrnoException).code;
    // not a broken file: the service's files are root's and speaker-agent's (removing it would lose the enrollment)
    if (code === 'EACCES' || code === 'EPERM') {
      throw new AgentError('config_invalid', `cannot read the configuration ${file}: permission denied. Run it with sudo (a speaker's configuration is root's and the service's).`, { cause: err });
    }
    throw new AgentError(
      'config_invalid',
      `cannot read the configuration ${file}: ${err instanceof SyntaxError ? syntaxOf(err, file) : (err as Error).message}. ` +
        'Fix or remove the file (it is JSON), then start again.',
      { cause: err },
    );
  }
}

/** conf's JSON.parse error quotes the file around the mistake, and the file holds the workspace key */
function syntaxOf(err: SyntaxError, file: string): string {
  try {
    return jsonSyntaxError(err, readFileSync(file, 'utf8'));
  } catch {
    return 'not valid JSON';
  }
}
