#!/bin/bash
# Runs inside scripts/check-systemd-vm.sh's virtual machine (as /usr/local/sbin/speaker-vm-check, from a one-shot
# unit ordered after the speaker's units): checks them under systemd as PID 1 and prints "VMCHECK ok|FAIL|info"
# lines on the serial console. Not installed on a speaker. Waits are long: the machine may be emulated in software.
set -u
FAILED=0
ok() { echo "VMCHECK ok: $*"; }
bad() { echo "VMCHECK FAIL: $*"; FAILED=$((FAILED + 1)); }
info() { echo "VMCHECK info: $*"; }
prop() { systemctl show -P "$2" "$1"; }
# until_ok SECONDS CMD...: polls CMD once a second
until_ok() { local t=$1; shift; local i; for ((i = 0; i < t; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done; return 1; }
running() { [ "$(prop "$1" ActiveState)/$(prop "$1" SubState)" = active/running ]; }
# a field of `speaker-agent status --json` (a dotted path), printed as JSON unless a string
field() {
  speaker-agent status --json 2>/dev/null | node -e '
    let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      const v = process.argv[1].split(".").reduce((o, k) => (o == null ? o : o[k]), JSON.parse(s));
      console.log(typeof v === "string" ? v : JSON.stringify(v));
    });' "$1"
}
in_call() { [ "$(field state)" = connected ]; }
restarts() { prop speaker-agent.service NRestarts; }
more_restarts_than() { [ "$(restarts)" -gt "$1" ]; }
# ms from the unit's main process start to READY=1 (active), on the monotonic clock
ready_ms() {
  local a b
  a=$(prop "$1" ExecMainStartTimestampMonotonic); b=$(prop "$1" ActiveEnterTimestampMonotonic)
  echo $(((b - a) / 1000))
}
AGENT=speaker-agent.service
COMPANION=speaker-agent-companion.service
ID=/var/lib/speaker-agent/identity.json

echo "VMCHECK start: $(uname -r), $(nproc) CPUs"
pid1=$(readlink /proc/1/exe)
case "$pid1" in */systemd) ok "PID 1 is systemd $(systemctl --version | awk 'NR==1 { print $2 }')" ;; *) bad "PID 1 is $pid1" ;; esac
card=$(aplay -l 2>/dev/null | grep -m1 '^card ')
[ -n "$card" ] && ok "a real ALSA driver: $card" || bad "no sound card in the guest (aplay -l)"

# 1. Both units up under their hardening, each READY=1 from node itself (Type=notify)
for u in $COMPANION $AGENT; do
  if until_ok 600 running "$u"; then ok "$u active (running): READY=1 $(ready_ms "$u") ms after its start, NRestarts=$(prop "$u" NRestarts)"
  else bad "$u not running: $(prop "$u" ActiveState)/$(prop "$u" SubState), result $(prop "$u" Result); $(journalctl -u "$u" -b -n 5 -o cat | tr '\n' '|')"; fi
done

# 2. In a call with the local companion, both devices open on the real card, the mixer read through amixer
call_ready() { in_call && [ "$(field audioDevices)" = '{"microphone":"open","speaker":"open"}' ]; }
if until_ok 600 call_ready; then
  ok "in a call: route $(field route), devices $(field audioDevices), volume $(field volume)"
else
  bad "no call with both devices open: state $(field state), devices $(field audioDevices), last error $(field lastError)"
fi
# A unit started before the sound driver registered ALSA's device class is refused the card by its own device
# policy until it starts again (src/agent/audio/soundDevicePolicy.ts): it restarts itself once for that, and for
# nothing else before the faults below.
policy=$(journalctl -u $AGENT -b -o cat | grep -c 'restarting to be given it' || true)
[ "$(restarts)" = "$policy" ] && ok "restarts before any fault: $(restarts), each one for the device policy ($policy)" ||
  bad "the agent restarted $(restarts) times before any fault was made, $policy for the device policy: $(journalctl -u $AGENT -b -p warning -o cat | tail -5 | tr '\n' '|')"
vol=$(field volume)
echo "$vol" | grep -Eq '"volumePercent":[0-9]+' && ok "the mixer (amixer on the HDA card) is read: $vol" || bad "no mixer state: ${vol:-no status}"
user=$(stat -c %U "/proc/$(prop $AGENT MainPID)")
[ "$user" = speaker-agent ] && ok "the agent runs as $user" || bad "the agent runs as $user"

# 3. The memory keeper's page-out under the unit's syscall filter (userfaultfd in @system-service): its log line
if until_ok 240 sh -c "journalctl -u $AGENT -b -o cat | grep -q 'memory keeper: start-up code paged out'"; then
  line=$(journalctl -u $AGENT -b -o cat | grep -m1 'memory keeper: start-up code paged out')
  single=$(echo "$line" | grep -o '"singlePageMappings":[-0-9]*' | cut -d: -f2)
  # > 0: userfaultfd was allowed (a negative errno: the filter refused it, and code faults back 64 KB at a time)
  [ "${single:-0}" -gt 0 ] && ok "page-out under the unit's syscall filter, userfaultfd allowed: $(echo "$line" | grep -o '"mappedMb":[0-9]*,"singlePageMappings":[-0-9]*,"rssBeforeMb":[0-9.]*,"rssAfterMb":[0-9.]*')" ||
    bad "page-out without single-page faults (userfaultfd: ${single:-missing}): $line"
