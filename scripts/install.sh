#!/usr/bin/env bash
# Installs the speaker agent as a system service on Debian / Raspberry Pi OS (bookworm, trixie; arm64, armhf, x86-64).
#
#   sudo scripts/install.sh [--server-url URL] [--workspace-key KEY] [--companion] [--no-start] [--yes]
#   sudo scripts/install.sh --uninstall [--purge]
#
# Steps (each is skipped when already done, so running it twice changes nothing):
#   1. Debian packages the agent needs (ALSA tools, PortAudio, espeak-ng, pocketsphinx, libspeexdsp, ffmpeg, build tools)
#   2. Node.js >= 20.10
#   3. the project in /opt/speaker-agent (`npm ci --omit=dev`, native addons build from source); an upgrade is
#      assembled and checked in /opt/speaker-agent.staging first, and replaces the installed release only when
#      complete: a failed download or build leaves the installed one as it was, still running
#   4. the system user `speaker-agent` in the `audio` group
#   5. the systemd units (systemd/*.service), enabled
#   6. enrollment: server URL + workspace key (flags, SPEAKER_AGENT_SERVER_URL / _WORKSPACE_KEY, or prompts);
#      the identity (client id + secret) is created once in /var/lib/speaker-agent and never replaced
#   7. start (or restart when something changed)
#
# Where systemd is not running (`systemctl is-system-running` says offline: a chroot, a container, an image being
# built), steps 1-6 run the same, and: the units are enabled but not started (they start at the next boot), no
# daemon-reload, and enrollment does not contact the server (nothing there may be reachable yet; `speaker-agent
# doctor` checks it on the booted machine). The last line says so. scripts/check-debian-root.sh proves this in a
# fresh Debian root.
#
# Options:
#   --server-url URL      the Voice Assistant Service (e.g. https://voice.example.com)
#   --workspace-key KEY   the workspace API key (dashboard -> workspace settings)
#   --companion           also install the local companion server and, without --server-url, use it
#   --no-start            install and enable, but do not start now
#   --yes                 never prompt (fail if a required value is missing)
#   --uninstall           stop, disable and remove the service and /opt/speaker-agent; config and identity stay
#   --purge               with --uninstall: also remove config, identity, companion data and the user
#
# For packaging and tests: DESTDIR=/some/root installs below that root (the user, systemctl and apt-get are
# the host's, found on PATH); PREFIX (default /opt/speaker-agent) and SERVICE_USER (default speaker-agent).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
DESTDIR=${DESTDIR:-}
PREFIX=${PREFIX:-/opt/speaker-agent}
SERVICE_USER=${SERVICE_USER:-speaker-agent}
COMPANION_URL=${COMPANION_URL:-http://127.0.0.1:8787}
UNITS_DIR=/etc/systemd/system
CONF_DIR=/etc/speaker-agent
STATE_DIR=/var/lib/speaker-agent
COMPANION_STATE_DIR=/var/lib/speaker-agent-companion
NODE_MIN_MAJOR=20
NODE_MIN_MINOR=10

SERVER_URL=${SPEAKER_AGENT_SERVER_URL:-}
WORKSPACE_KEY=${SPEAKER_AGENT_WORKSPACE_KEY:-}
COMPANION=0 START=1 ASSUME_YES=0 UNINSTALL=0 PURGE=0

usage() { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "install: $*" >&2; exit "${2:-1}"; }
say() { echo "==> $*"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --server-url) SERVER_URL=${2:?--server-url needs a value}; shift ;;
    --server-url=*) SERVER_URL=${1#*=} ;;
    --workspace-key) WORKSPACE_KEY=${2:?--workspace-key needs a value}; shift ;;
    --workspace-key=*) WORKSPACE_KEY=${1#*=} ;;
    --companion) COMPANION=1 ;;
    --no-start) START=0 ;;
    --yes|-y) ASSUME_YES=1 ;;
    --uninstall) UNINSTALL=1 ;;
    --purge) PURGE=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install: unknown option: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

[ "$(id -u)" -eq 0 ] || die "run as root (sudo $0 ...)" 2
[ "$PURGE" = 1 ] && [ "$UNINSTALL" = 0 ] && die "--purge only goes with --uninstall" 2

R() { printf '%s%s' "$DESTDIR" "$1"; } # a path inside the target root

