#!/bin/sh
# perf record --tls-user=otel -p PID: offset from /proc/PID (otel_tls)
# SPDX-License-Identifier: GPL-2.0
#
# perf record -p of a running program with the writer in a library: perf
# computes the offset from /proc/PID/exe and the files of /proc/PID/maps.
# The programs come from tools/perf/tests/otel_tls, built beside perf in
# the directory otel-tls (or $OTEL_TLS_BIN).  POSIX sh: it also runs under
# busybox.

trace_id=a3ce929d0e0e47364bf92f3577b34da6
span_id=0ba902b700f067aa

bindir=${OTEL_TLS_BIN:-$(dirname "$(command -v perf)")/otel-tls}
for f in otel_lib_owntls libotel_writer.so libotel_pad.so; do
	if [ ! -f "$bindir/$f" ]; then
		echo "Skip: $bindir/$f is missing (tools/perf/tests/otel_tls/Makefile builds it)"
		exit 2
	fi
done

tmpdir=$(mktemp -d /tmp/perf-test-otel-tls.XXXXXX) || exit 1
trap 'rm -rf "$tmpdir"' EXIT
data=$tmpdir/perf.data

# perf record writes the offset it computed with -v, signed as %+lld
signed() {
	case $1 in -*) echo "$1" ;; *) echo "+$1" ;; esac
}

# The log of a failed perf record: skip when the kernel lacks the feature
record_failed() {
	cat "$tmpdir/record.log"
	if grep -q "does not support PERF_SAMPLE_TLS_USER" "$tmpdir/record.log"; then
		echo "Skip: the kernel does not support PERF_SAMPLE_TLS_USER"
		exit 2
	fi
	echo "FAIL: perf record $*"
	exit 1
}

# The samples of COMM carry the planted ids: at least half of them (the
# others are taken before the writer publishes the context), and none other
check_ids() {
	comm=$1 trace=$2 span=$3
	if ! perf script -i "$data" -F comm,tid,tls > "$tmpdir/script.out" 2>&1; then
		cat "$tmpdir/script.out"
		echo "FAIL: perf script"
		exit 1
	fi
	all=$(grep -c "^ *$comm " "$tmpdir/script.out")
	good=$(grep "^ *$comm " "$tmpdir/script.out" | grep -c "trace_id=$trace span_id=$span")
	nother=$(grep "^ *$comm " "$tmpdir/script.out" | grep "trace_id=" |
		grep -vc "trace_id=$trace span_id=$span")
	echo "$comm: $all samples, $good with trace_id=$trace span_id=$span, $nother other ids"
	if [ "$good" -eq 0 ] || [ $((good * 2)) -lt "$all" ] || [ "$nother" -ne 0 ]; then
		grep "^ *$comm " "$tmpdir/script.out" | head -5
		echo "FAIL: the samples of $comm do not carry the planted ids"
		exit 1
	fi
}

expected=$(signed "$("$bindir/otel_lib_owntls" offset)") || {
	echo "FAIL: $bindir/otel_lib_owntls does not run"
	exit 1
}

"$bindir/otel_lib_owntls" 30 $trace_id $span_id &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$tmpdir"' EXIT
# Until the dynamic linker has mapped the writer
i=0
while ! grep -q libotel_writer.so "/proc/$pid/maps" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 100 ]; then
		echo "FAIL: otel_lib_owntls did not start"
		exit 1
	fi
	sleep 0.1
done
sleep 0.5
perf record -v -o "$data" -e cpu-clock -c 1000000 --tls-user=otel -p $pid \
	-- sleep 1 > "$tmpdir/record.log" 2>&1 || record_failed --tls-user=otel -p PID
if ! grep -q "otel_thread_ctx_v1 is at thread pointer $expected (.*libotel_writer.so, pid $pid)" \
		"$tmpdir/record.log"; then
	grep tls "$tmpdir/record.log"
	echo "FAIL: perf did not compute the offset $expected for pid $pid"
	exit 1
fi
check_ids otel_lib_owntls $trace_id $span_id
echo "PASS: offset $expected of pid $pid"
exit 0
