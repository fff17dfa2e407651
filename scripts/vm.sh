#!/bin/bash
# Boot build/obj-ARCH's kernel under QEMU (TCG) and run one shell command in
# the guest.  Prints the console, returns the command's exit status, and
# fails on a timeout or on any kernel splat in the console log.
#
#   vm.sh ARCH [-t SECONDS] [-o OUTDIR] COMMAND...
#
# x86_64 boots the host root file system read-only over virtio-9p (host
# binaries run as they are, with build/perf-x86_64 first in PATH, so that
# `perf` is the series' perf); arm64 boots build/initramfs-arm64.cpio of
# static binaries, the series' perf as /usr/bin/perf.  In both, /tmp is a
# fresh tmpfs, PAGER=cat, and OUTDIR (default build/vm/ARCH) is mounted
# read-write at /tmp/out: files a test writes there come back to the host.
. "$(dirname "$0")/lib.sh"

arch=${1:?usage: vm.sh ARCH [-t SECONDS] [-o OUTDIR] COMMAND...}; shift
timeout=${VM_TIMEOUT:-900}
out=$BUILD/vm/$arch
while getopts t:o: opt; do
	case $opt in t) timeout=$OPTARG ;; o) out=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || die "no command given"

kernel=$(kobj "$arch")/$(kimage "$arch")
[ -f "$kernel" ] || die "$kernel is missing: run scripts/build-kernel.sh $arch"
mkdir -p "$out"
rm -f "$out/status" "$out/splat" "$out/console.log" "$out/results.tsv" "$out/skips.tsv"
printf '%s\n' "$*" > "$out/cmd"
console=$out/console.log

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
	"$TOP/scripts/initramfs.sh"
	initrd=$BUILD/initramfs-arm64.cpio
	qemu=(qemu-system-aarch64 -M virt,gic-version=3 -cpu max -initrd "$initrd")
	append="console=ttyAMA0 rdinit=/init irqchip.gicv3_pseudo_nmi=1 $append"
	;;
*) die "unknown arch $arch" ;;
esac

rc=0
# shellcheck disable=SC2086
timeout -k 5 "$timeout" "${qemu[@]}" -smp 2 -m 2G -nographic -no-reboot \
	-kernel "$kernel" -append "$(echo $append)" $share < /dev/null |
	tee "$console" | sed -u 's/\r$//' || rc=$?
[ "$rc" = 124 ] && { log "$arch: guest timed out after ${timeout}s"; exit 124; }

# The patterns of the kernel's own warnings, bugs, lockdep, KASAN, RCU
# stall and might_sleep reports.
splats='WARNING: CPU|WARNING: .*(locking|lock state|lock held|locks held|RCU usage|suspicious)|BUG: |BUG kmalloc|Oops|Kernel panic|KASAN|UBSAN|DEBUG_LOCKS_WARN_ON|rcu: INFO: .*stall|detected stalls|soft lockup|hard LOCKUP|INFO: task .* blocked|sleeping function called from invalid context|Unable to handle kernel|general protection fault|------------\[ cut here \]'
if grep -Eq "$splats" "$console"; then
	log "$arch: kernel splat in the console log ($console):"
	grep -En "$splats" "$console" | head -20 >&2
	echo splat > "$out/splat"
	exit 3
fi
[ -f "$out/status" ] || { log "$arch: guest ended without a status"; exit 125; }
exit "$(cat "$out/status")"
