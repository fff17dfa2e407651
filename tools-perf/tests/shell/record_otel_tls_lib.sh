#!/bin/sh
# perf record --tls-user=otel: writer in a DT_NEEDED TLSDESC library (otel_tls)
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2154 # bindir, tmpdir, data: set by lib/otel_tls.sh
#
# The writer is in libotel_writer.so, built with TLSDESC and loaded at
# startup after libotel_pad.so (DT_NEEDED, found through DT_RUNPATH
# $ORIGIN): its TLS is in the static TLS block at a fixed offset, which perf
# computes from the static TLS layout of the dynamic linker.  Run through
# env and sh -c, which perf looks through.
# lib/otel_tls.sh sets the test up and says where the programs come from.

trace_id=0af7651916cd43dd8448eb211c80319c
span_id=b7ad6b7169203331

# shellcheck source=lib/otel_tls.sh
. "$(dirname "$0")/lib/otel_tls.sh"
otel_tls_need otel_lib libotel_writer.so libotel_pad.so

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
