#!/bin/sh
# perf record --tls-user=otel: writer in the executable (otel_tls)
# SPDX-License-Identifier: GPL-2.0
#
# The OpenTelemetry thread context writer is linked into the program: perf
# finds otel_thread_ctx_v1 in the program's symbols and computes its offset
# from the thread pointer, which must be the one the program sees, and the
# samples must carry the planted trace and span ids.
# The programs come from tools/perf/tests/otel_tls, built beside perf in
# the directory otel-tls (or $OTEL_TLS_BIN).  POSIX sh: it also runs under
# busybox.

trace_id=4bf92f3577b34da6a3ce929d0e0e4736
span_id=00f067aa0ba902b7

bindir=${OTEL_TLS_BIN:-$(dirname "$(command -v perf)")/otel-tls}
if [ ! -f "$bindir/otel_exe" ]; then
	echo "Skip: $bindir/otel_exe is missing (tools/perf/tests/otel_tls/Makefile builds it)"
	exit 2
fi

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

expected=$(signed "$("$bindir/otel_exe" offset)") || {
	echo "FAIL: $bindir/otel_exe does not run"
	exit 1
}

perf record -v -o "$data" -e cpu-clock -c 1000000 --tls-user=otel \
	-- "$bindir/otel_exe" 1 $trace_id $span_id > "$tmpdir/record.log" 2>&1 ||
	record_failed --tls-user=otel -- otel_exe
if ! grep -q "otel_thread_ctx_v1 is at thread pointer $expected (" "$tmpdir/record.log"; then
	grep tls "$tmpdir/record.log"
	echo "FAIL: perf did not compute the offset $expected"
	exit 1
fi
check_ids otel_exe $trace_id $span_id
echo "PASS: offset $expected in the executable"
exit 0
