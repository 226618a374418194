#!/usr/bin/env bash
# Boots the installed speaker in a virtual machine whose PID 1 is systemd, and checks the units as they ship: their
# hardening (the syscall filter, the device policy, ProtectSystem...), Type=notify, the watchdog, restarts, a stop,
# the journal, against a real ALSA driver (QEMU's Intel HDA card, the guest kernel's snd_hda_intel; QEMU's "none"
# audio backend: silence in, output discarded) and the local companion, with no network but loopback.
# Every other check runs the agent in a chroot or a namespace, where systemd is not PID 1.
#
# The root is the one scripts/check-debian-root.sh trixie makes (setup.sh, npm start, install.sh --companion --yes).
# This adds Debian's kernel, systemd as init and a one-shot check unit (written here, not shipped), packs the root
# into an ext4 image (mke2fs -d: no loop device, no mount) and boots it under QEMU. The check runs inside, writes
# "VMCHECK ok|FAIL|info: ..." lines to the serial console and powers the machine off.
#
#   scripts/check-systemd-vm.sh [--root DIR] [--keep]
#     --root DIR  a root that `scripts/check-debian-root.sh trixie --keep --root DIR` left (default: make one, ~6 min);
#                 it is changed in place: a kernel, fstab, and a check unit that powers the machine off at boot
#     --keep      keep the work directory (the root, the image, the console log)
#
# Acceleration: software emulation (QEMU's TCG) by default: this machine's /dev/kvm opens but fails at the guest's
# first instructions ("KVM internal error ... emulation failure"). VM_ACCEL=kvm uses KVM where it works.
# Under TCG the guest runs several times slower than a Raspberry Pi 4, so the check's waits are generous; the
# units' own timeouts are not changed.
# Exit codes: 0 proved; 1 a check failed (the console log says which); 2 usage; 77 cannot run here.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
ACCEL=${VM_ACCEL:-tcg}
BOOT_TIMEOUT=${VM_TIMEOUT:-3000} # longer than the check's own waits added up, so a slow failure still reports

die() { echo "check-systemd-vm: FAIL: $*" >&2; exit 1; }
skip() { echo "check-systemd-vm: SKIP: $*" >&2; exit 77; }
say() { echo "==> [vm] $*"; }

ROOT="" KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --root) ROOT=${2:?--root needs a directory}; shift ;;
    --root=*) ROOT=${1#*=} ;;
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-systemd-vm: unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done

[ "$(id -u)" -eq 0 ] || skip "needs root (a chroot, and check-debian-root.sh): sudo $0"
[ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] || skip "the VM is x86-64 (qemu-system-x86_64): run it on an x86-64 Debian host"
if ! command -v qemu-system-x86_64 >/dev/null || ! command -v mke2fs >/dev/null; then
  say "installing QEMU on the host"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-system-x86 e2fsprogs; } >/dev/null ||
    skip "qemu-system-x86 could not be installed (no network to Debian's mirror?)"
fi

WORK=$(mktemp -d /var/tmp/speaker-agent-vm.XXXXXX)
cleanup() {
  local rc=$?
  if [ "$KEEP" = 1 ]; then echo "kept: $WORK"; else
    if [ "$rc" != 0 ] && [ -f "$WORK/console.log" ]; then
      log=/var/tmp/speaker-agent-vm-console.$(date +%Y%m%d-%H%M%S).log
      install -m 0600 "$WORK/console.log" "$log" && echo "the console log: $log" >&2
    fi
    rm -rf --one-file-system "$WORK"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "$ROOT" ]; then
  ROOT=$WORK/root
  say "a trixie root with the speaker installed: scripts/check-debian-root.sh trixie --keep"
  set +e
  bash "$SRC/scripts/check-debian-root.sh" trixie --keep --root "$ROOT" > "$WORK/debian-root.log" 2>&1
  rc=$?
  set -e
  [ "$rc" = 77 ] && skip "check-debian-root.sh cannot run here: $(tail -1 "$WORK/debian-root.log")"
  [ "$rc" = 0 ] || { tail -20 "$WORK/debian-root.log" >&2; die "check-debian-root.sh trixie failed (above)"; }
  grep "^check-debian-root: OK" "$WORK/debian-root.log"
fi
[ -f "$ROOT/etc/systemd/system/speaker-agent.service" ] || die "$ROOT has no installed speaker (run check-debian-root.sh trixie --keep --root $ROOT)"