# ---------- uninstall ----------
if [ "$UNINSTALL" = 1 ]; then
  for u in speaker-agent speaker-agent-companion; do
    if [ -f "$(R $UNITS_DIR/$u.service)" ]; then
      say "removing $u.service"
      systemctl disable --now "$u.service" >/dev/null 2>&1 || true
      rm -f "$(R $UNITS_DIR/$u.service)"
    fi
  done
  systemctl daemon-reload || true
  rm -rf "$(R "$PREFIX")" "$(R "$PREFIX").staging" "$(R "$PREFIX").previous"
  rm -f "$(R /usr/local/bin/speaker-agent)"
  if [ "$PURGE" = 1 ]; then
    say "purging config, identity and companion data"
    rm -rf "$(R $CONF_DIR)" "$(R $STATE_DIR)" "$(R $COMPANION_STATE_DIR)"
    getent passwd "$SERVICE_USER" >/dev/null && userdel "$SERVICE_USER" || true
  else
    echo "kept $CONF_DIR and $STATE_DIR (the identity: the server only accepts this device's first secret)."
    echo "Remove them with --uninstall --purge."
  fi
  exit 0
fi

# ---------- 1. Debian packages ----------
case "$(uname -m)" in
  aarch64|arm64|armv7l|armv6l|x86_64) ;;
  *) echo "install: warning: $(uname -m) is not a tested architecture (arm64, armhf, x86-64)" >&2 ;;
esac
PKGS=(alsa-utils libasound2-plugins portaudio19-dev libasound2-dev libssl-dev libespeak-ng1 espeak-ng-data
      libpocketsphinx3 pocketsphinx-en-us ffmpeg libspeexdsp1 libopus0 python3 make g++ ca-certificates libatomic1 systemd)
