#!/usr/bin/env bash
# Proves the README's first command on a fresh Debian machine: a debootstrap minbase root of the release,
# a clean copy of this checkout in /root/speaker-agent, then, inside it as root,
#   bash scripts/setup.sh      (timed: Debian packages, npm ci with the native addons, the build)
#   npm start                  (local companion, virtual PulseAudio devices, a scripted user; exits 0 after "demo done")
#   bash scripts/install.sh --companion --yes   (timed; then run again: it must change nothing; then over an older
#                                                release: staged and swapped in)
# systemd is not PID 1 in the root (it is a chroot): install.sh installs systemd, the project in /opt, the user and
# the units, enables them (the multi-user.target.wants links), enrolls without contacting the companion (not
# running) and says the services start at the next boot; the check verifies each of those in the root, that the
# real systemctl answered "offline", and that the installed addons load (scripts/check-addons.mjs in /opt).
#
#   scripts/check-debian-root.sh <bookworm|trixie> [--keep] [--root DIR]
#     --keep       leave the root (DIR) on disk afterwards, to look inside (chroot DIR bash)
#     --root DIR   build the root in DIR (must not exist or be empty); default: a new dir under /var/tmp
#
# trixie: no node on the PATH, so setup.sh installs Debian's nodejs (20). bookworm: Debian's nodejs is 18, too
# old; the host's Node (>= 20, with its headers) is copied into the root's /usr/local as a developer would
# install one, and afterwards setup.sh is shown to stop with a clear message when only Debian's node 18 is there.
#
# The bare root is cached as /var/tmp/speaker-agent-roots/debian-<release>-minbase-<arch>.tar (delete it to
# re-bootstrap); every run unpacks a pristine copy. The mounts (/proc /sys /dev /dev/pts, tmpfs /dev/shm and /run,
# the host's resolv.conf) live in a private mount and PID namespace: when the run ends they go away, and so does
# every process left in the root (the virtual PulseAudio daemon).
# Exit codes: 0 proved; 1 a step failed (the message says which); 2 usage; 77 cannot run here (not root, no
# debootstrap, no network to Debian's mirror) so a test can skip.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
CACHE_DIR=${SPEAKER_AGENT_ROOTS:-/var/tmp/speaker-agent-roots}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SETUP_TIMEOUT=${SETUP_TIMEOUT:-2400}
START_TIMEOUT=${START_TIMEOUT:-300}

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "check-debian-root: FAIL: $*" >&2; exit 1; }
skip() { echo "check-debian-root: SKIP: $*" >&2; exit 77; }
say() { echo "==> [$RELEASE] $*"; }

RELEASE="" KEEP=0 ROOT=""
while [ $# -gt 0 ]; do
  case "$1" in
    bookworm|trixie) RELEASE=$1 ;;
    --keep) KEEP=1 ;;
    --root) ROOT=${2:?--root needs a directory}; shift ;;
    --root=*) ROOT=${1#*=} ;;
    -h|--help) usage; exit 0 ;;
    *) echo "check-debian-root: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[ -n "$RELEASE" ] || { usage >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, chroot, mounts): sudo $0 $RELEASE"
command -v unshare >/dev/null && unshare --mount --pid --fork true 2>/dev/null ||
  skip "cannot create mount/PID namespaces here (unshare failed)"
ARCH=$(dpkg --print-architecture 2>/dev/null) || skip "not a Debian host (no dpkg)"
if ! command -v debootstrap >/dev/null; then
  say "installing debootstrap on the host"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap; } ||
    skip "debootstrap is missing and could not be installed (no network to Debian's mirror?)"
