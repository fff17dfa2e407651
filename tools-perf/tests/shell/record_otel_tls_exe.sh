#!/bin/sh
# perf record --tls-user=otel: writer in the executable (otel_tls)
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2154 # bindir, tmpdir, data: set by lib/otel_tls.sh
#
# The OpenTelemetry thread context writer is linked into the program: perf
# finds otel_thread_ctx_v1 in the program's symbols and computes its offset
# from the thread pointer, which must be the one the program sees, and the
# samples must carry the planted trace and span ids.
# lib/otel_tls.sh sets the test up and says where the programs come from.

trace_id=4bf92f3577b34da6a3ce929d0e0e4736
span_id=00f067aa0ba902b7

# shellcheck source=lib/otel_tls.sh
. "$(dirname "$0")/lib/otel_tls.sh"
otel_tls_need otel_exe

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