else
  bad "no page-out line within 240 s: $(journalctl -u $AGENT -b -o cat | grep -m1 'memory keeper' || echo none)"
fi
# at error or worse: nothing but what the process that restarted for the device policy said as it left
policy_pids=$(journalctl -u $AGENT -b -o cat | grep 'restarting to be given it' | grep -o '"pid":[0-9]*,' | sort -u | tr '\n' '|' | sed 's/|$//')
errors() { journalctl -u $AGENT -b -p err -o cat | { if [ -n "$policy_pids" ]; then grep -Ev "$policy_pids"; else cat; fi; }; }
[ -n "$policy_pids" ] && info "said at error by the process that restarted for the device policy: $(journalctl -u $AGENT -b -p err -o cat | grep -E "$policy_pids" | grep -o '"msg":"[^"]*"' | tr '\n' ' ')"
errs=$(errors | grep -c . || true)
[ "$errs" = 0 ] && ok "nothing else at error or worse in the agent's journal before the faults" || bad "$errs lines at error or worse: $(errors | head -3 | tr '\n' '|')"
info "the agent's journal so far: $(journalctl -u $AGENT -b -o cat | grep -c .) lines, $(journalctl -u $AGENT -b -p warning -o cat | grep -c .) at warning or worse"

# 4. A hung event loop (SIGSTOP): the watchdog (WatchdogSec=10) restarts it, and it calls again
id_before=$(sha256sum "$ID" | cut -d' ' -f1)
n=$(restarts); pid=$(prop $AGENT MainPID); t=$(date +%s)
kill -STOP "$pid"
if until_ok 120 more_restarts_than "$n"; then
  ok "hung (SIGSTOP): restarted by the watchdog after $(($(date +%s) - t)) s ($(journalctl -u $AGENT -b -o cat | grep -c 'Watchdog timeout') watchdog timeout in the journal)"
else
  bad "hung (SIGSTOP): not restarted within 120 s"
fi
journalctl -u $AGENT -b -o cat | grep -q 'Watchdog timeout' || bad "the journal does not name the watchdog"
until_ok 300 in_call && ok "in a call again after the watchdog's restart" || bad "no call after the watchdog's restart: $(field state) $(field lastError)"

# 5. A crash (SIGKILL): restarted (Restart=always, RestartSec=2), the same identity, a call again
n=$(restarts); pid=$(prop $AGENT MainPID)
kill -KILL "$pid"
until_ok 120 more_restarts_than "$n" && ok "killed (SIGKILL): restarted" || bad "killed: not restarted within 120 s"
until_ok 300 in_call && ok "in a call again after the crash" || bad "no call after the crash: $(field state) $(field lastError)"
[ "$(sha256sum "$ID" | cut -d' ' -f1)" = "$id_before" ] && ok "the identity file is unchanged through the hang and the crash (mode $(stat -c %a "$ID"), owner $(stat -c %U "$ID"))" ||
  bad "the identity file changed"

# 6. A stop: the call closed on SIGTERM, within TimeoutStopSec, no SIGKILL
# (a SIGKILL earlier in the boot, at a start that timed out, is not this stop's: only the lines after it count)
sigkills() { journalctl -u $AGENT -b -o cat | grep -c "stop-sigterm' timed out" || true; }
k=$(sigkills); t=$(date +%s%N)
systemctl stop $AGENT
ms=$((($(date +%s%N) - t) / 1000000))
result=$(prop $AGENT Result)
if [ "$result" = success ] && [ "$(sigkills)" = "$k" ]; then
  ok "stopped in $ms ms, result $result (no SIGKILL)"
else
  bad "stop: result $result after $ms ms"
fi

info "the companion: NRestarts=$(prop $COMPANION NRestarts), $(journalctl -u $COMPANION -b -o cat | grep -c 'Watchdog timeout' || true) watchdog timeouts"
info "$(systemd-analyze security $AGENT --no-pager 2>/dev/null | tail -1)"
info "$(systemd-analyze security $COMPANION --no-pager 2>/dev/null | tail -1)"
# The guest's journal is in memory only (no /var/log/journal) and gone at power-off: after a failure both units'
# journals go to the console, whose log the host keeps (check-systemd-vm.sh prints where)
if [ "$FAILED" -gt 0 ]; then
  journalctl -b -u $AGENT -u $COMPANION -o short-monotonic --no-pager 2>&1 | sed 's/^/VMJOURNAL /'
fi
echo "VMCHECK done: $FAILED failed"
