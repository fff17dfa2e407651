#!/bin/sh
# perf record --tls-user=otel -a: one offset, warning for other offsets (otel_tls)
# SPDX-License-Identifier: GPL-2.0
#
# System wide, one offset applies to every process.  With otel_lib_owntls
# running, perf record -a of otel_exe takes the workload's offset, warns that
# otel_lib_owntls has another one (naming its pid and offset), and the
# samples of otel_exe carry its ids; the same warning comes for an offset
# given as offset=N.
# The programs come from tools/perf/tests/otel_tls, built beside perf in
# the directory otel-tls (or $OTEL_TLS_BIN).  POSIX sh: it also runs under
# busybox.

trace_id=4bf92f3577b34da6a3ce929d0e0e4736
span_id=53995c3f42cd8ad8

bindir=${OTEL_TLS_BIN:-$(dirname "$(command -v perf)")/otel-tls}
for f in otel_exe otel_lib_owntls libotel_writer.so libotel_pad.so; do
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

expected=$(signed "$("$bindir/otel_exe" offset)") || {
	echo "FAIL: $bindir/otel_exe does not run"
	exit 1
}
other=$(signed "$("$bindir/otel_lib_owntls" offset)") || {
	echo "FAIL: $bindir/otel_lib_owntls does not run"
	exit 1
}

if [ "$expected" = "$other" ]; then
	echo "FAIL: otel_exe and otel_lib_owntls have the same offset $expected"
	exit 1
fi
"$bindir/otel_lib_owntls" 30 0af7651916cd43dd8448eb211c80319c b7ad6b7169203331 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$tmpdir"' EXIT
i=0
while ! grep -q libotel_writer.so "/proc/$pid/maps" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 100 ]; then
		echo "FAIL: otel_lib_owntls did not start"
		exit 1
	fi
	sleep 0.1
done
perf record -v -a -o "$data" -e cpu-clock -c 1000000 --tls-user=otel \
	-- "$bindir/otel_exe" 1 $trace_id $span_id > "$tmpdir/record.log" 2>&1 ||
	record_failed -a --tls-user=otel -- otel_exe
if ! grep -q "one offset applies to every process" "$tmpdir/record.log" ||
   ! grep -q "otel_thread_ctx_v1 at thread pointer $expected, from" "$tmpdir/record.log" ||
   ! grep -q "pid $pid (otel_lib_owntls) has otel_thread_ctx_v1 at $other:" \
		"$tmpdir/record.log"; then
	grep -A 8 tls "$tmpdir/record.log"
	echo "FAIL: no warning that pid $pid has otel_thread_ctx_v1 at $other, not $expected"
	exit 1
fi
check_ids otel_exe $trace_id $span_id

# Without a workload, perf takes the offset the processes it sees have
perf record -v -a -o "$data" -e cpu-clock -c 1000000 --tls-user=otel \
	-- sleep 1 > "$tmpdir/record.log" 2>&1 || record_failed -a --tls-user=otel -- sleep
if ! grep -q "otel_thread_ctx_v1 at thread pointer $other, from pid $pid (otel_lib_owntls)" \
		"$tmpdir/record.log"; then
	grep -A 8 tls "$tmpdir/record.log"
	echo "FAIL: perf record -a did not take the offset $other of pid $pid"
	exit 1
fi
check_ids otel_lib_owntls 0af7651916cd43dd8448eb211c80319c b7ad6b7169203331

# An offset given with -a is checked against the processes as well
perf record -a -o "$data" -e cpu-clock -c 1000000 --tls-user="otel,offset=$expected" \
	-- sleep 0.2 > "$tmpdir/record.log" 2>&1 || record_failed -a --tls-user=otel,offset=N
if ! grep -q "otel_thread_ctx_v1 at thread pointer $expected, from offset=N" \
		"$tmpdir/record.log" ||
   ! grep -q "pid $pid (otel_lib_owntls) has otel_thread_ctx_v1 at $other:" \
		"$tmpdir/record.log"; then
	grep -A 8 tls "$tmpdir/record.log"
	echo "FAIL: -a with offset=$expected did not warn that pid $pid has $other"
	exit 1
fi
echo "PASS: -a with offset $expected, pid $pid at $other named"
exit 0
