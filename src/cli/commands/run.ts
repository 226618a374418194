// `speaker-agent run`: the daemon. On an installed speaker it runs the configured agent under systemd.
// On a machine with nothing set up it brings what is missing: a local companion server (no server
// configured) and the virtual sound card (no sound card, no sound server). `--demo` adds a scripted user.
// The implementation (src/cli/runAgent.ts) is loaded only when the command runs: WebRTC is heavy to import.
import { Option, type Command } from 'commander';
import { exitNow } from '../../common/exitNow.js';
import { numberIn } from '../numberOption.js';
import { markServiceStart } from '../startFailureHold.js';
import type { RunOptions } from '../runAgent.js';

export function registerRun(program: Command): void {
  program
    .command('run')
    .description('run the agent (the daemon): keep a call with the assistant up, play and record through the sound card')
    .option('--demo', 'scripted user: says "set the volume to forty percent", shows the conversation, exits 0 when the assistant replied (the default with --conversation on the virtual sound card)')
    .option('--no-demo', 'no scripted user, even on the virtual sound card')
    .option('--conversation', 'show the conversation on the terminal (logs go to stderr)')
    .option('--no-companion', 'never start a local companion server, even when no server is configured')
    .addOption(new Option('--virtual-audio <mode>', 'auto (when there is no sound card) | always | never').choices(['auto', 'always', 'never']).default('auto'))
    .option('--demo-timeout <s>', 'seconds the demo may take (1 to 3600)', numberIn(1, 3600), 90)
    .addHelpText(
      'after',
      `
Without a configured server (no config.json server.url, no SPEAKER_AGENT_SERVER_URL) a companion server
is started in this process with a default workspace, and the agent enrolls against it. Without a sound card
(no ALSA card, no PulseAudio/PipeWire) the virtual sound card (scripts/virtual-audio.sh) is started.
Under systemd (Type=notify) it sends READY=1 once running, WATCHDOG=1 while healthy, STOPPING=1 on SIGTERM.

Examples:
  speaker-agent run --demo             # the whole thing on any machine, then exit
  speaker-agent run --conversation     # keep running and show what is said
  systemctl start speaker-agent        # how an installed speaker runs it`,
    )
    .action(async (o: RunOptions) => {
      markServiceStart(); // a failure before it runs is held under systemd (startFailureHold.ts)
      const { runAgent } = await import('../runAgent.js');
      const code = await runAgent(o);
      // The call, the devices, the status socket and any local companion are closed by now. A handle some
      // dependency leaves behind must not keep a finished run alive (a CI run once saw `run --demo` print
      // "demo done" and never exit), so exit rather than wait for the event loop to drain. Log lines are
      // written synchronously; nothing is lost. Not process.exit: a worker thread still loading when the process
      // exits is terminated inside ONNX Runtime, which aborts the process (src/common/exitNow.ts).
      await exitNow(code);
    });
}

