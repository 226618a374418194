#!/usr/bin/env bash
# Builds scripts/webrtc-aec/aec3.cc (WebRTC AEC3 over s16 files, for bench/webrtc-aec3.bench.ts, issue #15) against
# Debian 13 trixie's webrtc-audio-processing 1.x, in a trixie x86-64 root made for it: $ROOTS/aec3-trixie-amd64,
# from $ROOTS/debian-trixie-minbase-amd64.tar when it is there (else debootstrap --variant=minbase). Debian's
# cross toolchains in the same root (multiarch: the arm64/armhf library next to the amd64 one) build the arm64
# and armhf tools, which the bench runs under qemu-user called explicitly (no binfmt handler is registered;
# nothing foreign runs here). The bench runs the tools with the root's own loader and libraries: no chroot then.
#   sudo scripts/webrtc-aec/build.sh [--arch amd64|arm64|armhf|all]   (default amd64)
# Exit status 0 built, 1 failed, 77 this machine cannot (not root, not x86-64, no mirror).
# Environment: SPEAKER_AGENT_ROOTS (default /var/tmp/speaker-agent-roots), DEBIAN_MIRROR.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOTS=${SPEAKER_AGENT_ROOTS:-/var/tmp/speaker-agent-roots}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
R=$ROOTS/aec3-trixie-amd64
ARCHES=amd64
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) ARCHES=${2:?--arch needs a value}; shift ;;
    *) echo "usage: $0 [--arch amd64|arm64|armhf|all]" >&2; exit 2 ;;
  esac
  shift
done
[ "$ARCHES" = all ] && ARCHES="arm64 armhf"
# the x86-64 tool always: the bench's main rows, and the root's own compiler builds it
ARCHES="amd64 $(echo " $ARCHES " | sed 's/ amd64 / /g')"
for a in $ARCHES; do
  case "$a" in amd64|arm64|armhf) ;; *) echo "unknown --arch $a (amd64, arm64, armhf or all)" >&2; exit 2 ;; esac
done
[ "$(id -u)" = 0 ] || { echo "not available: needs root (a chroot and apt-get in it)"; exit 77; }
[ "$(uname -m)" = x86_64 ] || { echo "not available: the root is x86-64, this machine is $(uname -m)"; exit 77; }

if [ ! -x "$R/usr/bin/apt-get" ]; then
  mkdir -p "$R"
  if [ -f "$ROOTS/debian-trixie-minbase-amd64.tar" ]; then
    tar -xf "$ROOTS/debian-trixie-minbase-amd64.tar" -C "$R"
  elif command -v debootstrap >/dev/null; then
    debootstrap --variant=minbase trixie "$R" "$MIRROR" >"$ROOTS/debootstrap-aec3-trixie-amd64.log" 2>&1 ||
      { echo "debootstrap failed, see $ROOTS/debootstrap-aec3-trixie-amd64.log"; exit 1; }
  else
    echo "not available: no $ROOTS/debian-trixie-minbase-amd64.tar and no debootstrap"; exit 77
  fi
fi
echo "deb $MIRROR trixie main" >"$R/etc/apt/sources.list"
cp /etc/resolv.conf "$R/etc/resolv.conf"
mounted=()
cleanup() { for m in "${mounted[@]}"; do umount "$m" || true; done; }
trap cleanup EXIT
for m in proc dev; do
  if ! mountpoint -q "$R/$m"; then
    if [ $m = proc ]; then mount -t proc proc "$R/proc"; else mount --bind /dev "$R/dev"; fi
    mounted=("$R/$m" "${mounted[@]}")
  fi
done

pkgs="g++ pkg-config libwebrtc-audio-processing-dev"
for a in $ARCHES; do
  case "$a" in
    arm64) pkgs="$pkgs g++-aarch64-linux-gnu libwebrtc-audio-processing-dev:arm64" ;;
    armhf) pkgs="$pkgs g++-arm-linux-gnueabihf libwebrtc-audio-processing-dev:armhf" ;;
  esac
  [ "$a" = amd64 ] || chroot "$R" dpkg --add-architecture "$a"
done
log=$ROOTS/aec3-trixie-amd64-apt.log
chroot "$R" apt-get -o APT::Sandbox::User=root update -q >"$log" 2>&1 ||
  { tail -5 "$log"; echo "not available: apt-get update failed in $R (no Debian mirror?)"; exit 77; }
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive chroot "$R" apt-get -o APT::Sandbox::User=root install -y -q --no-install-recommends $pkgs >>"$log" 2>&1 ||
  { tail -20 "$log"; echo "apt-get install failed in $R, see $log"; exit 1; }
chroot "$R" apt-get clean
mkdir -p "$R/src"
cp "$HERE/aec3.cc" "$R/src/aec3.cc"
for a in $ARCHES; do
  case "$a" in
    amd64) cxx=g++ triplet=x86_64-linux-gnu out=aec3 ;;
    arm64) cxx=aarch64-linux-gnu-g++ triplet=aarch64-linux-gnu out=aec3-aarch64 ;;
    armhf) cxx=arm-linux-gnueabihf-g++ triplet=arm-linux-gnueabihf out=aec3-armhf ;;
  esac
  chroot "$R" /bin/sh -ec "flags=\$(PKG_CONFIG_LIBDIR=/usr/lib/$triplet/pkgconfig:/usr/share/pkgconfig pkg-config --cflags --libs webrtc-audio-processing-1)
    $cxx -O2 -std=c++17 -o /usr/local/bin/$out /src/aec3.cc \$flags"
  echo "built $R/usr/local/bin/$out ($(chroot "$R" dpkg-query -W -f '${Package}:${Architecture} ${Version}' "libwebrtc-audio-processing-1-*:$a" 2>/dev/null || echo '?'))"
done
