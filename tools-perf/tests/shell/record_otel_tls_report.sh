#!/bin/sh
# perf report --sort trace_id,span_id (otel_tls)
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2154 # bindir, tmpdir, data: set by lib/otel_tls.sh
#
# perf report groups the samples by the trace and span ids of their
# OpenTelemetry thread context: the planted ids have most of the samples of
# the program, the samples without a context (before the writer publishes
# it) are under "-".
# lib/otel_tls.sh sets the test up and says where the programs come from.

trace_id=0af7651916cd43dd8448eb211c80319c
span_id=b7ad6b7169203331

# shellcheck source=lib/otel_tls.sh
. "$(dirname "$0")/lib/otel_tls.sh"
otel_tls_need otel_exe

perf record -o "$data" -e cpu-clock -c 1000000 --tls-user=otel \
	-- "$bindir/otel_exe" 1 $trace_id $span_id > "$tmpdir/record.log" 2>&1 ||
	record_failed --tls-user=otel -- otel_exe
check_ids otel_exe $trace_id $span_id

if ! perf report -i "$data" --stdio --comm otel_exe -s trace_id,span_id \
		> "$tmpdir/report.out" 2>&1; then
	cat "$tmpdir/report.out"
	echo "FAIL: perf report -s trace_id,span_id"
	exit 1
fi
if ! grep -q "Trace ID  *Span ID" "$tmpdir/report.out"; then
	cat "$tmpdir/report.out"
	echo "FAIL: no Trace ID and Span ID columns"
	exit 1
fi
line=$(grep " $trace_id  *$span_id *\$" "$tmpdir/report.out")
pct=$(echo "$line" | sed -n 's/^ *\([0-9]*\)\.[0-9]*%.*/\1/p')
if [ -z "$pct" ] || [ "$pct" -lt 50 ]; then
	cat "$tmpdir/report.out"
	echo "FAIL: the planted ids do not have most of the samples: '$line'"
	exit 1
fi
if grep -v "^#" "$tmpdir/report.out" | grep "%" | grep -v " $trace_id " |
		grep -vq "%  *-  *- *\$"; then
	cat "$tmpdir/report.out"
	echo "FAIL: ids other than the planted ones or '-'"
	exit 1
fi
if ! perf report -i "$data" --stdio --comm otel_exe -s span_id 2>&1 |
		grep -q "%  *$span_id *\$"; then
	echo "FAIL: perf report -s span_id"
	exit 1
fi
echo "PASS: $pct% of the samples of otel_exe under trace_id=$trace_id span_id=$span_id"
exit 0
