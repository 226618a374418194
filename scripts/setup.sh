#!/usr/bin/env bash
# Sets up a fresh Debian / Raspberry Pi OS machine (bookworm; arm64, armhf, x86-64) to build and run the
# project from this checkout: Debian packages, `npm ci` (native addons build from source), `npm run build`.
#   scripts/setup.sh          what the agent and the companion server need
#   scripts/setup.sh --dev    also what the tests and benchmarks need (Chromium, flite, sox, systemd-analyze)
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
# offline speech (espeak-ng synthesis, pocketsphinx recognition), ffmpeg (uploads), PulseAudio (virtual devices
# on machines without a sound card), flite (the voice of the scripted user on the virtual sound card).
# Build: compilers for the native addons (opus, better-sqlite3, naudiodon2, speaker-sys), and OpenSSL's headers
# for speaker-sys's SRTP addon (Debian's libnode-dev takes node's from libssl-dev).
PKGS=(alsa-utils libasound2-plugins portaudio19-dev libasound2-dev libssl-dev
      libespeak-ng1 espeak-ng-data libpocketsphinx3 pocketsphinx-en-us ffmpeg
      pulseaudio pulseaudio-utils flite
      python3 make g++ ca-certificates)
DEV_PKGS=(chromium sox espeak-ng systemd iproute2 procps wrk)
[ "$DEV" = 1 ] && PKGS+=("${DEV_PKGS[@]}")

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v node >/dev/null; then
  echo "==> installing Node.js from Debian"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "Node.js $(node --version) is too old: the agent needs Node 20 or newer." >&2
  echo "On Raspberry Pi OS bookworm: install Node 20 (e.g. the nodejs package of a newer release) and rerun." >&2
  exit 1
fi

# node-gyp builds against the running node's own headers (include/node beside it, where the node package ships
# them, as NodeSource's does) instead of downloading them from nodejs.org.
node_prefix=$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")
if [ -z "${npm_config_nodedir:-}" ] && [ -f "$node_prefix/include/node/common.gypi" ]; then
  export npm_config_nodedir="$node_prefix"
fi

if [ ! -d node_modules ] || ! npm ls --omit=dev >/dev/null 2>&1 || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "==> npm ci (native addons build from source: a few minutes on a Pi)"
  # build-from-source: @discordjs/opus and better-sqlite3 would first try to download a prebuilt binary from
  # GitHub; only the npm registry and Debian are install sources here, so they compile at once.
  npm_config_build_from_source=true npm ci --no-audit --no-fund
fi
# npm ci runs it as postinstall; again here for a node_modules installed before a patch was added (idempotent)
node scripts/patch-dependencies.mjs
echo "==> building"
npm run build --silent
echo "==> ready"
