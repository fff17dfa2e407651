#!/bin/sh
# perf record --tls-user samples an OpenTelemetry thread context
# SPDX-License-Identifier: GPL-2.0
#
# Records the otel_tls workload, which publishes a known trace and span id
# through the TLS pointer otel_thread_ctx_v1, and checks that perf script
# decodes them from the samples.  POSIX sh: it also runs under busybox.

trace_id=4bf92f3577b34da6a3ce929d0e0e4736
span_id=00f067aa0ba902b7

tmpdir=$(mktemp -d /tmp/perf-test-tls-user.XXXXXX) || exit 1
trap 'rm -rf "$tmpdir"' EXIT
data=$tmpdir/perf.data

if ! offset=$(perf test -w otel_tls offset 2>"$tmpdir/offset.err"); then
	cat "$tmpdir/offset.err"
	echo "Skip: the otel_tls workload has no thread pointer on this arch"
	exit 2
fi

if ! perf record -o "$data" -e cpu-clock -c 1000000 \
		--tls-user=otel,offset="$offset" \
		-- perf test -w otel_tls 1 >"$tmpdir/record.log" 2>&1; then
	cat "$tmpdir/record.log"
	if grep -q "does not support PERF_SAMPLE_TLS_USER" "$tmpdir/record.log"; then
		echo "Skip: the kernel does not support PERF_SAMPLE_TLS_USER"
		exit 2
	fi
	echo "FAIL: perf record --tls-user=otel,offset=$offset"
	exit 1
fi

if ! perf script -i "$data" -F comm,tid,event,tls >"$tmpdir/script.out" 2>&1; then
	cat "$tmpdir/script.out"
	echo "FAIL: perf script"
	exit 1
fi

if ! grep -q "trace_id=$trace_id span_id=$span_id" "$tmpdir/script.out"; then
	head -20 "$tmpdir/script.out"
	echo "FAIL: no sample with trace_id=$trace_id span_id=$span_id"
	exit 1
fi

# The raw bytes start with the record: trace id, then span id
if ! grep -q "tls: $trace_id$span_id" "$tmpdir/script.out"; then
	grep -m 5 "trace_id=" "$tmpdir/script.out"
	echo "FAIL: tls bytes do not start with the trace and span id"
	exit 1
fi

n=$(grep -c "trace_id=$trace_id" "$tmpdir/script.out")

# Without offset=N, perf finds otel_thread_ctx_v1 in the workload's symbols
if ! perf record -o "$data" -e cpu-clock -c 1000000 --tls-user=otel \
		-- perf test -w otel_tls 1 >"$tmpdir/record.log" 2>&1; then
	cat "$tmpdir/record.log"
	if ! grep -q "no TLS symbol" "$tmpdir/record.log"; then
		echo "FAIL: perf record --tls-user=otel"
		exit 1
	fi
	echo "PASS: $n samples with the OpenTelemetry context (perf has no symbols)"
	exit 0
fi
if ! perf script -i "$data" -F tls 2>&1 | grep -q "trace_id=$trace_id span_id=$span_id"; then
	echo "FAIL: --tls-user=otel found a wrong offset for otel_thread_ctx_v1"
	exit 1
fi

echo "PASS: $n samples with the OpenTelemetry context, offset found too"
exit 0
