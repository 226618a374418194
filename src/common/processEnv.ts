// The SPEAKER_AGENT_* variables that are not settings: debugging switches and places of the process's own
// socket and helpers. Settings' variables are declared on the two settings schemas (agent/settings.ts,
// companion/settings.ts); these are the only other ones, read through here (test/environment.test.ts fails when
// another module names a variable; the README lists this table).

export const PROCESS_VARIABLES = {
  statusSocket: {
    env: 'SPEAKER_AGENT_STATUS_SOCKET',
    description: 'path of the status socket the daemon listens on and the CLI asks (default $RUNTIME_DIRECTORY/status.sock, else <state dir>/status.sock)',
  },
  pulseDir: { env: 'SPEAKER_AGENT_PULSE_DIR', description: 'runtime directory of the virtual sound card (`run` without a sound card; scripts/virtual-audio.sh)' },
  audioDebug: { env: 'SPEAKER_AGENT_AUDIO_DEBUG', description: "set: show the PortAudio/ALSA probe lines and alsa-lib's xrun lines otherwise kept off stderr" },
  debug: { env: 'SPEAKER_AGENT_DEBUG', description: 'set: the CLI prints the stack of an unexpected error' },
  espeakLib: { env: 'SPEAKER_AGENT_ESPEAK_LIB', description: "another libespeak-ng shared library for the companion's synthesiser (e.g. a board's own build)" },
  ffmpeg: { env: 'SPEAKER_AGENT_FFMPEG', description: "the companion's ffmpeg (audio conversion; default ffmpeg on PATH)" },
  ffprobe: { env: 'SPEAKER_AGENT_FFPROBE', description: "the companion's ffprobe (audio durations; default ffprobe on PATH)" },
  roots: { env: 'SPEAKER_AGENT_ROOTS', description: 'scripts/check-arm64.sh and check-debian-root.sh: cache of the Debian roots (default /var/tmp/speaker-agent-roots)' },
  aec3Root: { env: 'SPEAKER_AGENT_AEC3_ROOT', description: 'bench webrtc-aec3: the trixie root scripts/webrtc-aec/build.sh made, with the AEC3 tools (default $SPEAKER_AGENT_ROOTS/aec3-trixie-amd64)' },
} as const;

export type ProcessVariable = keyof typeof PROCESS_VARIABLES;

export function processVariable(name: ProcessVariable, env: Record<string, string | undefined> = process.env): string | undefined {
  return env[PROCESS_VARIABLES[name].env];
}
