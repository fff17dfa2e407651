#!/bin/bash
# Boot build/obj-ARCH's kernel under QEMU (TCG) and run one shell command in
# the guest.  Prints the command's output (stdout and stderr, control codes
# taken out), returns the command's exit status, and fails on a timeout or
# on any kernel splat in the console log, which it then prints.
#
#   vm.sh ARCH [-v] [-t SECONDS] [-o OUTDIR] COMMAND...
#
#   -v          print the whole console (boot log, kernel messages, the
#               command's output) instead of the command's output only
#   -t SECONDS  end the guest after SECONDS (default 900, or $VM_TIMEOUT)
#   -o OUTDIR   the guest's /tmp/out (default build/vm/ARCH)
#
# The console is always kept in OUTDIR/console.log, the command's output in
# OUTDIR/output.  x86_64 boots the host root file system read-only over
# virtio-9p (host binaries run as they are, with build/perf-x86_64 first in
# PATH, so that `perf` is the series' perf); arm64 boots
# build/initramfs-arm64.cpio, the series' perf as /usr/bin/perf.  In both,
# /tmp is a fresh tmpfs, PAGER=cat, and OUTDIR is mounted read-write at
# /tmp/out: files a command writes there come back to the host.
. "$(dirname "$0")/lib.sh"

arch=${1:?usage: vm.sh ARCH [-v] [-t SECONDS] [-o OUTDIR] COMMAND...}; shift
timeout=${VM_TIMEOUT:-900}
out=$BUILD/vm/$arch
verbose=
while getopts vt:o: opt; do
	case $opt in v) verbose=1 ;; t) timeout=$OPTARG ;; o) out=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || die "no command given"

kernel=$(kobj "$arch")/$(kimage "$arch")
[ -f "$kernel" ] || die "$kernel is missing: run scripts/build-kernel.sh $arch"
mkdir -p "$out"
rm -f "$out/status" "$out/splat" "$out/console.log" "$out/results.tsv" "$out/skips.tsv"
printf '%s\n' "$*" > "$out/cmd"
console=$out/console.log
: > "$console"
: > "$out/output"

# What reaches the terminal: no escape sequences (the firmware's clear the
# screen), no carriage returns, no other control characters but tabs.
plain() {
	LC_ALL=C sed -u -E 's#\x1b\[[0-9;?]*[ -/]*[@-~]##g; s#\x1b[]PX^_][^\x07\x1b]*(\x07|\x1b\\)?##g;
		s#\x1b[ -/]*[0-~]?##g; s#[\x00-\x08\x0b-\x1f\x7f]##g'
}

share="-fsdev local,id=out,path=$out,security_model=none -device virtio-9p-pci,fsdev=out,mount_tag=out"
append="panic=-1 oops=panic loglevel=6 printk.devkmsg=on"
case $arch in
x86_64)
	qemu=(qemu-system-x86_64 -M pc -cpu max
	      -fsdev local,id=root,path=/,readonly=on,security_model=none,multidevs=remap
	      -device virtio-9p-pci,fsdev=root,mount_tag=/dev/root)
	# guest_path: PATH entries put first by guest-init.sh (the kernel
	# hands unknown name=value parameters to init as its environment).
	# no_timer_check: under TCG on a busy host the IO-APIC timer check
	# can miss its ticks and panic the boot, as KVM guests avoid too.
	append="console=ttyS0 no_timer_check root=/dev/root rootfstype=9p ro init=$TOP/scripts/guest-init.sh
		guest_path=$BUILD/perf-x86_64
		rootflags=trans=virtio,version=9p2000.L,msize=262144,cache=loose $append"
	;;
arm64)
	msg=$("$TOP/scripts/initramfs.sh" 2>&1) || { echo "$msg" >&2; exit 1; }
	initrd=$BUILD/initramfs-arm64.cpio
	qemu=(qemu-system-aarch64 -M virt,gic-version=3 -cpu max -initrd "$initrd")
	append="console=ttyAMA0 rdinit=/init irqchip.gicv3_pseudo_nmi=1 $append"
	;;
*) die "unknown arch $arch" ;;
esac

# shellcheck disable=SC2086
timeout -k 5 "$timeout" "${qemu[@]}" -smp 2 -m 2G -nographic -no-reboot \
	-kernel "$kernel" -append "$(echo $append)" $share < /dev/null > "$console" 2>&1 &
guest=$!
trap 'kill $guest 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
# The console as it comes, or the command's output (which guest-init.sh
# writes to OUTDIR/output); tail ends once the guest has.
if [ -n "$verbose" ]; then
	tail -n +1 -f --pid=$guest "$console" | plain
else
	tail -n +1 -f --pid=$guest "$out/output" | plain
fi
rc=0
wait $guest || rc=$?
trap - EXIT
# The last lines of the console, for a guest that went wrong.
console_tail() {
	[ -n "$verbose" ] && return
	log "$arch: the end of the console ($console):"
	tail -n 20 "$console" | plain >&2
}
[ "$rc" = 124 ] && { log "$arch: guest timed out after ${timeout}s"; console_tail; exit 124; }

# The patterns of the kernel's own warnings, bugs, lockdep, KASAN, RCU
# stall and might_sleep reports.
splats='WARNING: CPU|WARNING: .*(locking|lock state|lock held|locks held|RCU usage|suspicious)|BUG: |BUG kmalloc|Oops|Kernel panic|KASAN|UBSAN|DEBUG_LOCKS_WARN_ON|rcu: INFO: .*stall|detected stalls|soft lockup|hard LOCKUP|INFO: task .* blocked|sleeping function called from invalid context|Unable to handle kernel|general protection fault|------------\[ cut here \]'
if grep -Eq "$splats" "$console"; then
	log "$arch: kernel splat in the console log ($console):"
	grep -En "$splats" "$console" | head -20 | plain >&2
	if [ -z "$verbose" ]; then
		log "$arch: the first one:"
		grep -E -m 1 -A 40 "$splats" "$console" | plain >&2
	fi
	echo splat > "$out/splat"
	exit 3
fi
[ -f "$out/status" ] || { log "$arch: guest ended without a status"; console_tail; exit 125; }
status=$(cat "$out/status")
[ "$status" = 0 ] || log "$arch: the command exited with status $status (console: $console)"
exit "$status"