# ---------- a bootable root: Debian's kernel, systemd as init ----------
say "Debian's kernel and systemd as init in the root"
export ROOT
unshare --mount --pid --fork --propagation private bash -euo pipefail -c '
  mount -t proc proc "$ROOT/proc"; mount --bind /sys "$ROOT/sys"; mount --bind /dev "$ROOT/dev"; mount --bind /dev/pts "$ROOT/dev/pts"
  mount -t tmpfs -o mode=755 run "$ROOT/run"
  rm -f "$ROOT/etc/resolv.conf"; touch "$ROOT/etc/resolv.conf"; mount --bind "$(readlink -f /etc/resolv.conf)" "$ROOT/etc/resolv.conf"
  chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 \
    bash -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends linux-image-amd64 systemd-sysv udev kmod initramfs-tools"
  umount "$ROOT/etc/resolv.conf"
' > "$WORK/kernel.log" 2>&1 || { tail -20 "$WORK/kernel.log" >&2; die "installing the kernel in the root failed (above)"; }
KERNEL=$(printf '%s\n' "$ROOT"/boot/vmlinuz-* | sort -V | tail -1)
INITRD=$(printf '%s\n' "$ROOT"/boot/initrd.img-* | sort -V | tail -1)
[ -f "$KERNEL" ] && [ -f "$INITRD" ] || die "no kernel or initrd in $ROOT/boot"
echo "/dev/vda / ext4 rw,errors=remount-ro 0 1" > "$ROOT/etc/fstab"
echo speaker-vm > "$ROOT/etc/hostname"
# the console is the check's: no login prompt on it
ln -sf /dev/null "$ROOT/etc/systemd/system/serial-getty@ttyS0.service"
install -m 0755 "$SRC/scripts/vm/speaker-vm-check.sh" "$ROOT/usr/local/sbin/speaker-vm-check"
cat > "$ROOT/etc/systemd/system/speaker-vm-check.service" <<'EOF'
# scripts/check-systemd-vm.sh's check (not shipped): runs once the speaker's units have started, reports on the
# serial console, powers the machine off.
[Unit]
Description=speaker-agent VM check
After=speaker-agent.service speaker-agent-companion.service
[Service]
Type=oneshot
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
TimeoutStartSec=infinity
ExecStart=/usr/local/sbin/speaker-vm-check
ExecStopPost=/usr/bin/systemctl poweroff --no-block
[Install]
WantedBy=multi-user.target
EOF
ln -sf /etc/systemd/system/speaker-vm-check.service "$ROOT/etc/systemd/system/multi-user.target.wants/speaker-vm-check.service"

size_mb=$(( $(du -sm "$ROOT" | cut -f1) + 1024 ))
say "packing the root into an ext4 image (${size_mb} MB)"
mke2fs -q -F -t ext4 -d "$ROOT" -L speaker-vm "$WORK/disk.img" "${size_mb}M" > /dev/null || die "mke2fs -d failed"

# ---------- boot ----------
accel=(-accel tcg,thread=multi -cpu max)
[ "$ACCEL" = kvm ] && accel=(-enable-kvm -cpu host)
say "booting it (QEMU, $ACCEL, 2 CPUs, 1 GB; console: $WORK/console.log)"
t0=$(date +%s)
set +e
# --foreground: QEMU stays in this shell's process group, so Ctrl-C and a test's SIGTERM stop it too
timeout --foreground "$BOOT_TIMEOUT" qemu-system-x86_64 "${accel[@]}" -m 1024 -smp 2 -no-reboot -nographic -nic none \
  -kernel "$KERNEL" -initrd "$INITRD" -append "root=/dev/vda rw console=ttyS0 quiet systemd.show_status=false" \
  -drive "file=$WORK/disk.img,format=raw,if=virtio" \
  -audiodev none,id=snd0 -device intel-hda -device hda-duplex,audiodev=snd0 \
  < /dev/null > "$WORK/console.log" 2>&1
rc=$?
set -e
secs=$(( $(date +%s) - t0 ))
tr -d '\r' < "$WORK/console.log" | grep -a "^VMCHECK" | sed 's/^/    /' || true
[ "$rc" = 124 ] && die "the machine did not power off within $BOOT_TIMEOUT s"
[ "$rc" = 0 ] || die "qemu exited $rc"
# the check's own count is what counts (a FAIL line the kernel's console output broke would not be seen here)
done_line=$(tr -d '\r' < "$WORK/console.log" | grep -a "^VMCHECK done: " | tail -1)
[ -n "$done_line" ] || die "the check did not finish (its console log is kept, see below)"
[ "$done_line" = "VMCHECK done: 0 failed" ] || die "${done_line#VMCHECK done: } check(s) in the VM (above)"
echo "check-systemd-vm: OK: systemd as PID 1, both units started, called, survived a hang and a crash, stopped cleanly (the machine's whole run ${secs} s, $ACCEL)"
