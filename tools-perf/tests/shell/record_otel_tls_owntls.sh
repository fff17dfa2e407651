#!/bin/sh
# perf record --tls-user=otel: program with TLS referencing the library variable (otel_tls)
# SPDX-License-Identifier: GPL-2.0
#
# The program has TLS of its own and reads otel_thread_ctx_v1 itself, so its
# symbol table has the name too, undefined: perf must take the library's
# definition, placed after the program's own TLS block.
# The programs come from tools/perf/tests/otel_tls, built beside perf in
# the directory otel-tls (or $OTEL_TLS_BIN).  POSIX sh: it also runs under
# busybox.

trace_id=5b8efff798038103d269b633813fc60c
span_id=eee19b7ec3c1b174

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

perf record -v -o "$data" -e cpu-clock -c 1000000 --tls-user=otel \
	-- "$bindir/otel_lib_owntls" 1 $trace_id $span_id > "$tmpdir/record.log" 2>&1 ||
	record_failed --tls-user=otel -- otel_lib_owntls
if ! grep -q "otel_thread_ctx_v1 is at thread pointer $expected (.*libotel_writer.so)" \
		"$tmpdir/record.log"; then
	grep tls "$tmpdir/record.log"
	echo "FAIL: perf did not compute the offset $expected in libotel_writer.so"
	exit 1
fi
check_ids otel_lib_owntls $trace_id $span_id
echo "PASS: offset $expected, the undefined symbol of the program not taken"
exit 0