# libatomic1: the official Node builds for armv7l (armhf) need it; a fresh Debian armhf lacks it.
# systemd: the agent is a systemd service (every Debian / Pi OS install has it; a minimal root does not).
# "a|b" specs are picked by what apt offers (scripts/debian-packages.sh, shared with setup.sh)
. "$SRC/scripts/debian-packages.sh"
mapfile -t unmet < <(deb_unmet "${PKGS[@]}")
if [ ${#unmet[@]} -gt 0 ]; then
  apt-get update -qq
  mapfile -t missing < <(deb_pick "${unmet[@]}")
  say "installing Debian packages: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ---------- 2. Node.js ----------
NODE=$(command -v node || true)
[ -n "$NODE" ] || die "Node.js is not installed: install Node $NODE_MIN_MAJOR.$NODE_MIN_MINOR or newer (Debian 13 / Pi OS trixie: apt-get install nodejs npm; any release: npm install -g node@24)" 3
NODE=$(readlink -f "$NODE")
. "$SRC/scripts/lib/node-build.sh"
node_supported_or_exit
npm_matches_node_or_exit
use_matching_node_headers

# ---------- 3. the project ----------
if [ ! -f "$SRC/dist/speaker-agent.js" ]; then
  [ -x "$SRC/node_modules/.bin/esbuild" ] || die "$SRC is not built and has no dev dependencies: run scripts/setup.sh first" 3
  say "building"
  (cd "$SRC" && npm run build --silent)
fi

# Copies a file only when its content or mode differs; prints the path when it did. DRY=1: only prints it.
sync_file() { # src dst mode
  if [ ! -f "$2" ] || ! cmp -s "$1" "$2" || [ "$(stat -c %a "$2")" != "$3" ]; then
    [ "${DRY:-0}" = 1 ] || install -D -m "$3" "$1" "$2"
    echo "$2"
  fi
}
# Mirrors the files the package needs (package.json "files" + manifest) into DST, deleting stale ones; true when
# something differed. DRY=1: only tells.
sync_tree() { # dst
  local dst=$1
  local list; list=$(cd "$SRC" && { printf '%s\n' package.json package-lock.json README.md LICENSE;
    find bin dist systemd scripts vendor -type f ! -path 'vendor/*/build/*' ! -path 'vendor/*/node_modules/*'; } |
    while read -r f; do [ -f "$f" ] && echo "$f"; done | sort)
  local f changed=""
  while read -r f; do
    local mode=644; [ -x "$SRC/$f" ] && mode=755
    [ -n "$(sync_file "$SRC/$f" "$dst/$f" $mode)" ] && changed=1
  done <<< "$list"
  # stale files of an older version (never node_modules, which npm owns)
  if [ -d "$dst" ]; then
    while read -r f; do
      f=${f#./}
      grep -qxF "$f" <<< "$list" || { [ "${DRY:-0}" = 1 ] || rm -f "$dst/$f"; changed=1; }
    done < <(cd "$dst" && find bin dist systemd scripts vendor -type f ! -path 'vendor/*/build/*' ! -path 'vendor/*/node_modules/*' 2>/dev/null)
  fi
  [ -n "$changed" ]
}
# Writes a stamp by rename: never half written, and never through a file that another tree shares.
write_stamp() { printf '%s\n' "$2" > "$1.tmp" && mv -f "$1.tmp" "$1"; }
tmpunit=$(mktemp)
tmpwrap=$(mktemp)
STAGE_LEFT="" # a stage being assembled: removed however the run ends (a failure, Ctrl-C), never left on the card
trap 'rm -f "$tmpunit" "$tmpwrap"; [ -z "$STAGE_LEFT" ] || rm -rf "$STAGE_LEFT"' EXIT
CHANGED=0

# An upgrade is staged: the new release is assembled and checked in PREFIX.staging while the installed one stays
# as it was (and its service keeps running), then the two trade places by rename. Before, the new files were
# written over the installed ones and `npm ci` emptied node_modules first: a download or a build that failed (a
# bad network, a full card) left a speaker that no longer started, until install.sh was run again and succeeded.
LIVE=$(R "$PREFIX") STAGE="$(R "$PREFIX").staging" PREVIOUS="$(R "$PREFIX").previous"
# One run at a time (a retry over ssh while the first still compiles would delete its stage mid-swap): a lock on
# the directory that holds the release, kept until this run exits; it creates no file.
mkdir -p "$(dirname "$LIVE")"
exec 9<"$(dirname "$LIVE")"
flock -n 9 || die "another install.sh is running (it holds $(dirname "$PREFIX")); wait for it to finish" 3
# A release swapped in whose service was not restarted yet (the run stopped after the swap, or --no-start): the
# next run that starts services restarts it, so the old process never runs on with the new files.
RESTART_MARK=.restart-pending
# a swap cut between its two renames (power lost): the release that was installed is put back
if [ ! -e "$LIVE" ] && [ -d "$PREVIOUS" ]; then
  say "putting back $PREFIX (an earlier upgrade was cut off while swapping)"
  mv -T "$PREVIOUS" "$LIVE"
fi
rm -rf "$STAGE" "$PREVIOUS" # what a failed or cut run left
LOCK_STAMP=node_modules/.speaker-agent-lock.sha256
# the lockfile and the Node ABI: a Node upgrade rebuilds the addons too
LOCK_SUM="$(sha256sum "$SRC/package-lock.json" | cut -d' ' -f1) abi $("$NODE" -p process.versions.modules)"
lock_current() { [ "$(cat "$1/$LOCK_STAMP" 2>/dev/null)" = "$LOCK_SUM" ]; }

# The swap: one atomic exchange of the two directories (renameat2 RENAME_EXCHANGE, through python3, which step 1
# installs: coreutils' `mv --exchange` is only in 9.5+, not bookworm's). Where the filesystem cannot exchange,
# two renames, which a power cut can separate: the next run puts the previous release back (above).
swap_releases() {
  local rc=0
  python3 - "$STAGE" "$LIVE" <<'PY' || rc=$?
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
if libc.renameat2(AT_FDCWD, os.fsencode(sys.argv[1]), AT_FDCWD, os.fsencode(sys.argv[2]), RENAME_EXCHANGE) != 0:
    e = ctypes.get_errno()
    print(f"install: exchanging {sys.argv[1]} and {sys.argv[2]}: {os.strerror(e)}", file=sys.stderr)
    sys.exit(3 if e in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP) else 1)
PY
  case $rc in
    0) mv -T "$STAGE" "$PREVIOUS" ;; # the installed release, now in the stage's place
    3) mv -T "$LIVE" "$PREVIOUS" || stage_failed "cannot move $PREFIX aside"
       mv -T "$STAGE" "$LIVE" || { mv -T "$PREVIOUS" "$LIVE"; stage_failed "cannot move $PREFIX.staging to $PREFIX"; } ;;
    *) stage_failed "cannot swap in the new release" ;;
  esac
  sync -f "$LIVE"
}

