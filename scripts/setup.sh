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
# Supported: Node 20.10 and newer (20, 22, 24 and 26 are tested). Debian 12's own nodejs is 18.
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 10) ? 0 : 1)'; then
  cat >&2 <<MSG
Node.js $(node --version) ($(command -v node)) is too old: speaker-agent needs Node 20.10 or newer.
Fix it with one of these, then run scripts/setup.sh again:
  - Debian 13 / Raspberry Pi OS trixie:  sudo apt-get install nodejs npm          (Debian's Node 20)
  - any release, from the npm registry:  sudo npm install -g node@24              (official build, /usr/local/bin/node)
  - or Node 22, 24 or 26 from your distribution's or Node's own packages, first on the PATH
MSG
  exit 1
fi

# Native addons compile against the headers of the node that runs them. node-gyp takes them from `nodedir` (or
# downloads them from nodejs.org, which is not an install source here), and a user's npm configuration may name
# another Node's headers: then every addon fails at the first run with "NODE_MODULE_VERSION 115 ... 137". So
# nodedir is set here to headers whose version is exactly this node's: beside the binary (official builds, the
# npm registry's node package, NodeSource) or Debian's libnode-dev in /usr.
node_version=$(node -p process.versions.node)
headers_version() { # prints the version a headers dir is for, or nothing
  local h="$1/include/node/node_version.h"
  [ -f "$h" ] && [ -f "$1/include/node/common.gypi" ] || return 0
  awk '/define NODE_(MAJOR|MINOR|PATCH)_VERSION/ { v[$2] = $3 } END { print v["NODE_MAJOR_VERSION"] "." v["NODE_MINOR_VERSION"] "." v["NODE_PATCH_VERSION"] }' "$h"
}
node_prefix=$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")
configured=${npm_config_nodedir:-$(npm config get nodedir 2>/dev/null || true)}
[ "$configured" = "undefined" ] || [ "$configured" = "null" ] && configured=""
nodedir=""
for d in "$configured" "$node_prefix" /usr; do
  [ -n "$d" ] && [ "$(headers_version "$d")" = "$node_version" ] && { nodedir=$d; break; }
done
if [ -n "$configured" ] && [ "$nodedir" != "$configured" ]; then
  echo "==> note: npm's nodedir ($configured) holds headers of Node $(headers_version "$configured"), not $node_version: not using it" >&2
fi
if [ -n "$nodedir" ]; then
  export npm_config_nodedir="$nodedir"
else
  echo "==> note: no headers for Node $node_version beside it or in /usr (libnode-dev): node-gyp will try to download them" >&2
fi

abi_stamp=node_modules/.speaker-agent-node-abi # the Node ABI the addons were last built for
if [ ! -d node_modules ] || ! npm ls --omit=dev >/dev/null 2>&1 || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "==> npm ci (native addons build from source: a few minutes on a Pi)"
  # build-from-source: @discordjs/opus and better-sqlite3 would first try to download a prebuilt binary from
  # GitHub; only the npm registry and Debian are install sources here, so they compile at once.
  npm_config_build_from_source=true npm ci --no-audit --no-fund
  node -p process.versions.modules > "$abi_stamp"
fi
# The checkout was built by another Node (a newer Node installed, or CI's second run): rebuild every addon for
# this one. @discordjs/opus, naudiodon2 and speaker-sys are Node-API (one build fits all), but speaker-sys's
# V8 part and better-sqlite3 are tied to one Node's ABI.
if [ "$(cat "$abi_stamp" 2>/dev/null)" != "$(node -p process.versions.modules)" ]; then
  echo "==> rebuilding the native addons for Node $node_version"
  npm_config_build_from_source=true npm rebuild --no-audit --no-fund
  node -p process.versions.modules > "$abi_stamp"
fi
echo "==> checking the native addons in Node $node_version"
if ! node scripts/check-addons.mjs; then
  mapfile -t broken < <(node scripts/check-addons.mjs --failed)
  if [ ${#broken[@]} -gt 0 ]; then
    echo "==> rebuilding ${broken[*]} from source for Node $node_version"
    npm_config_build_from_source=true npm rebuild "${broken[@]}" --no-audit --no-fund || true
  fi
  if ! node scripts/check-addons.mjs; then
    cat >&2 <<MSG
A native addon does not load in Node $node_version ($(command -v node)); the line above says which.
  - "NODE_MODULE_VERSION": it was built for another Node. Headers for this Node must be beside it
    ($node_prefix/include/node) or in /usr/include/node (Debian: sudo apt-get install libnode-dev); check
    'npm config get nodedir', then: rm -rf node_modules && scripts/setup.sh
  - a missing library (libportaudio, libasound): rerun scripts/setup.sh as a user who may run sudo apt-get
MSG
    exit 1
  fi
fi
# npm ci runs it as postinstall; again here for a node_modules installed before a patch was added (idempotent)
node scripts/patch-dependencies.mjs
echo "==> building"
npm run build --silent
echo "==> ready"
