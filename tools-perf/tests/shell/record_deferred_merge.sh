#!/bin/sh
# perf script merges deferred callchains in time order, with bounded memory
# SPDX-License-Identifier: GPL-2.0
#
# Records two deferred_chain workloads side by side with --call-graph
# fp,defer and checks that perf script:
#
# - shows the samples in time order, merged;
# - when a PERF_RECORD_CALLCHAIN_DEFERRED record is missing (the file is
#   edited to turn one into a PERF_RECORD_SWITCH, which perf passes over),
#   shows the samples that waited for it with their kernel part at the
#   next deferred record of their thread, so still in time order instead
#   of at the thread's exit, and says how many there were;
# - with call-graph.defer-queue-size set to 1 byte, holds no sample, shows
#   them in time order and warns how many samples went past the limit.
#
# POSIX sh: it also runs under busybox.

tmpdir=$(mktemp -d /tmp/perf-test-defer-merge.XXXXXX) || exit 1
trap 'rm -rf "$tmpdir"' EXIT
data=$tmpdir/perf.data

if ! perf record -o "$data" -e cpu-clock -c 500000 --call-graph fp,defer -- \
		sh -c 'perf test -w deferred_chain 2 & perf test -w deferred_chain 2; wait' \
		>"$tmpdir/record.log" 2>&1; then
	cat "$tmpdir/record.log"
	if grep -q "does not support deferred callchains" "$tmpdir/record.log"; then
		echo "Skip: the kernel does not support deferred callchains"
		exit 2
	fi
	echo "FAIL: perf record --call-graph fp,defer"
	exit 1
fi

# Prints "samples inversions": the number of samples in perf script -F
# tid,time output and how many have a time before the sample above them.
order() {
	awk '{
		for (i = 1; i <= NF; i++)
			if ($i ~ /^[0-9]+\.[0-9]+:$/) {
				t = substr($i, 1, length($i) - 1) + 0
				if (n && t < last) bad++
				last = t; n++
				break
			}
	} END { print n + 0, bad + 0 }' "$1"
}

# Samples whose callchain has a kernel function, then a user one.
merged() {
	awk '/^$/ { if (k && u) good++; k = 0; u = 0; next }
	     /^[^\t]/ { k = 0; u = 0; next }
	     /\[kernel\.kallsyms\]/ { k = 1; next }
	     { if (k) u = 1 }
	     END { print good + 0 }' "$1"
}

# script NAME [ARGS]: perf script into $tmpdir/NAME.{time,chain,err}, with
# the configuration in $perf_home/.perfconfig
perf_home=$HOME
script() {
	name=$1
	shift
	if ! HOME=$perf_home perf script "$@" -F tid,time \
			>"$tmpdir/$name.time" 2>"$tmpdir/$name.err" ||
	   ! HOME=$perf_home perf script "$@" -F tid,time,ip,dso \
			>"$tmpdir/$name.chain" 2>>"$tmpdir/$name.err"; then
		cat "$tmpdir/$name.err"
		echo "FAIL: perf script $*"
		exit 1
	fi
	res=$(order "$tmpdir/$name.time")
	samples=${res% *}
	inversions=${res#* }
	stitched=$(merged "$tmpdir/$name.chain")
	echo "$name: $samples samples, $inversions out of time order, $stitched merged"
	if [ "$samples" -lt 100 ] || [ "$inversions" -ne 0 ]; then
		cat "$tmpdir/$name.err"
		echo "FAIL: $name: $samples samples, $inversions out of time order"
		exit 1
	fi
}

# The count in the warning about samples without their user part
unmatched() {
	n=$(sed -n 's/^\([0-9]*\) samples got no deferred user callchain.*/\1/p' "$1" | head -1)
	echo "${n:-0}"
}

# 1. The recording as it is
script plain -i "$data"
if [ "$stitched" -lt 10 ]; then
	echo "FAIL: plain: only $stitched merged samples"
	exit 1
fi
if grep -q "past the" "$tmpdir/plain.err"; then
	cat "$tmpdir/plain.err"
	echo "FAIL: plain: the default limit on held bytes was reached"
	exit 1
fi
plain_merged=$stitched
plain_unmatched=$(unmatched "$tmpdir/plain.err")

# 2. A deferred record lost: make the one in the middle a PERF_RECORD_SWITCH
# (type 14): same header and sample_id, and perf passes switch records over.
perf report -D -i "$data" 2>/dev/null |
	sed -n 's/^\(0x[0-9a-f]*\)[@ ].*event: 22$/\1/p' >"$tmpdir/records"
nr=$(wc -l <"$tmpdir/records")
if [ "$nr" -lt 10 ]; then
	echo "FAIL: only $nr deferred records in perf report -D"
	exit 1
fi
off=$(sed -n "$((nr / 2))p" "$tmpdir/records")
cp "$data" "$tmpdir/lost.data"
printf '\016' | dd of="$tmpdir/lost.data" bs=1 seek=$((off)) count=1 conv=notrunc 2>/dev/null
left=$(perf report -D -i "$tmpdir/lost.data" 2>/dev/null | grep -c 'event: 22$')
if [ "$left" -ne $((nr - 1)) ]; then
	echo "FAIL: $left deferred records left of $nr after removing one at $off"
	exit 1
fi
script lost -i "$tmpdir/lost.data"
unmatched=$(($(unmatched "$tmpdir/lost.err") - plain_unmatched))
if [ "$unmatched" -lt 1 ]; then
	cat "$tmpdir/lost.err"
	echo "FAIL: lost: no more samples without their user part than before ($plain_unmatched)"
	exit 1
fi
if [ "$stitched" -lt $((plain_merged - unmatched)) ]; then
	echo "FAIL: lost: $stitched merged, $plain_merged before, $unmatched more unmatched"
	exit 1
fi
echo "lost: $unmatched more samples without their user part ($plain_unmatched before)"

# 3. A limit of 1 byte on what waits: no sample waits
printf '[call-graph]\n\tdefer-queue-size = 1\n' >"$tmpdir/.perfconfig"
perf_home=$tmpdir
script limit -i "$data"
over=$(sed -n 's/^\([0-9]*\) samples waited for their deferred user callchain past the.*/\1/p' \
	"$tmpdir/limit.err" | head -1)
if [ -z "$over" ] || [ "$over" -lt 100 ]; then
	cat "$tmpdir/limit.err"
	echo "FAIL: limit: no warning about the samples past the limit"
	exit 1
fi
if [ "$stitched" -ge "$plain_merged" ]; then
	echo "FAIL: limit: $stitched merged, as many as without a limit"
	exit 1
fi
echo "limit: $over samples past the limit"

echo "PASS: time order with and without a lost record and a limit"
exit 0
