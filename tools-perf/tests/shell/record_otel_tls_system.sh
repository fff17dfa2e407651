#!/bin/sh
# perf record --tls-user=otel -a: each process at its own offset (otel_tls)
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2154 # bindir, tmpdir, data: set by lib/otel_tls.sh
#
# System wide, each process perf can place gets its own read program
# (PERF_EVENT_IOC_TLS_USER_PROC).  With otel_lib_owntls running, perf record
# -a of otel_exe gives otel_lib_owntls a program at its own offset, and the
# samples of both carry their ids; without a workload, and with an offset
# given as offset=N, the same.
# lib/otel_tls.sh sets the test up and says where the programs come from.

trace_id=4bf92f3577b34da6a3ce929d0e0e4736
span_id=53995c3f42cd8ad8

# shellcheck source=lib/otel_tls.sh
. "$(dirname "$0")/lib/otel_tls.sh"
otel_tls_need otel_exe otel_lib_owntls libotel_writer.so libotel_pad.so

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
if grep -q "one offset applies to every process" "$tmpdir/record.log" ||
   ! grep -q "pid $pid: otel_thread_ctx_v1 at thread pointer $other" "$tmpdir/record.log"; then
	grep -A 8 tls "$tmpdir/record.log"
	echo "FAIL: pid $pid did not get a program of its own at $other"
	exit 1
fi
check_ids otel_exe $trace_id $span_id
check_ids otel_lib_owntls 0af7651916cd43dd8448eb211c80319c b7ad6b7169203331

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

# An offset given with -a is the events' own; each process perf places
# still gets its own program
perf record -v -a -o "$data" -e cpu-clock -c 1000000 --tls-user="otel,offset=$expected" \
	-- sleep 0.5 > "$tmpdir/record.log" 2>&1 || record_failed -a --tls-user=otel,offset=N
if ! grep -q "pid $pid: otel_thread_ctx_v1 at thread pointer $other" "$tmpdir/record.log"; then
	grep -A 8 tls "$tmpdir/record.log"
	echo "FAIL: -a with offset=$expected gave pid $pid no program at $other"
	exit 1
fi
check_ids otel_lib_owntls 0af7651916cd43dd8448eb211c80319c b7ad6b7169203331
echo "PASS: -a gives pid $pid its own offset $other beside $expected"
exit 0
