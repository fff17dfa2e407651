#!/bin/sh
# perf record -a --tls-user=otel: every process its own ids (otel_tls_host)
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2154 # bindir, tmpdir, data: set by lib/otel_tls.sh
#
# A whole host: otel_lib (the writer in a TLSDESC library) and otel_exe (the
# writer in the executable) run at different offsets, and otel_lib_owntls
# starts after perf record -a; none of them registers anything.  perf gives
# each its own read program, in the sample and in the deferred mode, and
# the samples of each carry its own ids and no other's.  Prints how long a
# process that starts during the recording goes without ids.
# lib/otel_tls.sh sets the test up and says where the programs come from.

# shellcheck source=lib/otel_tls.sh
. "$(dirname "$0")/lib/otel_tls.sh"
otel_tls_need otel_exe otel_lib otel_lib_owntls libotel_writer.so libotel_pad.so

lib_ids="4bf92f3577b34da6a3ce929d0e0e4736 53995c3f42cd8ad8"
exe_ids="0af7651916cd43dd8448eb211c80319c b7ad6b7169203331"
new_ids="5b8efff798038103d269b633813fc60c eee19b7ec3c1b174"

offset_of() {
	signed "$("$bindir/$1" offset)" || {
		echo "FAIL: $bindir/$1 does not run" >&2
		exit 1
	}
}
lib_off=$(offset_of otel_lib) || exit 1
exe_off=$(offset_of otel_exe) || exit 1
new_off=$(offset_of otel_lib_owntls) || exit 1
if [ "$lib_off" = "$exe_off" ] || [ "$new_off" = "$lib_off" ] ||
   [ "$new_off" = "$exe_off" ]; then
	echo "FAIL: two of the programs have the same offset"
	exit 1
fi
echo "offsets: otel_lib $lib_off, otel_exe $exe_off, otel_lib_owntls $new_off"

# shellcheck disable=SC2086 # the ids are two words
"$bindir/otel_lib" 60 $lib_ids &
lib_pid=$!
# shellcheck disable=SC2086
"$bindir/otel_exe" 60 $exe_ids &
exe_pid=$!
trap 'kill $lib_pid $exe_pid 2>/dev/null; rm -rf "$tmpdir"' EXIT
i=0
while ! grep -q libotel_writer.so "/proc/$lib_pid/maps" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 100 ]; then
		echo "FAIL: otel_lib did not start"
		exit 1
	fi
	sleep 0.1
done

# The samples of COMM from its first sample with ids on: how many, and the
# time from its first sample to its first sample with ids, in ms
window() {
	perf script -i "$data" -F comm,time,tls 2>/dev/null | grep "^ *$1 " |
	awk '{ t = $2; sub(":", "", t); if (!first) first = t
	       if (!ids && / trace_id=/) ids = t }
	     END { printf "%.1f\n", (ids - first) * 1000 }'
}

for mode in "" ",defer"; do
	# otel_lib_owntls is no workload, whose offset would be the events' own
	perf record -v -a -o "$data" -e cpu-clock -c 1000000 --tls-user="otel$mode" \
		-- sleep 2 > "$tmpdir/record.log" 2>&1 &
	perf_pid=$!
	# Started once perf placed the processes it found
	i=0
	while ! grep -Eq "pid $exe_pid: |one offset applies" "$tmpdir/record.log"; do
		i=$((i + 1))
		if [ $i -gt 100 ] || ! kill -0 $perf_pid 2>/dev/null; then
			wait $perf_pid
			record_failed -a --tls-user="otel$mode"
		fi
		sleep 0.05
	done
	if grep -q "one offset applies" "$tmpdir/record.log"; then
		wait $perf_pid
		echo "Skip: the kernel has no PERF_EVENT_IOC_TLS_USER_PROC"
		exit 2
	fi
	# shellcheck disable=SC2086
	"$bindir/otel_lib_owntls" 1 $new_ids
	wait $perf_pid || record_failed -a --tls-user="otel$mode"
	if ! grep -q "pid $lib_pid: otel_thread_ctx_v1 at thread pointer $lib_off" \
			"$tmpdir/record.log" ||
	   ! grep -q "pid $exe_pid: otel_thread_ctx_v1 at thread pointer $exe_off" \
			"$tmpdir/record.log" ||
	   ! grep -q "placed in [0-9]* processes at the start and [1-9][0-9]* started since" \
			"$tmpdir/record.log"; then
		grep tls "$tmpdir/record.log"
		echo "FAIL: otel$mode: not every process got its own program"
		exit 1
	fi
	# shellcheck disable=SC2086
	check_ids otel_lib $lib_ids
	# shellcheck disable=SC2086
	check_ids otel_exe $exe_ids
	# shellcheck disable=SC2086
	check_ids otel_lib_owntls $new_ids
	echo "otel$mode: otel_lib_owntls, started during the recording, went" \
	     "$(window otel_lib_owntls) ms without ids"
	# Why samples have no bytes, per process: the same counts at the end
	# of perf record (when some have none) and in perf report's header
	report=$(perf report -i "$data" --stdio 2>/dev/null | sed -n 's/^# \(tls: .*\)/\1/p')
	recorded=$(grep -E "^tls: [0-9]+ samples, |^tls:   (pid|and) " "$tmpdir/record.log")
	if ! echo "$report" | grep -q "^tls: [1-9][0-9]* samples, [1-9][0-9]* with bytes" ||
	   { [ -n "$recorded" ] && [ "$recorded" != "$report" ]; }; then
		printf 'perf record:\n%s\nperf report:\n%s\n' "$recorded" "$report"
		echo "FAIL: otel$mode: perf record and perf report count differently"
		exit 1
	fi
	echo "$report"
done
echo "PASS: three processes at three offsets, each with its own ids"
exit 0
