// Writing the agent's config.json: `conf` (atomic writes, file mode 0600, dotted keys). Only the commands that
// change the configuration (enroll) load it; the daemon reads the same plain JSON file with readConfigFile
// (settings.ts), which keeps conf and its schema validator (ajv) out of the daemon: ~5 MB of resident memory.
import Conf from 'conf';
import path from 'node:path';
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
    throw new AgentError(
      'config_invalid',
      `cannot read the configuration ${path.join(configDir, CONFIG_FILE_NAME)}: ${(err as Error).message}. ` +
        'Fix or remove the file (it is JSON), then start again.',
      { cause: err },
    );
  }
}
