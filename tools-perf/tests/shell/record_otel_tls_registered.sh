#!/bin/sh
# perf record -a --tls-user=registered reads each process's own context (otel_tls)
# SPDX-License-Identifier: GPL-2.0
#
# Two otel_tls workloads register where their OpenTelemetry thread
# context is with prctl(PR_TASK_PERF_CONTEXT): one the address of its
# otel_thread_ctx_v1 TLS variable, the other a heap slot that holds the
# record's address while its TLS variable stays NULL.  Each plants its
# own trace and span ids, the first one an attribute too.  One system
# wide perf record --tls-user=registered, which looks up no symbol, must
# show each process's ids in the samples of its pid and no other ids;
# the same with defer; and with otel,registered,size=64 the first one's
# attribute, decoded, in a copy that the record's attrs_data_size cut to
# 28 + 10 bytes, and the second one's record cut to its 28 bytes.
# POSIX sh: it also runs under busybox.

trace1=4bf92f3577b34da6a3ce929d0e0e4736
span1=00f067aa0ba902b7
trace2=0af7651916cd43dd8448eb211c80319c
span2=b7ad6b7169203331
# key 3, 8 bytes: "checkout"
attrs1=0308636865636b6f7574

tmpdir=$(mktemp -d /tmp/perf-test-tls-registered.XXXXXX) || exit 1
pids=""
cleanup() {
	for p in $pids; do
		kill "$p" 2>/dev/null
	done
	rm -rf "$tmpdir"
}
trap cleanup EXIT
data=$tmpdir/perf.data

# start MODE TRACE SPAN [ATTRS]: an otel_tls workload that registered
start() {
	log=$tmpdir/workload.$#.$1.log
	perf test -w otel_tls 600 "$@" >"$log" 2>&1 &
	pid=$!
	pids="$pids $pid"
	# It registers at once; a kernel without PR_TASK_PERF_CONTEXT ends it
	sleep 1
	if ! kill -0 "$pid" 2>/dev/null; then
		wait "$pid"
		rc=$?
		cat "$log"
		if [ "$rc" -eq 2 ]; then
			echo "Skip: the kernel has no PR_TASK_PERF_CONTEXT"
			exit 2
		fi
		echo "FAIL: perf test -w otel_tls 600 $*"
		exit 1
	fi
}

record() {
	if ! perf record -o "$data" -a -e cpu-clock -c 1000000 "$@" \
			-- sleep 2 >"$tmpdir/record.log" 2>&1; then
		cat "$tmpdir/record.log"
		if grep -q "lacks the TLS read program\|does not support PERF_SAMPLE_TLS_USER" \
				"$tmpdir/record.log"; then
			echo "Skip: the kernel lacks the TLS read program"
			exit 2
		fi
		if grep -q "lacks deferred TLS\|does not support deferred\|without deferred user" \
				"$tmpdir/record.log"; then
			return 2
		fi
		if grep -q "Permission\|perf_event_paranoid" "$tmpdir/record.log"; then
			echo "Skip: perf record -a is not permitted here"
			exit 2
		fi
		echo "FAIL: perf record -a $*"
		exit 1
	fi
	if ! perf script -i "$data" -F pid,tls >"$tmpdir/script.out" 2>"$tmpdir/script.err"; then
		cat "$tmpdir/script.out" "$tmpdir/script.err"
		echo "FAIL: perf script after perf record -a $*"
		exit 1
	fi
}

# check PID TRACE SPAN WHAT: the samples of PID carry its planted ids:
# at least half of them (a sample taken before the record was published
# has none), and no other ids
check() {
	awk -v pid="$1" '$1 == pid' "$tmpdir/script.out" >"$tmpdir/pid.out"
	all=$(grep -c " tls:" "$tmpdir/pid.out")
	good=$(grep -c "trace_id=$2 span_id=$3" "$tmpdir/pid.out")
	nother=$(grep "trace_id=" "$tmpdir/pid.out" | grep -vc "trace_id=$2 span_id=$3")
	echo "$4: pid $1: $all samples, $good with its ids, $nother other ids"
	if [ "$good" -eq 0 ] || [ $((good * 2)) -lt "$all" ] || [ "$nother" -ne 0 ]; then
		head -5 "$tmpdir/pid.out"
		echo "FAIL: $4: the samples of pid $1 do not carry its ids"
		exit 1
	fi
}

start registered $trace1 $span1 $attrs1
pid1=$pid
start registered-slot $trace2 $span2
pid2=$pid

record --tls-user=registered
check "$pid1" $trace1 $span1 "registered, TLS variable"
check "$pid2" $trace2 $span2 "registered, heap slot"

# The copy ends with the attributes: 28 + 10 bytes, 28 with none
record --tls-user=otel,registered,size=64
check "$pid1" $trace1 $span1 "size=64, TLS variable"
want="attrs: 3=\"checkout\""
if ! awk -v pid="$pid1" '$1 == pid' "$tmpdir/script.out" | grep -q "span_id=$span1 $want\$"; then
	awk -v pid="$pid1" '$1 == pid' "$tmpdir/script.out" | head -3
	echo "FAIL: no sample of pid $pid1 with $want"
	exit 1
fi
# The bytes copied, in hex: the length field cut the 64 bytes asked for
len1=$(awk -v pid="$pid1" '$1 == pid && /checkout/ { print length($3) / 2; exit }' \
	"$tmpdir/script.out")
check "$pid2" $trace2 $span2 "size=64, heap slot"
len2=$(awk -v pid="$pid2" '$1 == pid && /trace_id=/ { print length($3) / 2; exit }' \
	"$tmpdir/script.out")
echo "size=64: $len1 bytes copied with the attribute, $len2 without"
if [ "$len1" != 38 ] || [ "$len2" != 28 ]; then
	echo "FAIL: the copies are not cut at the records' attrs_data_size"
	exit 1
fi

record --tls-user=registered,defer
rc=$?
if [ "$rc" -eq 2 ]; then
	echo "registered,defer: the kernel lacks deferred TLS reads, not tested"
else
	check "$pid1" $trace1 $span1 "registered,defer, TLS variable"
	check "$pid2" $trace2 $span2 "registered,defer, heap slot"
fi

echo "PASS: each process's own ids through the context it registered"
exit 0
