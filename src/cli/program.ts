// The `speaker-agent` command tree (commander). Each command lives in src/cli/commands/<name>.ts and
// registers itself here; errors become the documented exit codes (EXIT_CODES in src/agent/errors.ts).
import { Command, CommanderError } from 'commander';
import { projectVersion } from '../common/projectRoot.js';
import { EXIT_CODES } from '../agent/errors.js';
import { readyWasSent } from '../common/sdNotify.js';
import { holdStartFailure, isServiceStart, OTHER_START_FAILURE_HOLD_MS } from './startFailureHold.js';
import { reportError } from './output.js';
import { writeOut } from './stdio.js';
import { registerCompanion } from './commands/companion.js';
import { registerDevices } from './commands/devices.js';
import { registerDoctor } from './commands/doctor.js';
import { registerEnroll } from './commands/enroll.js';
import { registerListen } from './commands/listen.js';
import { registerMic } from './commands/mic.js';
import { registerRun } from './commands/run.js';
import { registerSay } from './commands/say.js';
import { registerStatus } from './commands/status.js';
import { registerStories } from './commands/stories.js';
import { registerTestMic } from './commands/testMic.js';
import { registerTestSpeaker } from './commands/testSpeaker.js';
import { registerVoices } from './commands/voices.js';
import { registerVolume } from './commands/volume.js';
import { CONFIG_DIR_KEY, setSettingInEnv } from '../agent/settings.js';

export const EXIT_CODES_HELP = `
Exit codes:
  0  ok
  1  other error
  2  usage (bad command line)
  3  configuration (config.json invalid, no workspace key, identity missing or corrupt)
  4  authentication (the server rejected this device's id or secret)
  5  network (server unreachable, server error)
  6  audio (sound device or mixer control missing, busy or failing)`;

export function buildProgram(): Command {
  const program = new Command('speaker-agent')
    .description('Smart-speaker agent: a voice call with the assistant, on a Linux board.')
    .version(projectVersion())
    .option('--config-dir <dir>', 'directory of config.json (default $CONFIGURATION_DIRECTORY or ~/.config/speaker-agent)')
    .option('--state-dir <dir>', 'directory of identity.json (default $STATE_DIRECTORY or ~/.local/state/speaker-agent)')
    .option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent (logs go to stdout as JSON lines)')
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText(
      'after',
      `
Examples:
  speaker-agent run --demo            # everything local: companion server, virtual sound card, a scripted user
  sudo speaker-agent doctor           # check an installed speaker
  speaker-agent status --json
  speaker-agent volume set 40
${EXIT_CODES_HELP}`,
    )
    .hook('preAction', (cmd) => {
      // Global options become the environment variables settings.ts reads, so every module sees them.
      const o = cmd.opts<{ configDir?: string; stateDir?: string; logLevel?: string }>();
      if (o.configDir) setSettingInEnv(CONFIG_DIR_KEY, o.configDir);
      if (o.stateDir) setSettingInEnv('paths.stateDir', o.stateDir);
      if (o.logLevel) setSettingInEnv('log.level', o.logLevel);
    });

  for (const register of [
    registerRun,
    registerEnroll,
    registerStatus,
    registerListen,
    registerMic,
    registerDoctor,
    registerDevices,
    registerVolume,
    registerTestSpeaker,
    registerTestMic,
    registerSay,
    registerVoices,
    registerStories,
    registerCompanion,
  ]) {
    register(program);
  }
  // Every command: usage errors exit 2, and --help lists the exit codes.
  const all = (c: Command): Command[] => [c, ...c.commands.flatMap(all)];
  for (const c of all(program)) {
    c.exitOverride();
    if (c !== program) c.addHelpText('after', EXIT_CODES_HELP);
    c.configureOutput({ writeOut, writeErr: (s) => process.stderr.write(s) });
  }
  return program;
}

export async function main(argv: string[] = process.argv): Promise<number> {
  const notifySocket = process.env.NOTIFY_SOCKET; // the daemon's notifier takes it out of the environment
  const program = buildProgram();
  const json = argv.includes('--json');
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT_CODES.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // help and version "errors" are successes; everything else commander rejects is a usage error
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return EXIT_CODES.ok;
      return EXIT_CODES.usage;
    }
    const code = reportError(err, json);
    // under systemd, a configuration the service cannot start with, or any other failure before it was running:
    // not a restart every 2 s (startFailureHold.ts). A failure after READY=1 restarts at once (2 s).
    const why = err instanceof Error ? err.message : String(err);
    if (isServiceStart() && code === EXIT_CODES.config) await holdStartFailure(why, notifySocket);
    else if (isServiceStart() && !readyWasSent()) await holdStartFailure(why, notifySocket, OTHER_START_FAILURE_HOLD_MS);
    return code;
  }
}

