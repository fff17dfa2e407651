#!/bin/sh
# perf top --call-graph fp,defer merges deferred user callchains
# SPDX-License-Identifier: GPL-2.0
#
# Runs perf top --stdio --children on the deferred_chain workload, which
# spends its time in getrandom() system calls made from deferred_top ->
# deferred_mid -> deferred_leaf.  The samples' ips are in the kernel, so
# the user functions get their children's overhead only from the user
# part of the callchains, which comes in the deferred records: they must
# be in the output.  Where perf does not resolve user symbols (the static
# perf without libelf), the check is that perf top runs and shows the
# kernel part.  POSIX sh: it also runs under busybox.

tmpdir=$(mktemp -d /tmp/perf-test-top-defer.XXXXXX) || exit 1
wpid=
cleanup() {
	[ -n "$wpid" ] && kill "$wpid" 2>/dev/null
	rm -rf "$tmpdir"
}
trap cleanup EXIT

perf test -w deferred_chain 30 >"$tmpdir/workload.log" 2>&1 &
wpid=$!
sleep 1

# perf top reads its keys from stdin: give it one that stays open and empty
sleep 12 | timeout -s INT 10 perf top --stdio --children -d 2 -e cpu-clock \
	-c 500000 --call-graph fp,defer -p "$wpid" >"$tmpdir/top" 2>"$tmpdir/err"
if grep -q "does not support deferred callchains" "$tmpdir/top" "$tmpdir/err"; then
	echo "Skip: the kernel does not support deferred callchains"
	exit 2
fi
if grep -q "Unknown --call-graph\|Invalid\|Usage:" "$tmpdir/err"; then
	cat "$tmpdir/err"
	echo "FAIL: perf top refused --call-graph fp,defer"
	exit 1
fi
if ! grep -q "\[k\]" "$tmpdir/top"; then
	tail -40 "$tmpdir/top"
	cat "$tmpdir/err"
	echo "FAIL: perf top showed no kernel samples"
	exit 1
fi
# deferred_chain is the workload function that calls deferred_top
if grep -q "deferred_chain\|deferred_leaf" "$tmpdir/top" ||
   perf version --build-options 2>/dev/null | grep -q "libelf: \[ on"; then
	for f in deferred_leaf deferred_mid deferred_top; do
		if ! grep -q "\[\.\] $f" "$tmpdir/top"; then
			tail -60 "$tmpdir/top"
			echo "FAIL: no perf top entry for $f, which only merged callchains have"
			exit 1
		fi
	done
	echo "PASS: perf top shows the user functions of merged callchains"
	exit 0
fi
echo "PASS: perf top --call-graph fp,defer runs (user symbols not resolved)"
exit 0
