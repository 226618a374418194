#!/usr/bin/env bash
# Sets up a fresh Debian / Raspberry Pi OS machine (bookworm, trixie; arm64, armhf, x86-64) to build and run the
# project from this checkout: Debian packages, `npm ci` (native addons build from source), `npm run build`.
#   scripts/setup.sh          what the agent and the companion server need
#   scripts/setup.sh --dev    also what the tests and benchmarks need (Chromium, flite, sox, systemd-analyze, coturn)
# Idempotent. Downloads only from Debian and the npm registry.
set -euo pipefail
cd "$(dirname "$0")/.."

DEV=0
for a in "$@"; do
  case "$a" in
    --dev) DEV=1 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "unknown option: $a" >&2; exit 2 ;;
  esac
done

# Runtime: ALSA tools and plugins, PortAudio (the audio addon links Debian's static libportaudio.a from
# portaudio19-dev, with libasound2-dev: see vendor/naudiodon2/PATCHES.md),
# offline speech (espeak-ng synthesis, pocketsphinx recognition), libspeexdsp (the echo canceller), libopus (the call's decoder, for FEC), ffmpeg (uploads), PulseAudio (virtual devices
# on machines without a sound card), flite (the voice of the scripted user on the virtual sound card).
# Build: compilers for the native addons (opus, better-sqlite3, naudiodon2, speaker-sys), and OpenSSL's headers
# for speaker-sys's SRTP addon (Debian's libnode-dev takes node's from libssl-dev).
PKGS=(alsa-utils libasound2-plugins portaudio19-dev libasound2-dev libssl-dev
      libespeak-ng1 espeak-ng-data libpocketsphinx3 pocketsphinx-en-us ffmpeg libspeexdsp1 libopus0
      pulseaudio pulseaudio-utils flite
      python3 make g++ ca-certificates libatomic1)
# libatomic1: the official Node builds for armv7l (armhf) need it; a fresh Debian armhf lacks it
# "a|b": names that differ between releases or derivatives, picked by what apt offers (scripts/debian-packages.sh).
# coturn: the TURN relay of the relayed-call tests (test/support/turnServer.ts runs it in the foreground).
DEV_PKGS=("chromium|chromium-browser" sox espeak-ng systemd iproute2 procps wrk coturn)
[ "$DEV" = 1 ] && PKGS+=("${DEV_PKGS[@]}")

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

. scripts/debian-packages.sh
mapfile -t unmet < <(deb_unmet "${PKGS[@]}")
# coturn's package enables and starts a system TURN server on install, one that relays for anybody on the network
# until it is configured: masked first, so the tests' own foreground coturn is the only one (a coturn this
# machine already had is left as it is). The link is what `systemctl mask` makes; systemd may not be installed yet.
if printf '%s\n' "${unmet[@]}" | grep -qx coturn; then
  $SUDO mkdir -p /etc/systemd/system && $SUDO ln -sfn /dev/null /etc/systemd/system/coturn.service
fi
if [ ${#unmet[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  mapfile -t missing < <(deb_pick "${unmet[@]}")
  echo "==> installing Debian packages: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v node >/dev/null; then
  echo "==> installing Node.js from Debian"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
fi
. scripts/lib/node-build.sh
node_supported_or_exit
npm_matches_node_or_exit
use_matching_node_headers
node_version=$(node -p process.versions.node)

abi_stamp=node_modules/.speaker-agent-node-abi # the Node ABI the addons were last built for
if [ ! -d node_modules ] || ! npm ls --omit=dev >/dev/null 2>&1 || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "==> npm ci (native addons build from source: a few minutes on a Pi)"
  # build-from-source: @discordjs/opus and better-sqlite3 would first try to download a prebuilt binary from
  # GitHub; only the npm registry and Debian are install sources here, so they compile at once.
  npm_config_build_from_source=true npm ci --no-audit --no-fund
  node -p process.versions.modules > "$abi_stamp"
  vendored_addons_built "$PWD"
fi
# The checkout was built by another Node (a newer Node installed, or CI's second run): rebuild every addon for
# this one. @discordjs/opus, naudiodon2 and speaker-sys are Node-API (one build fits all), but speaker-sys's
# V8 part and better-sqlite3 are tied to one Node's ABI.
if [ "$(cat "$abi_stamp" 2>/dev/null)" != "$(node -p process.versions.modules)" ]; then
  echo "==> rebuilding the native addons for Node $node_version"
  npm_config_build_from_source=true npm rebuild --no-audit --no-fund
  node -p process.versions.modules > "$abi_stamp"
  vendored_addons_built "$PWD"
fi
ensure_vendored_addons_current "$PWD" || true # what does not load is named next
ensure_addons "$PWD" || exit 1

# npm ci runs it as postinstall; again here for a node_modules installed before a patch was added (idempotent)
node scripts/patch-dependencies.mjs
echo "==> building"
npm run build --silent
echo "==> ready"
