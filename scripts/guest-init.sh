#!/bin/sh
# PID 1 of a test guest (x86_64: from the host root over 9p; arm64: /init
# of the initramfs).  It mounts what tests need, runs /tmp/out/cmd from the
# host's share, leaves its exit status in /tmp/out/status, and reboots
# (QEMU runs with -no-reboot, so that ends the VM).
# guest_path comes from the kernel command line (vm.sh): the series' perf.
PATH=${guest_path:+$guest_path:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
HOME=/tmp
# A serial console is no terminal to page on: perf's help must not wait
# for a key in less.
PAGER=cat
# man perf-record shows the series' page before any other (x86_64: the
# one beside the series' perf; the trailing colon keeps the system's
# pages after it; arm64's man reads /usr/share/man).
MANPATH=${guest_path:+$guest_path/share/man:}
export PATH HOME PAGER
[ -n "$MANPATH" ] && export MANPATH

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
# A writable /tmp hides the host's; a project checked out below /tmp (as a
# CI clone may be) is bound back in from the host view kept at /mnt.
top=$(cd "$(dirname "$0")/.." && pwd)
case $top in
/tmp/*) mount --bind /tmp /mnt ;;
*) top= ;;
esac
mount -t tmpfs tmpfs /tmp
if [ -n "$top" ]; then
	mkdir -p "$top"
	mount --bind "/mnt/${top#/tmp/}" "$top"
fi
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mkdir -p /tmp/out
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 out /tmp/out ||
	echo "guest-init: cannot mount the result share"

# Guests are single-user test boxes: let the tests see kernel addresses
# only where perf allows it, but allow unprivileged use like a CI user.
echo -1 > /proc/sys/kernel/perf_event_paranoid
echo 0 > /proc/sys/kernel/kptr_restrict

cd /tmp || exit 1
echo "guest-init: running $(head -c 200 /tmp/out/cmd | head -n 1)"
# The command's output goes to the console and to /tmp/out/output, which is
# what vm.sh shows.  tee reads a fifo, not a pipe the shell would wait for,
# so that a process the command leaves running cannot hold the guest up:
# tee gets 2 s to copy what the command wrote.
if mkfifo /dev/vm-output; then
	tee /tmp/out/output < /dev/vm-output &
	sh /tmp/out/cmd > /dev/vm-output 2>&1
	echo $? > /tmp/out/status
	for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 $! 2>/dev/null || break; sleep 0.2; done
else
	sh /tmp/out/cmd
	echo $? > /tmp/out/status
fi
sync
umount /tmp/out 2>/dev/null
echo "guest-init: done"
# busybox reboot works where the host's reboot wants systemd.
if command -v busybox >/dev/null; then exec busybox reboot -f; fi
exec reboot -f
