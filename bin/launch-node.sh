#!/bin/sh
# launch-node.sh NODE [NODE_FLAG ...] -- SCRIPT [ARG ...]
#
# How the systemd units and the installed `speaker-agent` command start node: as `exec NODE FLAGS SCRIPT ARGS`
# (this shell's PID becomes node's, so systemd's NotifyAccess=main and the watchdog see node), but surviving two
# changes that years of upgrades bring, which otherwise leave a speaker that never starts again:
# - the Node pinned at install time is gone (removed, or an upgrade moved it): systemd said only 203/EXEC. It is
#   said why, and the node on the PATH runs meanwhile (its addons then say what to run if they do not load).
# - a Node that refuses one of the unit's V8 flags (V8 renames or drops flags between majors): node exited 9,
#   "bad option", every 2 s forever. The flag is dropped, saying so: the agent then uses more memory, not none.
# Checking the flags costs one `node FLAGS --version` per start (27-37 ms on x86-64), not a process that stays.
set -f # the flags are split on spaces below, never globbed

# Under systemd, stderr is the journal's stream (JOURNAL_STREAM names it): each line then carries its syslog
# priority, as the agent's own lines do (src/common/logger.ts), so `journalctl -p warning` shows these too.
prio3= prio4=
if [ -n "${JOURNAL_STREAM:-}" ] && [ "$(stat -L -c %d:%i /proc/$$/fd/2 2>/dev/null)" = "$JOURNAL_STREAM" ]; then
  prio3='<3>' prio4='<4>'
fi

node=${1:?usage: launch-node.sh NODE [NODE_FLAG ...] -- SCRIPT [ARG ...]}
shift
if [ ! -x "$node" ]; then
  echo "${prio4}speaker-agent: $node, the Node this speaker was installed with, is gone. Run 'sudo scripts/install.sh' again from the checkout to install with the Node you have now." >&2
  fallback=$(command -v node) || { echo "${prio3}speaker-agent: and there is no node on the PATH ($PATH)" >&2; exit 127; }
  echo "${prio4}speaker-agent: running with $fallback meanwhile" >&2
  node=$fallback
fi

flags=
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  flags="$flags $1"
  shift
done
[ $# -gt 0 ] || { echo "launch-node.sh: no -- before the script" >&2; exit 2; }
shift

if [ -n "$flags" ] && ! "$node" $flags --version >/dev/null 2>&1; then
  kept=
  for f in $flags; do
    if "$node" "$f" --version >/dev/null 2>&1; then
      kept="$kept $f"
    else
      echo "${prio4}speaker-agent: $node ($("$node" --version 2>/dev/null)) refuses the option $f: starting without it (it saves memory; README, Node.js versions)" >&2
    fi
  done
  flags=$kept
fi
exec "$node" $flags "$@"