stage_failed() { # why (the EXIT trap removes the stage)
  if [ -d "$LIVE" ]; then
    die "$1: the installed release in $PREFIX is unchanged (its service keeps running); fix it and run $0 again" 3
  fi
  die "$1; fix it and run $0 again" 3
}

if [ -d "$LIVE" ] && ! DRY=1 sync_tree "$LIVE" && lock_current "$LIVE" && vendored_addons_current "$LIVE"; then
  # installed and current: only a Debian library upgrade can have broken an addon since; rebuilt in place
  ensure_addons "$LIVE" || die "the native addons do not work in $("$NODE" --version): see above" 3
else
  if [ -d "$LIVE" ]; then say "staging the new release in $PREFIX.staging (the installed one is kept until it is ready)"; fi
  STAGE_LEFT=$STAGE
  mkdir -p "$STAGE"
  sync_tree "$STAGE" || true # checked whole below, before the swap
  if [ -d "$LIVE/node_modules" ] && lock_current "$LIVE"; then
    # the same dependencies: copied, not linked (a rebuild in the stage must not write into the running release)
    cp -a "$LIVE/node_modules" "$STAGE/" || stage_failed "copying node_modules into $PREFIX.staging failed (is the disk full?)"
    for a in "${VENDORED_ADDONS[@]}"; do
      [ -d "$LIVE/vendor/$a/build" ] && { cp -a "$LIVE/vendor/$a/build" "$STAGE/vendor/$a/" || stage_failed "copying vendor/$a/build failed"; }
    done
  else
    say "npm ci --omit=dev (native addons build from source: a few minutes on a Pi)"
    (cd "$STAGE" && npm_config_build_from_source=true npm ci --omit=dev --no-audit --no-fund) || stage_failed "npm ci failed"
    # onnxruntime-node (the wake word engine) ships every platform's library, ~290 MB: keep this board's only
    ort_bin="$STAGE/node_modules/onnxruntime-node/bin/napi-v6"
    if [ -d "$ort_bin" ]; then
      keep="$ort_bin/linux/$("$NODE" -p process.arch)"
      find "$ort_bin" -mindepth 2 -maxdepth 2 -type d ! -path "$keep" -exec rm -rf {} +
      find "$ort_bin" -mindepth 1 -maxdepth 1 -type d -empty -delete
    fi
    write_stamp "$STAGE/$LOCK_STAMP" "$LOCK_SUM"
    vendored_addons_built "$STAGE"
  fi
  # an update that changed only vendor/'s addon sources: rebuilt in the stage
  ensure_vendored_addons_current "$STAGE" || true # what does not load is named next
  ensure_addons "$STAGE" || stage_failed "the native addons do not work in $("$NODE" --version) (see above)"
  # every file copied whole (a write that failed, a full card, is found here, not on the speaker)
  if DRY=1 sync_tree "$STAGE"; then stage_failed "the release's files did not copy whole into $PREFIX.staging (is the disk full?)"; fi
  touch "$STAGE/$RESTART_MARK"
  # on the card before the swap: else a power cut soon after it could leave the new release's files empty
  sync -f "$STAGE"
  if [ ! -d "$LIVE" ]; then
    mv -T "$STAGE" "$LIVE" || stage_failed "cannot move $PREFIX.staging to $PREFIX"
  else
    swap_releases
  fi
  STAGE_LEFT=""
  rm -rf "$PREVIOUS"
  CHANGED=1
  say "installed the project in $PREFIX"
fi
# The `speaker-agent` command for people on the board: the service's config and identity by default, so
# `sudo speaker-agent doctor` / `status` look at the installed agent.
cat > "$tmpwrap" <<WRAP
#!/bin/sh
# speaker-agent as installed by scripts/install.sh: uses the service's config and identity (run as root).
# First the overrides the service reads (its unit's EnvironmentFile), so doctor checks what the running service
# runs; a variable given on the command line wins over them, they win over the defaults below (as in the unit).
. "$PREFIX/bin/environment-file.sh"
if [ "\${1:-}" = companion ]; then load_environment_file "$CONF_DIR/companion.env"; else load_environment_file "$CONF_DIR/environment"; fi
export CONFIGURATION_DIRECTORY="\${CONFIGURATION_DIRECTORY:-$CONF_DIR}"
export STATE_DIRECTORY="\${STATE_DIRECTORY:-$STATE_DIR}"
# the companion's own data (its unit's StateDirectory): without it, STATE_DIRECTORY above would make
# \`speaker-agent companion client reset\` work on a new database in the agent's directory
export SPEAKER_AGENT_COMPANION_DATA_DIR="\${SPEAKER_AGENT_COMPANION_DATA_DIR:-$COMPANION_STATE_DIR}"
# launch-node.sh, as the units do: the Node pinned at install time may be gone (removed, or upgraded to another
# path); it says so and still runs (doctor among them) with the node on the PATH
exec "$PREFIX/bin/launch-node.sh" "$NODE" -- "$PREFIX/bin/speaker-agent.js" "\$@"
WRAP
[ -n "$(sync_file "$tmpwrap" "$(R /usr/local/bin/speaker-agent)" 755)" ] && CHANGED=1

