#!/bin/sh
# perf record --tls-user=otel: writer in a DT_NEEDED TLSDESC library (otel_tls)
# SPDX-License-Identifier: GPL-2.0
#
# The writer is in libotel_writer.so, built with TLSDESC and loaded at
# startup after libotel_pad.so (DT_NEEDED, found through DT_RUNPATH
# $ORIGIN): its TLS is in the static TLS block at a fixed offset, which perf
# computes from the static TLS layout of the dynamic linker.  Run through
# env and sh -c, which perf looks through.
# The programs come from tools/perf/tests/otel_tls, built beside perf in
# the directory otel-tls (or $OTEL_TLS_BIN).  POSIX sh: it also runs under
# busybox.

trace_id=0af7651916cd43dd8448eb211c80319c
span_id=b7ad6b7169203331

bindir=${OTEL_TLS_BIN:-$(dirname "$(command -v perf)")/otel-tls}
for f in otel_lib libotel_writer.so libotel_pad.so; do
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

expected=$(signed "$("$bindir/otel_lib" offset)") || {
	echo "FAIL: $bindir/otel_lib does not run"
	exit 1
}

perf record -v -o "$data" -e cpu-clock -c 1000000 --tls-user=otel \
	-- env OTEL_TEST=1 sh -c "exec $bindir/otel_lib 1 $trace_id $span_id" \
	> "$tmpdir/record.log" 2>&1 || record_failed --tls-user=otel -- env sh -c otel_lib
if ! grep -q "otel_thread_ctx_v1 is at thread pointer $expected (.*libotel_writer.so)" \
		"$tmpdir/record.log"; then
	grep tls "$tmpdir/record.log"
	echo "FAIL: perf did not compute the offset $expected in libotel_writer.so"
	exit 1
fi
check_ids otel_lib $trace_id $span_id

# A program that does not exist is not a missing symbol
if perf record -o "$data" --tls-user=otel -- "$bindir/no_such_program" \
		> "$tmpdir/record.log" 2>&1 ||
   ! grep -q "no such program" "$tmpdir/record.log"; then
	cat "$tmpdir/record.log"
	echo "FAIL: no 'no such program' for a program that does not exist"
	exit 1
fi
echo "PASS: offset $expected in libotel_writer.so"
exit 0
