#!/bin/sh
# Runs inside a guest for "make bench": every benchmark program in $BENCH,
# with the events this arch can sample on.  Prints "BENCH name value unit".

# Sample costs are measured at high rates; the kernel would otherwise lower
# the sample rate while a benchmark runs (perf_cpu_time_max_percent) and
# make the rounds incomparable.  The rate must be set while throttling is on.
echo 1000000 > /proc/sys/kernel/perf_event_max_sample_rate
echo 0 > /proc/sys/kernel/perf_cpu_time_max_percent
for ev in cpu-clock ${BENCH_HW_EVENT:-}; do
	"$BENCH/sample_cost" "$ev"
done
for prog in "$BENCH"/*; do
	case ${prog##*/} in sample_cost) continue ;; esac
	[ -x "$prog" ] && "$prog"
done
exit 0
