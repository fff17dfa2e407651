#!/bin/sh
# perf record --tls-user=otel: a dlopen()ed writer is out of reach (otel_tls)
# SPDX-License-Identifier: GPL-2.0
#
# otel_dlopen loads libotel_writer.so with dlopen(): its TLS is not in the
# static TLS block.  perf record -p must say so and stop, and perf record
# -a must name the process in its warning.
# The programs come from tools/perf/tests/otel_tls, built beside perf in
# the directory otel-tls (or $OTEL_TLS_BIN).  POSIX sh: it also runs under
# busybox.

trace_id=4bf92f3577b34da6a3ce929d0e0e4736
span_id=a3ce929d0e0e4736

bindir=${OTEL_TLS_BIN:-$(dirname "$(command -v perf)")/otel-tls}
for f in otel_exe otel_dlopen libotel_writer.so; do
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

"$bindir/otel_dlopen" 30 $trace_id $span_id &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$tmpdir"' EXIT
i=0
while ! grep -q libotel_writer.so "/proc/$pid/maps" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 100 ]; then
		echo "FAIL: otel_dlopen did not load the writer"
		exit 1
	fi
	sleep 0.1
done

# -p: the variable is only in a dlopen()ed library
if perf record -o "$data" -e cpu-clock --tls-user=otel -p $pid -- sleep 0.1 \
		> "$tmpdir/record.log" 2>&1 ||
   ! grep -q "libotel_writer.so, which process $pid loaded with dlopen()" "$tmpdir/record.log" ||
   ! grep -q "dynamic TLS, out of reach of a single dereference" "$tmpdir/record.log"; then
	cat "$tmpdir/record.log"
	echo "FAIL: perf record -p did not report the dlopen()ed library"
	exit 1
fi

# -a: the workload's offset, and a warning naming the dlopen()ed one
perf record -a -o "$data" -e cpu-clock -c 1000000 --tls-user=otel \
	-- "$bindir/otel_exe" 1 $trace_id 00f067aa0ba902b7 > "$tmpdir/record.log" 2>&1 ||
	record_failed -a --tls-user=otel -- otel_exe
if ! grep -q "pid $pid (otel_dlopen) has otel_thread_ctx_v1 in dynamic TLS" \
		"$tmpdir/record.log"; then
	cat "$tmpdir/record.log"
	echo "FAIL: perf record -a did not name pid $pid with dynamic TLS"
	exit 1
fi
check_ids otel_exe $trace_id 00f067aa0ba902b7
echo "PASS: the dlopen()ed writer of pid $pid reported as dynamic TLS"
exit 0