# ---------- 4. the system user ----------
if ! getent passwd "$SERVICE_USER" >/dev/null; then
  say "creating system user $SERVICE_USER"
  useradd --system --user-group --home-dir "$STATE_DIR" --no-create-home --shell /usr/sbin/nologin \
    --groups audio "$SERVICE_USER"
elif ! getent group audio | cut -d: -f4 | tr ',' '\n' | grep -qxF "$SERVICE_USER"; then
  say "adding $SERVICE_USER to the audio group"
  usermod -aG audio "$SERVICE_USER"
fi

# ---------- 5. systemd units ----------
# systemd as PID 1 answers running, degraded, starting, ...; without it (chroot, container) "offline".
SYSTEMD_STATE=$(systemctl is-system-running 2>/dev/null || true)
case "$SYSTEMD_STATE" in offline|unknown|"") SYSTEMD_UP=0 ;; *) SYSTEMD_UP=1 ;; esac
UNITS=(speaker-agent.service)
[ "$COMPANION" = 1 ] && UNITS+=(speaker-agent-companion.service)
# The companion installed by an earlier run, upgraded now without --companion, runs this release too: its unit is
# kept current and it is restarted with the release (before, it ran on with the old code over the new files), but
# never enabled or started here.
KEPT_UNITS=()
[ "$COMPANION" = 0 ] && [ -f "$(R $UNITS_DIR/speaker-agent-companion.service)" ] && KEPT_UNITS+=(speaker-agent-companion.service)
UNITS_CHANGED=0
for u in "${UNITS[@]}" "${KEPT_UNITS[@]}"; do
  # the node, the prefix and the user this install uses (SERVICE_USER: the units said speaker-agent whatever it was)
  sed -e "s#/usr/bin/node#$NODE#g" -e "s#/opt/speaker-agent#$PREFIX#g" \
    -e "s#^User=speaker-agent\$#User=$SERVICE_USER#" -e "s#^Group=speaker-agent\$#Group=$SERVICE_USER#" "$SRC/systemd/$u" > "$tmpunit"
  if [ -n "$(sync_file "$tmpunit" "$(R $UNITS_DIR/$u)" 644)" ]; then UNITS_CHANGED=1; say "installed $UNITS_DIR/$u"; fi
done
[ "$UNITS_CHANGED" = 1 ] && [ "$SYSTEMD_UP" = 1 ] && systemctl daemon-reload
# `systemctl enable` only makes the [Install] links: it works without a running systemd too.
for u in "${UNITS[@]}"; do
  systemctl is-enabled --quiet "$u" 2>/dev/null || { say "enabling $u"; systemctl enable --quiet "$u"; }
done

# ---------- 6. enrollment ----------
install -d -m 0750 "$(R $CONF_DIR)"
install -d -m 0700 "$(R $STATE_DIR)"
chown "root:$SERVICE_USER" "$(R $CONF_DIR)"
chown "$SERVICE_USER:$SERVICE_USER" "$(R $STATE_DIR)"

agent() { # runs the installed CLI with the service's directories and its unit's EnvironmentFile (a CA for the server)
  local env_file=environment
  [ "${1:-}" = companion ] && env_file=companion.env
  ( . "$(R "$PREFIX")/bin/environment-file.sh" && load_environment_file "$(R $CONF_DIR)/$env_file"
    CONFIGURATION_DIRECTORY=$(R $CONF_DIR) STATE_DIRECTORY=$(R $STATE_DIR) SPEAKER_AGENT_LOG_LEVEL=warn \
      exec "$NODE" "$(R "$PREFIX")/bin/speaker-agent.js" "$@" )
}

