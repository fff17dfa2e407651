#!/bin/sh
# perf record --tls-user=otel: program with TLS referencing the library variable (otel_tls)
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2154 # bindir, tmpdir, data: set by lib/otel_tls.sh
#
# The program has TLS of its own and reads otel_thread_ctx_v1 itself, so its
# symbol table has the name too, undefined: perf must take the library's
# definition, placed after the program's own TLS block.
# lib/otel_tls.sh sets the test up and says where the programs come from.

trace_id=5b8efff798038103d269b633813fc60c
span_id=eee19b7ec3c1b174

# shellcheck source=lib/otel_tls.sh
. "$(dirname "$0")/lib/otel_tls.sh"
otel_tls_need otel_lib_owntls libotel_writer.so libotel_pad.so

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
