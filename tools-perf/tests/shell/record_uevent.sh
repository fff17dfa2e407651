#!/bin/sh
# perf record --uevents shows prctl(PR_TASK_PERF_UEVENT) records
# SPDX-License-Identifier: GPL-2.0
#
# Records the uevent workload, which writes a text record, then a span
# begin and a span end around a second of work, and checks that perf
# script decodes them in time order among the samples.  POSIX sh: it also
# runs under busybox.

trace_id=4bf92f3577b34da6a3ce929d0e0e4736
span_id=00f067aa0ba902b7

tmpdir=$(mktemp -d /tmp/perf-test-uevent.XXXXXX) || exit 1
trap 'rm -rf "$tmpdir"' EXIT
data=$tmpdir/perf.data
out=$tmpdir/script.out

if ! perf record -o "$data" -e cpu-clock -c 1000000 --uevents \
		-- perf test -w uevent >"$tmpdir/record.log" 2>&1; then
	cat "$tmpdir/record.log"
	if grep -q "does not support PERF_RECORD_UEVENT" "$tmpdir/record.log"; then
		echo "Skip: the kernel does not support PERF_RECORD_UEVENT"
		exit 2
	fi
	echo "FAIL: perf record --uevents"
	exit 1
fi

if ! perf script -i "$data" -F comm,tid,time,event,ip,sym >"$out" 2>&1; then
	cat "$out"
	echo "FAIL: perf script"
	exit 1
fi

line_of() {
	grep -n "$1" "$out" | head -1 | cut -d: -f1
}

text=$(line_of "UEVENT type=0 size=21 hello from perf test$")
begin=$(line_of "UEVENT type=1 size=24 span begin trace_id=$trace_id span_id=$span_id$")
end=$(line_of "UEVENT type=2 size=24 span end trace_id=$trace_id span_id=$span_id$")

if [ -z "$text" ] || [ -z "$begin" ] || [ -z "$end" ]; then
	grep UEVENT "$out"
	echo "FAIL: missing uevents (text '$text' begin '$begin' end '$end')"
	exit 1
fi

if [ "$text" -ge "$begin" ] || [ "$begin" -ge "$end" ]; then
	grep UEVENT "$out"
	echo "FAIL: uevents out of order"
	exit 1
fi

# The workload spins for a second inside the span: its samples must be
# sorted between the begin and end records.
inside=$(sed -n "$((begin + 1)),$((end - 1))p" "$out" | grep -c "cpu-clock")
if [ "$inside" -eq 0 ]; then
	sed -n "$begin,${end}p" "$out" | head -20
	echo "FAIL: no cpu-clock sample between span begin and span end"
	exit 1
fi

# perf script --no-show-uevents hides them
if perf script -i "$data" --no-show-uevents 2>&1 | grep -q UEVENT; then
	echo "FAIL: --no-show-uevents still shows uevents"
	exit 1
fi

echo "PASS: 3 uevents in order, $inside samples inside the span"
exit 0
