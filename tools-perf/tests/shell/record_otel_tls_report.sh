#!/bin/sh
# perf report --sort trace_id,span_id (otel_tls)
# SPDX-License-Identifier: GPL-2.0
#
# perf report groups the samples by the trace and span ids of their
# OpenTelemetry thread context: the planted ids have most of the samples of
# the program, the samples without a context (before the writer publishes
# it) are under "-".
# The programs come from tools/perf/tests/otel_tls, built beside perf in
# the directory otel-tls (or $OTEL_TLS_BIN).  POSIX sh: it also runs under
# busybox.

trace_id=0af7651916cd43dd8448eb211c80319c
span_id=b7ad6b7169203331

bindir=${OTEL_TLS_BIN:-$(dirname "$(command -v perf)")/otel-tls}
if [ ! -f "$bindir/otel_exe" ]; then
	echo "Skip: $bindir/otel_exe is missing (tools/perf/tests/otel_tls/Makefile builds it)"
	exit 2
fi

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
