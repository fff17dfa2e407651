#!/bin/sh
# perf record AUX sampling and full trace with the sw_aux PMU
# SPDX-License-Identifier: GPL-2.0
#
# Records a workload with cpu-clock samples that carry a sw_aux AUX area
# sample (--aux-sample) and checks that perf script shows, under each
# sample, at most the asked size of whole sw_aux records, of the sampled
# thread, with contiguous seq.  Then records a full sw_aux trace and checks
# that its records become sw_aux-tick samples of the workload, without seq
# gaps.  POSIX sh: it also runs under busybox.

if [ ! -d /sys/bus/event_source/devices/sw_aux ]; then
	echo "Skip: no sw_aux PMU (CONFIG_PERF_SW_AUX)"
	exit 2
fi

size=1024
tmpdir=$(mktemp -d /tmp/perf-test-sw-aux.XXXXXX) || exit 1
trap 'rm -rf "$tmpdir"' EXIT

# perf_record NAME ARGS...: record perf test -w noploop into $tmpdir/NAME.data
perf_record() {
	name=$1
	shift
	if ! perf record -o "$tmpdir/$name.data" "$@" -- perf test -w noploop \
			>"$tmpdir/$name.log" 2>&1; then
		cat "$tmpdir/$name.log"
		echo "FAIL: perf record $*"
		exit 1
	fi
}

# perf_script NAME ARGS...: perf script of NAME into $tmpdir/NAME.out
perf_script() {
	name=$1
	shift
	if ! perf script -i "$tmpdir/$name.data" "$@" >"$tmpdir/$name.out" \
			2>"$tmpdir/$name.err"; then
		cat "$tmpdir/$name.err"
		echo "FAIL: perf script $*"
		exit 1
	fi
}

# AUX area sampling: sw_aux leads the group, cpu-clock samples carry it.
perf_record sample -e "{sw_aux//,cpu-clock}" -c 4000000 --aux-sample=$size
perf_script sample -F comm,pid,tid,event

# A sample line is "comm pid/tid cpu-clock:", followed by
# "sw_aux: N bytes, M records" and one "sw_aux: seq S time T ip I pid P
# tid T" line per record.
if ! awk -v size=$size '
	function fail(msg) {
		print "FAIL: line " NR ": " msg ": " $0
		bad = 1
		exit 1
	}
	/ cpu-clock:/ {
		for (i = 1; i <= NF; i++)
			if ($i ~ /^[0-9]+\/[0-9]+$/) {
				split($i, id, "/")
				pid = id[1]
				tid = id[2]
			}
		if (pid == "")
			fail("no pid/tid")
		samples++
		next
	}
	/^[[:space:]]*sw_aux: [0-9]+ bytes, [0-9]+ records$/ {
		if ($2 + 0 > size)
			fail("AUX sample larger than " size)
		if ($4 * 32 > $2)
			fail("more records than fit")
		aux++
		last = ""
		next
	}
	/^[[:space:]]*sw_aux: seq / {
		if ($9 != pid || $11 != tid)
			fail("record of pid/tid " $9 "/" $11 ", sample of " pid "/" tid)
		if (last != "" && $3 != last + 1)
			fail("seq " $3 " after " last)
		last = $3
		records++
		next
	}
	/sw_aux: gap/ { fail("seq gap") }
	/sw_aux/ { fail("unexpected sw_aux line") }
	END {
		if (bad)
			exit 1
		# A sample may lack the AUX sample when it nests in another
		if (!samples || !aux || aux > samples || !records) {
			printf "FAIL: %d samples, %d AUX samples, %d records\n",
			       samples, aux, records
			exit 1
		}
		printf "%d samples, %d AUX samples, %d sw_aux records\n",
		       samples, aux, records
	}' "$tmpdir/sample.out"; then
	head -40 "$tmpdir/sample.out"
	exit 1
fi

if ! perf report -D -i "$tmpdir/sample.data" 2>/dev/null | grep -q "sw_aux data: size"; then
	echo "FAIL: perf report -D does not dump the sw_aux AUX samples"
	exit 1
fi

# Full trace: each record becomes a sw_aux-tick sample of the workload.
perf_record trace -e sw_aux// -e cpu-clock -c 4000000
perf_script trace -F pid,tid,event

if grep -q "trace error" "$tmpdir/trace.out"; then
	grep "trace error" "$tmpdir/trace.out" | head
	echo "FAIL: sw_aux seq gaps in the full trace"
	exit 1
fi

ticks=$(grep -c " sw_aux-tick:" "$tmpdir/trace.out")
clock_pids=$(grep " cpu-clock:" "$tmpdir/trace.out" | awk '{ print $1 }' | sort -u)
tick_pids=$(grep " sw_aux-tick:" "$tmpdir/trace.out" | awk '{ print $1 }' | sort -u)
if [ "$ticks" -eq 0 ] || [ -z "$clock_pids" ] || [ "$tick_pids" != "$clock_pids" ]; then
	head -20 "$tmpdir/trace.out"
	echo "FAIL: $ticks sw_aux-tick samples of '$tick_pids', cpu-clock samples of '$clock_pids'"
	exit 1
fi

echo "PASS: AUX samples and $ticks sw_aux-tick samples of $tick_pids"
exit 0
