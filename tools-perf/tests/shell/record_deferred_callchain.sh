#!/bin/sh
# perf record --call-graph fp,defer merges deferred user callchains
# SPDX-License-Identifier: GPL-2.0
#
# Records the deferred_chain workload, which spends its time in getrandom()
# system calls made from deferred_top -> deferred_mid -> deferred_leaf,
# with deferred user callchains.  perf script must show samples whose
# callchain has kernel functions followed by the return addresses into
# deferred_mid, deferred_top and deferred_chain (printed by the workload),
# in order, and their names where perf resolves user symbols; with
# --no-merge-callchains it must show the samples with their cookie and the
# PERF_RECORD_CALLCHAIN_DEFERRED records.  POSIX sh: it also runs under
# busybox.

tmpdir=$(mktemp -d /tmp/perf-test-defer.XXXXXX) || exit 1
trap 'rm -rf "$tmpdir"' EXIT
data=$tmpdir/perf.data

if ! perf record -o "$data" -e cpu-clock -c 1000000 --call-graph fp,defer \
		-- perf test -w deferred_chain >"$tmpdir/record.log" 2>&1; then
	cat "$tmpdir/record.log"
	if grep -q "does not support deferred callchains" "$tmpdir/record.log"; then
		echo "Skip: the kernel does not support deferred callchains"
		exit 2
	fi
	echo "FAIL: perf record --call-graph fp,defer"
	exit 1
fi

# The return addresses in deferred_mid, deferred_top and deferred_chain,
# which follow deferred_leaf's ip in its user callchain.  They also work
# where perf cannot resolve user symbols (static perf without libelf).
addrs=$(sed -n 's/^user return addresses: \([0-9a-f ]*\)$/\1/p' \
	"$tmpdir/record.log")
set -- $addrs
if [ $# -ne 3 ]; then
	cat "$tmpdir/record.log"
	echo "FAIL: the workload did not print its return addresses"
	exit 1
fi

# Each sample is a line, then one tab-indented line per callchain entry,
# then a blank line.  Count the samples whose callchain has a kernel
# function, then the three return addresses below it, in order.
stitched() {
	awk -v a="$1" -v b="$2" -v c="$3" '
		/^$/ { if (k && x && y && z && k < x && x < y && y < z) good++; next }
		/^[^\t]/ { k = 0; x = 0; y = 0; z = 0; n = 0; next }
		{
			n++
			if (!k && /\[kernel\.kallsyms\]/) k = n
			# As strings: 48e358 is a number to awk
			if (!x && $1 "" == a "") x = n
			if (!y && $1 "" == b "") y = n
			if (!z && $1 "" == c "") z = n
		}
		END { print good + 0 }' "$4"
}

if ! perf script -i "$data" -F comm,tid,ip,sym,dso >"$tmpdir/merged" 2>&1; then
	cat "$tmpdir/merged"
	echo "FAIL: perf script"
	exit 1
fi
merged=$(stitched "$@" "$tmpdir/merged")
if [ "$merged" -eq 0 ]; then
	head -60 "$tmpdir/merged"
	echo "FAIL: no sample with kernel frames, then user return addresses $*"
	exit 1
fi
# Where perf resolves user symbols, the addresses are in those functions
if grep -q " deferred_chain " "$tmpdir/merged"; then
	for f in "$1 deferred_mid " "$2 deferred_top " "$3 deferred_chain "; do
		if ! grep -q "$f" "$tmpdir/merged"; then
			echo "FAIL: no callchain entry '$f'"
			exit 1
		fi
	done
fi
if grep -q "CALLCHAIN_DEFERRED\|callchain deferred" "$tmpdir/merged"; then
	echo "FAIL: perf script shows deferred records although it merged them"
	exit 1
fi

if ! perf script -i "$data" -F comm,tid,ip,sym,dso --no-merge-callchains \
		>"$tmpdir/raw" 2>&1; then
	cat "$tmpdir/raw"
	echo "FAIL: perf script --no-merge-callchains"
	exit 1
fi
records=$(grep -c "PERF_RECORD_CALLCHAIN_DEFERRED cookie=0x[0-9a-f]* nr=[1-9]" "$tmpdir/raw")
cookie=$(sed -n 's/.*(user callchain deferred, cookie \(0x[0-9a-f]*\)).*/\1/p' \
	"$tmpdir/raw" | head -1)
if [ "$records" -eq 0 ] || [ -z "$cookie" ]; then
	head -60 "$tmpdir/raw"
	echo "FAIL: --no-merge-callchains: $records deferred records, sample cookie '$cookie'"
	exit 1
fi
if ! grep -q "PERF_RECORD_CALLCHAIN_DEFERRED cookie=$cookie " "$tmpdir/raw"; then
	grep "CALLCHAIN_DEFERRED" "$tmpdir/raw" | head
	echo "FAIL: no deferred record with the cookie $cookie of a sample"
	exit 1
fi
# The user functions are in the records only, not in the samples
if [ "$(stitched "$@" "$tmpdir/raw")" -ne 0 ]; then
	echo "FAIL: --no-merge-callchains still merged callchains"
	exit 1
fi

echo "PASS: $merged stitched samples, $records deferred records"
exit 0
