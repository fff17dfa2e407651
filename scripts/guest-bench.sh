#!/bin/sh
# Runs inside a guest for "make bench": every benchmark program in $BENCH,
# with the events this arch can sample on.  Prints "BENCH name value unit".
for ev in cpu-clock ${BENCH_HW_EVENT:-}; do
	"$BENCH/sample_cost" "$ev"
done
for prog in "$BENCH"/*; do
	case ${prog##*/} in sample_cost) continue ;; esac
	[ -x "$prog" ] && "$prog"
done
exit 0
