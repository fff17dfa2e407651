#!/bin/sh
# Runs inside the x86_64 guest for "make demo": one section per feature of
# the series, each a perf record of a small workload and its perf script.
cd /tmp || exit 1

section() { printf '\n### %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }

section "kernel"
uname -r
ls /sys/bus/event_source/devices | tr '\n' ' '; echo

section "plain sampling: cpu-clock with callchains on a busy loop"
show perf record -q -e cpu-clock -c 1000000 -g -o /tmp/plain.data -- perf test -w noploop 1
show perf script -i /tmp/plain.data -F comm,tid,time,ip,sym | head -n 12

section "PERF_SAMPLE_TLS_USER: each sample carries the thread's OpenTelemetry trace and span id"
if show perf record -q -e cpu-clock -c 1000000 --tls-user=otel -o /tmp/tls.data -- perf test -w otel_tls 1; then
	perf script -i /tmp/tls.data -F comm,tid,time,sym,tls > /tmp/tls.txt
	printf '$ perf script -i /tmp/tls.data -F comm,tid,time,sym,tls | grep trace_id\n'
	grep -m 6 trace_id /tmp/tls.txt
	echo "($(grep -c trace_id /tmp/tls.txt) of $(wc -l < /tmp/tls.txt) samples carry the record; the others were taken before the workload published it)"
else
	echo "(not available in this build)"
fi

section "PR_TASK_PERF_UEVENT: the workload's own records, in time order among its samples"
if show perf record -q -e cpu-clock -c 1000000 --uevents -o /tmp/uevent.data -- perf test -w uevent; then
	perf script -i /tmp/uevent.data -F comm,tid,time,event,ip,sym > /tmp/uevent.txt
	printf '$ perf script -i /tmp/uevent.data | grep -B1 -A1 UEVENT\n'
	grep -B1 -A1 UEVENT /tmp/uevent.txt | head -n 16
else
	echo "(not available in this build)"
fi

section "Deferred user callchains: the user stack is unwound once per system call, on the way out"
if show perf record -q -e cpu-clock -c 1000000 --call-graph fp,defer -o /tmp/defer.data -- perf test -w deferred_chain; then
	# The first records of the workload's own calls (from deferred_leaf).
	printf '$ perf script -i /tmp/defer.data --no-merge-callchains   (raw: the sample ends in a cookie, the deferred record follows)\n'
	perf script -i /tmp/defer.data --no-merge-callchains -F comm,tid,time,event,ip,sym |
		grep -m 1 -B 11 -A 9 deferred_leaf
	printf '$ perf script -i /tmp/defer.data   (merged: kernel frames, then the user frames)\n'
	perf script -i /tmp/defer.data -F comm,tid,time,ip,sym |
		awk 'BEGIN { RS = "" } /getrandom/ && /deferred_top/ { print; exit }'
else
	echo "(not available in this build)"
fi

section "PERF_SAMPLE_AUX everywhere: each cpu-clock sample carries a snapshot of the sw_aux trace"
if [ -d /sys/bus/event_source/devices/sw_aux ] &&
   show perf record -q -e '{sw_aux//,cpu-clock}' -c 4000000 --aux-sample=256 -o /tmp/aux.data -- perf test -w noploop 1; then
	printf '$ perf script -i /tmp/aux.data -F comm,tid,time,event,ip,sym | head -n 20\n'
	perf script -i /tmp/aux.data -F comm,tid,time,event,ip,sym | head -n 20
else
	echo "(not available in this build)"
fi

section "beside upstream: perf.data without the series' features is read by other perfs (Debian's 6.1 here)"
# The series' numbers stay out of upstream's way, and perf writes attrs no
# larger than their non-zero bytes (Documentation/userspace-api/perf_abi_numbers.rst).
printf '$ perf evlist -v -i /tmp/plain.data | head -n 1\n'
perf evlist -v -i /tmp/plain.data | head -n 1
if [ -x /usr/bin/perf ] && [ "$(/usr/bin/perf --version)" != "$(perf --version)" ]; then
	printf '$ /usr/bin/perf --version; /usr/bin/perf script -i /tmp/plain.data -F comm,tid,time,ip,sym | head -n 4\n'
	/usr/bin/perf --version
	/usr/bin/perf script -i /tmp/plain.data -F comm,tid,time,ip,sym 2>&1 | head -n 4
	printf '$ /usr/bin/perf script -v -i /tmp/tls.data  # 272-byte attrs (--tls-user)\n'
	/usr/bin/perf script -v -i /tmp/tls.data 2>&1 | grep -m 2 'ABI\|incompatible'
	echo "(expected: a --tls-user recording has attrs that only the series' perf reads;"
	echo " the plain recording above reads everywhere)"
fi
exit 0
