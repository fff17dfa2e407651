#!/bin/sh
# perf record --tls-user=otel -p PID: offset from /proc/PID (otel_tls)
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2154 # bindir, tmpdir, data: set by lib/otel_tls.sh
#
# perf record -p of a running program with the writer in a library: perf
# computes the offset from /proc/PID/exe and the files of /proc/PID/maps.
# lib/otel_tls.sh sets the test up and says where the programs come from.

trace_id=a3ce929d0e0e47364bf92f3577b34da6
span_id=0ba902b700f067aa

# shellcheck source=lib/otel_tls.sh
. "$(dirname "$0")/lib/otel_tls.sh"
otel_tls_need otel_lib_owntls libotel_writer.so libotel_pad.so

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