LOCAL_COMPANION=0
if [ "$COMPANION" = 1 ] && [ -z "$SERVER_URL" ]; then
  SERVER_URL=$COMPANION_URL
  LOCAL_COMPANION=1
  if [ -z "$WORKSPACE_KEY" ]; then
    install -d -m 0700 "$(R $COMPANION_STATE_DIR)"
    # The companion's default workspace (created once, then read back).
    WORKSPACE_KEY=$(agent companion workspace ensure-default --data-dir "$(R $COMPANION_STATE_DIR)" --print-key)
    chown -R "$SERVICE_USER:$SERVICE_USER" "$(R $COMPANION_STATE_DIR)"
  fi
fi

snapshot_enrollment() { { cat "$(R $CONF_DIR/config.json)" "$(R $STATE_DIR/identity.json)" 2>/dev/null || true; } | sha256sum; }
before=$(snapshot_enrollment)
if [ -z "$SERVER_URL" ] && [ -z "$WORKSPACE_KEY" ] && agent enroll --check >/dev/null 2>&1; then
  : # enrolled before and nothing new asked for
else
  if ! agent enroll --check >/dev/null 2>&1 && [ "$ASSUME_YES" = 0 ] && [ -t 0 ]; then
    [ -n "$SERVER_URL" ] || read -r -p "Server URL (https://...): " SERVER_URL
    [ -n "$WORKSPACE_KEY" ] || { read -r -s -p "Workspace key: " WORKSPACE_KEY; echo; }
  fi
  # The key goes through the environment, not argv (argv is world-readable in /proc).
  # `enroll` writes nothing when the values are the ones already configured and the identity exists.
  verify=()
  # Without systemd the network may not be up. The companion installed here is started first, so the agent
  # enrolls against it as against any server (before, it was started in step 7, after this: enrollment failed on
  # every booted machine, and so did every run after); with --no-start it is not asked.
  if [ "$SYSTEMD_UP" = 0 ]; then
    verify=(--no-verify)
  elif [ "$LOCAL_COMPANION" = 1 ]; then
    if [ "$START" = 1 ]; then
      systemctl is-active --quiet speaker-agent-companion.service || { say "starting speaker-agent-companion.service (the agent enrolls against it)"; systemctl start speaker-agent-companion.service; }
    else
      verify=(--no-verify)
    fi
  fi
  SPEAKER_AGENT_WORKSPACE_KEY=$WORKSPACE_KEY agent enroll ${SERVER_URL:+--server-url "$SERVER_URL"} "${verify[@]}" \
    || die "enrollment failed (see above); fix it and run $0 again" $?
fi
[ "$(snapshot_enrollment)" != "$before" ] && CHANGED=1
# The service reads the config (group) and owns its identity.
[ -f "$(R $CONF_DIR/config.json)" ] && { chown "root:$SERVICE_USER" "$(R $CONF_DIR/config.json)"; chmod 0640 "$(R $CONF_DIR/config.json)"; }
[ -d "$(R $STATE_DIR)" ] && chown -R "$SERVICE_USER:$SERVICE_USER" "$(R $STATE_DIR)"

# ---------- 7. start ----------
if [ "$SYSTEMD_UP" = 0 ]; then
  rm -f "$LIVE/$RESTART_MARK" # nothing runs here: the next boot starts the new release
  say "systemd is not running here (systemctl: ${SYSTEMD_STATE:-no answer}; a chroot or a container): ${UNITS[*]} enabled, not started; they start at the next boot"
  say "done. On the booted machine: sudo speaker-agent doctor   (logs: journalctl -u speaker-agent -f)"
  exit 0
fi
if [ "$START" = 1 ]; then
  [ -f "$LIVE/$RESTART_MARK" ] && CHANGED=1
  for u in "${UNITS[@]}"; do
    if ! systemctl is-active --quiet "$u"; then
      say "starting $u"; systemctl start "$u"
    elif [ "$CHANGED" = 1 ] || [ "$UNITS_CHANGED" = 1 ]; then
      say "restarting $u (updated)"; systemctl restart "$u"
    fi
  done
  for u in "${KEPT_UNITS[@]}"; do
    if { [ "$CHANGED" = 1 ] || [ "$UNITS_CHANGED" = 1 ]; } && systemctl is-active --quiet "$u"; then
      say "restarting $u (updated)"; systemctl restart "$u"
    fi
  done
  rm -f "$LIVE/$RESTART_MARK"
fi
say "done. Check it with: sudo speaker-agent doctor   (logs: journalctl -u speaker-agent -f)"
