#!/bin/sh
# perf record --tls-user=otel: a dlopen()ed writer is out of reach (otel_tls)
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2154 # bindir, tmpdir, data: set by lib/otel_tls.sh
#
# otel_dlopen loads libotel_writer.so with dlopen(): its TLS is not in the
# static TLS block.  perf record -p must say so and stop, and perf record
# -a must name the process in its warning.
# lib/otel_tls.sh sets the test up and says where the programs come from.

trace_id=4bf92f3577b34da6a3ce929d0e0e4736
span_id=a3ce929d0e0e4736

# shellcheck source=lib/otel_tls.sh
. "$(dirname "$0")/lib/otel_tls.sh"
otel_tls_need otel_exe otel_dlopen libotel_writer.so

"$bindir/otel_dlopen" 30 $trace_id $span_id &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$tmpdir"' EXIT
i=0
while ! grep -q libotel_writer.so "/proc/$pid/maps" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 100 ]; then
		echo "FAIL: otel_dlopen did not load the writer"
		exit 1
	fi
	sleep 0.1
done

# -p: the variable is only in a dlopen()ed library
if perf record -o "$data" -e cpu-clock --tls-user=otel -p $pid -- sleep 0.1 \
		> "$tmpdir/record.log" 2>&1 ||
   ! grep -q "libotel_writer.so, which process $pid loaded with dlopen()" "$tmpdir/record.log" ||
   ! grep -q "dynamic TLS, out of reach of a single dereference" "$tmpdir/record.log"; then
	cat "$tmpdir/record.log"
	echo "FAIL: perf record -p did not report the dlopen()ed library"
	exit 1
fi

# -a: the workload's offset, and a warning naming the dlopen()ed one
perf record -a -o "$data" -e cpu-clock -c 1000000 --tls-user=otel \
	-- "$bindir/otel_exe" 1 $trace_id 00f067aa0ba902b7 > "$tmpdir/record.log" 2>&1 ||
	record_failed -a --tls-user=otel -- otel_exe
if ! grep -q "pid $pid (otel_dlopen) has otel_thread_ctx_v1 in dynamic TLS" \
		"$tmpdir/record.log"; then
	cat "$tmpdir/record.log"
	echo "FAIL: perf record -a did not name pid $pid with dynamic TLS"
	exit 1
fi
check_ids otel_exe $trace_id 00f067aa0ba902b7
echo "PASS: the dlopen()ed writer of pid $pid reported as dynamic TLS"
exit 0
