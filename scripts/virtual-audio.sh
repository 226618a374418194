#!/usr/bin/env bash
# Virtual sound card for machines without one (CI, demos): a PulseAudio user daemon with
#   - sink "speaker": what the agent plays; record it from "speaker.monitor"
#   - sink "mic_in" + source "mic" (remapped from mic_in.monitor): `paplay -d mic_in file.wav` speaks into the mic
# ALSA clients (PortAudio, amixer) reach it through Debian's /etc/alsa/conf.d/99-pulse.conf.
#
# A null sink with no low-latency client renders silence in 2 s blocks and cannot rewind the rest of a block
# when a stream arrives: a new playback stream then waits up to 2 s. PortAudio over the ALSA pulse plugin makes
# a new stream at every start and after every underrun (snd_pcm_prepare), so the speaker went quiet for ~1.9 s
# after each underrun. A real card rewinds; to behave like one, a 20 ms loopback from the speaker's monitor into
# a "discard" sink keeps "speaker" rendering in small blocks. (test/agent/audio/resilientDevice.test.ts)
#
# An echo path (speaker -> delay, attenuation, room impulse response, near end, noise -> mic) for the echo
# cancellation tests runs on top of this card: test/support/echoRoom.ts (README, "The echo path"). It reads
# "speaker.monitor" and writes into "mic_in", so nothing here changes for it.
#
# usage: virtual-audio.sh start|stop|env      (prints `export PULSE_SERVER=...` lines for eval)
set -euo pipefail
DIR=${SPEAKER_AGENT_PULSE_DIR:-/tmp/speaker-agent-pulse}
SOCK="$DIR/native"

env_lines() {
  echo "export PULSE_SERVER=unix:$SOCK"
  echo "export SPEAKER_AGENT_PULSE_DIR=$DIR"
}

running() { [ -S "$SOCK" ] && PULSE_SERVER="unix:$SOCK" pactl info >/dev/null 2>&1; }

# The speaker's keep-alive (see the top); also added to a card started by an older version of this script.
keep_speaker_fast() {
  local mods
  mods=$(PULSE_SERVER="unix:$SOCK" pactl list short modules)
  grep -q "sink_name=discard" <<<"$mods" ||
    PULSE_SERVER="unix:$SOCK" pactl load-module module-null-sink sink_name=discard rate=48000 \
      sink_properties=device.description=Discard >/dev/null
  if ! grep -q "sink=discard" <<<"$mods"; then
    PULSE_SERVER="unix:$SOCK" pactl load-module module-loopback source=speaker.monitor sink=discard \
      latency_msec=20 source_dont_move=true sink_dont_move=true >/dev/null
    # the block the sink was already in ends now (a resumed null sink starts its next block at once)
    PULSE_SERVER="unix:$SOCK" pactl suspend-sink speaker 1
    PULSE_SERVER="unix:$SOCK" pactl suspend-sink speaker 0
  fi
}

# A real sound server runs its audio work at real-time priority. PulseAudio does so for its I/O threads only
# (SCHED_RR 5 here): client streams' data crosses its main thread (nice -11), which a busy machine left
# unscheduled long enough for the echo room's 40 ms output stream to underrun (a glitch of the room's echo path
# every ~40 s of the echo tests: README, "The echo path"). Where permitted (root), every thread of the server
# runs at SCHED_FIFO 21, above the echo room (20); elsewhere it stays as it is.
realtime_server() {
  local pid
  pid=$(cat "$DIR/runtime/pulse/pid" 2>/dev/null) || return 0
  chrt -a -f -p 21 "$pid" >/dev/null 2>&1 || true
}

start() {
  if running; then keep_speaker_fast; env_lines; return 0; fi
  command -v pulseaudio >/dev/null || { echo "pulseaudio is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
  mkdir -p "$DIR/runtime" "$DIR/state"
  chmod 700 "$DIR/runtime"
  cat > "$DIR/default.pa" <<PA
load-module module-native-protocol-unix auth-anonymous=1 socket=$SOCK
load-module module-null-sink sink_name=speaker rate=48000 sink_properties=device.description=VirtualSpeaker
load-module module-null-sink sink_name=mic_in rate=48000 sink_properties=device.description=VirtualMicInput
load-module module-remap-source master=mic_in.monitor source_name=mic source_properties=device.description=VirtualMicrophone
set-default-sink speaker
set-default-source mic
PA
  # Its own runtime/state dirs so it never touches a user's real session; no idle exit.
  XDG_RUNTIME_DIR="$DIR/runtime" HOME="$DIR/state" PULSE_STATE_PATH="$DIR/state" \
    pulseaudio --daemonize=yes --exit-idle-time=-1 --disallow-exit=no -n --file="$DIR/default.pa" \
      --log-target=file:"$DIR/pulse.log" --use-pid-file=yes --system=no 2>>"$DIR/pulse.log" || true
  for _ in $(seq 1 50); do running && { keep_speaker_fast; realtime_server; env_lines; return 0; }; sleep 0.1; done
  echo "PulseAudio did not start; see $DIR/pulse.log" >&2
  tail -20 "$DIR/pulse.log" >&2 || true
  exit 1
}

stop() {
  if running; then PULSE_SERVER="unix:$SOCK" pactl exit 2>/dev/null || true; fi
  for _ in $(seq 1 30); do [ -S "$SOCK" ] && running || break; sleep 0.1; done
  rm -f "$SOCK"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) env_lines ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