fi
[ -e "/usr/share/debootstrap/scripts/$RELEASE" ] || skip "this debootstrap does not know $RELEASE (update debootstrap)"

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# ---------- the bare root, cached ----------
TARBALL="$CACHE_DIR/debian-$RELEASE-minbase-$ARCH.tar"
if [ ! -s "$TARBALL" ]; then
  mkdir -p "$CACHE_DIR"
  boot=$(mktemp -d "$CACHE_DIR/.bootstrap-$RELEASE.XXXXXX")
  say "debootstrap --variant=minbase $RELEASE (cached afterwards as $TARBALL)"
  t0=$(now)
  if ! debootstrap --variant=minbase --arch="$ARCH" "$RELEASE" "$boot" "$MIRROR" > "$boot.log" 2>&1; then
    tail -15 "$boot.log" >&2
    rm -rf --one-file-system "$boot"
    skip "debootstrap $RELEASE failed (no network to $MIRROR?); log: $boot.log"
  fi
  # A fresh machine: no package lists yet, no downloaded .debs.
  find "$boot/var/lib/apt/lists" -maxdepth 1 -type f ! -name lock -delete
  rm -f "$boot"/var/cache/apt/archives/*.deb
  tar -C "$boot" --numeric-owner -cf "$TARBALL.tmp" . && mv "$TARBALL.tmp" "$TARBALL"
  rm -rf --one-file-system "$boot" "$boot.log"
  say "bootstrapped in $(secs "$t0" "$(now)") s"
fi

# ---------- a pristine copy ----------
if [ -n "$ROOT" ]; then
  [ ! -e "$ROOT" ] || [ -z "$(ls -A "$ROOT")" ] || die "--root $ROOT is not empty (a run starts from a pristine root)"
  mkdir -p "$ROOT"
  ROOT=$(cd "$ROOT" && pwd)
else
  ROOT=$(mktemp -d "/var/tmp/speaker-agent-root-$RELEASE.XXXXXX")
fi
mounted_below() { awk -v r="$ROOT" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo; }
cleanup() {
  local rc=$?
  # The mounts were made in a namespace that has ended; never delete through one that is still there.
  if [ -n "$(mounted_below)" ]; then
    echo "check-debian-root: still mounted below $ROOT, not deleting it:" >&2; mounted_below >&2
  elif [ "$KEEP" = 1 ]; then
    echo "kept the root: $ROOT   (look inside: chroot $ROOT bash; delete: rm -rf $ROOT)"
  else
    # a failed run's logs outlive the root
    if [ "$rc" != 0 ] && [ -d "${LOG_DIR:-}" ]; then
      rm -rf "$CACHE_DIR/logs-$RELEASE" && mkdir -p "$CACHE_DIR" && cp -a "$LOG_DIR" "$CACHE_DIR/logs-$RELEASE" &&
        echo "check-debian-root: the logs are in $CACHE_DIR/logs-$RELEASE (the root is deleted; --keep keeps it)" >&2
    fi
    rm -rf --one-file-system "$ROOT"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "unpacking a pristine root in $ROOT"
tar -C "$ROOT" --numeric-owner -xf "$TARBALL"
# The checkout as git sees it (tracked and untracked-but-not-ignored files of the working tree): no node_modules,
# no dist, no build output.
APP=/root/speaker-agent
mkdir -p "$ROOT$APP"
(cd "$SRC" && git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar --null -T - -cf -) | tar -C "$ROOT$APP" -xf -

if [ "$RELEASE" = bookworm ]; then
  # Debian 12's nodejs is 18: a developer installs a newer Node first. The host's own Node (binary, headers, npm)
  # goes to /usr/local, where `make install` of Node or an unpacked release tarball puts it.
  HOST_NODE=$(readlink -f "$(command -v node 2>/dev/null || echo /nonexistent)")
  hp=$(dirname "$(dirname "$HOST_NODE")")
  [ -x "$HOST_NODE" ] && [ "$("$HOST_NODE" -p 'process.versions.node.split(".")[0]')" -ge 20 ] ||
    skip "bookworm needs a Node >= 20 on the host to copy into the root (found: ${HOST_NODE})"
  [ -f "$hp/include/node/common.gypi" ] || skip "the host's Node has no headers in $hp/include/node"
  [ -f "$hp/lib/node_modules/npm/bin/npm-cli.js" ] || skip "the host's Node has no npm in $hp/lib/node_modules/npm"
  say "Node $("$HOST_NODE" --version) from the host into the root's /usr/local"
  mkdir -p "$ROOT/usr/local/bin" "$ROOT/usr/local/include" "$ROOT/usr/local/lib/node_modules"
  cp -a "$HOST_NODE" "$ROOT/usr/local/bin/node"
  cp -a "$hp/include/node" "$ROOT/usr/local/include/"
  cp -a "$hp/lib/node_modules/npm" "$ROOT/usr/local/lib/node_modules/"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$ROOT/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$ROOT/usr/local/bin/npx"
fi

# The network is the host's: when it reaches the registry through a TLS-inspecting proxy, the root needs the
# same local CAs (ca-certificates, installed by setup.sh, adds them to the system bundle) and Node is told to use
# that bundle, as on the host.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$ROOT/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
fi
HOST_NODE_CA=${NODE_EXTRA_CA_CERTS:-}

# ---------- inside: mounts, setup.sh, npm start ----------
LOG_DIR="$ROOT/var/log/check-debian-root"
mkdir -p "$LOG_DIR"
export ROOT APP RELEASE SETUP_TIMEOUT START_TIMEOUT LOG_DIR HOST_NODE_CA
unshare --mount --pid --fork --propagation private bash -euo pipefail -c '
  umount_all() { for m in run dev/shm dev/pts dev sys proc etc/resolv.conf; do umount -l "$ROOT/$m" 2>/dev/null || true; done; }
  trap umount_all EXIT
  mount -t proc proc "$ROOT/proc"
  mount --bind /sys "$ROOT/sys"
  mount --bind /dev "$ROOT/dev"
  mount --bind /dev/pts "$ROOT/dev/pts"
  mount -t tmpfs -o mode=1777 shm "$ROOT/dev/shm"
  mount -t tmpfs -o mode=755 run "$ROOT/run"
  rm -f "$ROOT/etc/resolv.conf"; touch "$ROOT/etc/resolv.conf"
  mount --bind "$(readlink -f /etc/resolv.conf)" "$ROOT/etc/resolv.conf"

  # A login shell of a fresh machine: nothing of the host environment (no npm_config_*, no PULSE_SERVER).
  in_root() {
    chroot "$ROOT" /usr/bin/env -i HOME=/root USER=root LOGNAME=root LANG=C.UTF-8 TERM=dumb \
      ${HOST_NODE_CA:+NODE_EXTRA_CA_CERTS=$HOST_NODE_CA} PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin bash -c "cd $APP && $1"
  }
  now() { date +%s.%N; }
  secs() { awk -v a="$1" -v b="$2" "BEGIN { printf \"%.1f\", b - a }"; }
  say() { echo "==> [$RELEASE] $*"; }
  fail() { echo "check-debian-root: FAIL [$RELEASE]: $*" >&2; exit 1; }

  say "in the root: node $(in_root "command -v node >/dev/null && node --version || echo none")"
  say "bash scripts/setup.sh   (log: $LOG_DIR/setup.log)"
  t0=$(now)
  # Only its own "==>" lines and errors on the terminal; apt and the compilers go to the log.
  if ! in_root "timeout $SETUP_TIMEOUT bash scripts/setup.sh" 2>&1 | tee "$LOG_DIR/setup.log" |
      grep --line-buffered -E "^(==>|E:|npm (ERR|error))|too old" | sed -u "s/^/    /"; then
    tail -40 "$LOG_DIR/setup.log" | sed "s/^/    /" >&2
    fail "scripts/setup.sh failed (last lines above; whole log: $LOG_DIR/setup.log)"
  fi
  t1=$(now)
  echo "SETUP_SECONDS=$(secs "$t0" "$t1")" > "$LOG_DIR/times"
  say "setup.sh done in $(secs "$t0" "$t1") s"

  say "npm start   (log: $LOG_DIR/start.log)"
  t2=$(now); done_at=""
  set +e
  in_root "timeout $START_TIMEOUT npm start" > >(tee "$LOG_DIR/start.log") 2>&1
  rc=$?
  set -e
  t3=$(now)
  sleep 0.2  # tee flushes
  grep -qE "^demo +done" "$LOG_DIR/start.log" || fail "npm start exited $rc without \"demo done\" (log: $LOG_DIR/start.log)"
  [ "$rc" = 0 ] || fail "npm start printed \"demo done\" but exited $rc"
  echo "START_SECONDS=$(secs "$t2" "$t3")" >> "$LOG_DIR/times"
  say "npm start -> demo done, exit 0, in $(secs "$t2" "$t3") s"

  # Run twice, it finds everything in place: no package is asked for again (a name dpkg never reports as
  # installed, e.g. one that is only provided by another package, would be).
  in_root "bash scripts/setup.sh" > "$LOG_DIR/setup-again.log" 2>&1 || fail "setup.sh failed when run again (log: $LOG_DIR/setup-again.log)"
  if grep -E "installing (Debian packages|Node)|npm ci|rebuilding" "$LOG_DIR/setup-again.log"; then
    fail "setup.sh run again installed something again (above; log: $LOG_DIR/setup-again.log)"
  fi
  say "setup.sh run again: nothing to install"

  # The service install, in a root where systemd is installed by install.sh but is not PID 1.
  say "bash scripts/install.sh --companion --yes   (log: $LOG_DIR/install.log)"
  t4=$(now)
  if ! in_root "timeout $SETUP_TIMEOUT bash scripts/install.sh --companion --yes" > "$LOG_DIR/install.log" 2>&1; then
    tail -40 "$LOG_DIR/install.log" | sed "s/^/    /" >&2
    fail "scripts/install.sh failed (last lines above; whole log: $LOG_DIR/install.log)"
  fi
  t5=$(now)
  grep "^==>" "$LOG_DIR/install.log" | sed "s/^/    /"
  grep -q "^==> systemd is not running here (systemctl: offline; " "$LOG_DIR/install.log" ||
    fail "install.sh did not say that systemd is not running (log: $LOG_DIR/install.log)"
  for u in speaker-agent speaker-agent-companion; do
    [ -f "$ROOT/etc/systemd/system/$u.service" ] || fail "no /etc/systemd/system/$u.service"
    [ -L "$ROOT/etc/systemd/system/multi-user.target.wants/$u.service" ] || fail "$u.service is not enabled (no multi-user.target.wants link)"
    in_root "systemctl is-enabled $u.service" | grep -qx enabled || fail "systemctl does not report $u.service enabled"
  done
  in_root "id -nG speaker-agent" | tr " " "\n" | grep -qx audio || fail "the user speaker-agent is missing or not in the audio group"
  in_root "speaker-agent enroll --check" > "$LOG_DIR/enroll-check.log" 2>&1 || fail "speaker-agent enroll --check failed (log: $LOG_DIR/enroll-check.log)"
  in_root "cd /opt/speaker-agent && node scripts/check-addons.mjs" > "$LOG_DIR/installed-addons.log" 2>&1 ||
    { cat "$LOG_DIR/installed-addons.log" >&2; fail "the installed addons do not load (scripts/check-addons.mjs in /opt/speaker-agent)"; }
  echo "INSTALL_SECONDS=$(secs "$t4" "$t5")" >> "$LOG_DIR/times"
  say "install.sh done in $(secs "$t4" "$t5") s: units enabled, not started (no systemd as PID 1), $(sed "s/:.*//" "$LOG_DIR/enroll-check.log"), the installed addons load"
  in_root "bash scripts/install.sh --companion --yes" > "$LOG_DIR/install-again.log" 2>&1 || fail "install.sh failed when run again (log: $LOG_DIR/install-again.log)"
  if grep -E "^==> (installing|installed|staging|npm ci|enabling|creating|adding|building)" "$LOG_DIR/install-again.log"; then
    fail "install.sh run again changed something (above; log: $LOG_DIR/install-again.log)"
  fi
  say "install.sh run again: nothing changed"

  # An upgrade over an older release (its entry file stands for it): staged beside it, checked, swapped in (one
  # exchange of the two directories, through the root'"'"'s own python3), nothing left beside /opt/speaker-agent.
  echo "// an older release" > "$ROOT/opt/speaker-agent/dist/speaker-agent.js"
  in_root "bash scripts/install.sh --companion --yes" > "$LOG_DIR/install-upgrade.log" 2>&1 ||
    { tail -20 "$LOG_DIR/install-upgrade.log" | sed "s/^/    /" >&2; fail "install.sh failed to upgrade (log: $LOG_DIR/install-upgrade.log)"; }
  grep -q "^==> staging the new release in /opt/speaker-agent.staging" "$LOG_DIR/install-upgrade.log" ||
    fail "install.sh did not stage the upgrade (log: $LOG_DIR/install-upgrade.log)"
  cmp -s "$ROOT/opt/speaker-agent/dist/speaker-agent.js" "$ROOT$APP/dist/speaker-agent.js" ||
    fail "the upgrade did not install the new dist/speaker-agent.js"
  [ ! -e "$ROOT/opt/speaker-agent.staging" ] && [ ! -e "$ROOT/opt/speaker-agent.previous" ] ||
    fail "the upgrade left $(ls -d "$ROOT"/opt/speaker-agent.* | sed "s#^$ROOT##")"
  in_root "cd /opt/speaker-agent && node scripts/check-addons.mjs" > "$LOG_DIR/upgraded-addons.log" 2>&1 ||
    { cat "$LOG_DIR/upgraded-addons.log" >&2; fail "the upgraded release'"'"'s addons do not load"; }
  say "an upgrade: staged, swapped in, its addons load"

  if [ "$RELEASE" = bookworm ]; then
    # A fresh bookworm machine without the newer Node: setup.sh installs Debian'"'"'s nodejs (18) and must stop
    # there, saying why and what to do.
    say "without /usr/local Node: setup.sh must refuse Debian'"'"'s nodejs 18"
    mkdir -p "$ROOT/usr/local/hidden-node"
    mv "$ROOT/usr/local/bin/node" "$ROOT/usr/local/bin/npm" "$ROOT/usr/local/bin/npx" "$ROOT/usr/local/hidden-node/"
    set +e
    in_root "timeout $SETUP_TIMEOUT bash scripts/setup.sh" > "$LOG_DIR/setup-node18.log" 2>&1
    rc=$?
    set -e
    sed "s/^/    /" "$LOG_DIR/setup-node18.log" | tail -6
    [ "$rc" != 0 ] || fail "setup.sh exited 0 with Debian'"'"'s node $(in_root "node --version")"
    ver=$(in_root "node --version")
    case "$ver" in v18.*) ;; *) fail "expected Debian'"'"'s node 18 after setup.sh, found ${ver:-none}" ;; esac
    grep -qi "too old" "$LOG_DIR/setup-node18.log" ||
      fail "setup.sh stopped (exit $rc) but did not say that Node $ver is too old and what is needed"
    say "setup.sh stopped (exit $rc) with a clear message about Node $ver"
  fi
'
# shellcheck disable=SC1091
. "$LOG_DIR/times"
echo "check-debian-root: OK [$RELEASE]: bash scripts/setup.sh ${SETUP_SECONDS} s, npm start -> demo done ${START_SECONDS} s, install.sh ${INSTALL_SECONDS} s"
