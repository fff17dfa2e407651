#!/bin/sh
# perf script decodes the OpenTelemetry attributes (otel_tls)
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2154 # bindir, tmpdir, data: set by lib/otel_tls.sh
#
# The writer publishes attrs_data entries {key index, length, value}: key
# 1 twice (the last one wins), key 2, then an entry longer than
# attrs_data_size, where decoding stops.  perf script shows the entries
# the dump covers: all of them with --tls-user=otel,size=64, none with the
# 32 bytes of --tls-user=otel, which end inside the first entry: perf
# script then says which size has them all.
# lib/otel_tls.sh sets the test up and says where the programs come from.

trace_id=4bf92f3577b34da6a3ce929d0e0e4736
span_id=00f067aa0ba902b7

# shellcheck source=lib/otel_tls.sh
. "$(dirname "$0")/lib/otel_tls.sh"
otel_tls_need otel_exe

# 1="GET", 2="/api/v1", 1="POST", then key 5 of 200 bytes with 2 present
attrs=010347455402072f6170692f76310104504f535405c86162

perf record -o "$data" -e cpu-clock -c 1000000 --tls-user=otel,size=64 \
	-- "$bindir/otel_exe" 1 $trace_id $span_id $attrs > "$tmpdir/record.log" 2>&1 ||
	record_failed --tls-user=otel,size=64 -- otel_exe
check_ids otel_exe $trace_id $span_id
want='attrs: 1="POST" 2="/api/v1" (20 of 24 bytes decoded)'
if ! grep -q "span_id=$span_id $want\$" "$tmpdir/script.out"; then
	grep -m 3 "trace_id=" "$tmpdir/script.out"
	echo "FAIL: no sample with $want"
	exit 1
fi

perf record -o "$data" -e cpu-clock -c 1000000 --tls-user=otel \
	-- "$bindir/otel_exe" 1 $trace_id $span_id $attrs > "$tmpdir/record.log" 2>&1 ||
	record_failed --tls-user=otel -- otel_exe
check_ids otel_exe $trace_id $span_id
want='attrs: (4 of 24 bytes in the sample: --tls-user=otel,size=56)'
if ! grep -q "span_id=$span_id $want\$" "$tmpdir/script.out"; then
	grep -m 3 "trace_id=" "$tmpdir/script.out"
	echo "FAIL: no sample with $want in a 32-byte dump"
	exit 1
fi
echo "PASS: attributes decoded as far as the dump covers them"
exit 0
