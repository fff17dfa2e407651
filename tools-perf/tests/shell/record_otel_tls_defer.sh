#!/bin/sh
# perf record --tls-user=otel,defer merges deferred TLS reads
# SPDX-License-Identifier: GPL-2.0
#
# Records the otel_tls workload, which publishes a known trace and span id
# and spends its time in getrandom() system calls, with the TLS read on
# the way back to user space (PERF_TLS_USER_DEFER).  The samples carry a
# cookie, the bytes come in PERF_RECORD_TLS_USER_DEFERRED records, and
# perf script must show the planted ids in the samples as if they had been
# read when the sample was taken, samples taken in the kernel included;
# with --no-merge-callchains, the samples' cookies and the records.  A
# lost record leaves its samples without bytes, counted, and a limit of 1
# byte on what perf holds lets no sample wait, counted.  Then the same
# with --call-graph fp,defer too: both deferred parts merged.
# POSIX sh: it also runs under busybox.

trace_id=4bf92f3577b34da6a3ce929d0e0e4736
span_id=00f067aa0ba902b7
ids="trace_id=$trace_id span_id=$span_id"

tmpdir=$(mktemp -d /tmp/perf-test-tls-defer.XXXXXX) || exit 1
trap 'rm -rf "$tmpdir"' EXIT
data=$tmpdir/perf.data

if ! offset=$(perf test -w otel_tls offset 2>"$tmpdir/offset.err"); then
	cat "$tmpdir/offset.err"
	echo "Skip: the otel_tls workload has no thread pointer on this arch"
	exit 2
fi

record() {
	if ! perf record -o "$data" -e cpu-clock -c 1000000 "$@" \
			-- perf test -w otel_tls 2 syscall >"$tmpdir/record.log" 2>&1; then
		cat "$tmpdir/record.log"
		if grep -q -e "does not support PERF_SAMPLE_TLS_USER" \
				-e "does not support deferred" -e "lacks deferred TLS" \
				-e "without deferred user" "$tmpdir/record.log"; then
			echo "Skip: the kernel does not support deferred TLS reads"
			exit 2
		fi
		echo "FAIL: perf record $*"
		exit 1
	fi
}

perf_home=$HOME
script() {
	out=$1
	shift
	if ! HOME=$perf_home perf script -i "$data" "$@" >"$out" 2>"$out.err"; then
		cat "$out" "$out.err"
		echo "FAIL: perf script $*"
		exit 1
	fi
}

record --tls-user=otel,offset="$offset",defer

# The raw records: perf report -D shows the samples' cookies and the records
if ! perf report -i "$data" -D >"$tmpdir/dump" 2>&1; then
	tail -20 "$tmpdir/dump"
	echo "FAIL: perf report -D"
	exit 1
fi
nsamples=$(grep -c "^\.\.\. tls: deferred, cookie: 0x" "$tmpdir/dump")
# Samples taken in user mode read at once, cookie 0 and the dump
at_once=$(grep -c "^\.\.\. tls: size 32, dyn_size \(28\|32\)\$" "$tmpdir/dump")
# 32 bytes asked, the 28 of the record without attributes read: otel's
# length field, attrs_data_size, cuts the copy (32 on kernels without it)
rec="PERF_RECORD_TLS_USER_DEFERRED cookie=0x[0-9a-f]* id=[0-9]* size=32 dyn_size"
nrecords=$(grep -c -e "$rec=28\$" -e "$rec=32\$" "$tmpdir/dump")
echo "perf report -D: $nsamples deferred samples, $nrecords records of the 28-byte record," \
	"$at_once samples read at once"
if [ "$nsamples" -eq 0 ] || [ "$nrecords" -eq 0 ] || [ "$at_once" -eq 0 ]; then
	grep -m 10 "tls\|TLS_USER" "$tmpdir/dump"
	echo "FAIL: no deferred samples, no records or no samples read at once"
	exit 1
fi
# One read per kernel entry and event, however many samples it served
if [ "$nrecords" -gt "$nsamples" ]; then
	echo "FAIL: more records ($nrecords) than deferred samples ($nsamples)"
	exit 1
fi

# Merged: the ids in the samples, in kernel samples too, and nothing else
script "$tmpdir/merged" -F comm,tid,ip,dso,tls
all=$(grep -c " tls:" "$tmpdir/merged")
good=$(grep -c "$ids" "$tmpdir/merged")
kernel=$(grep "kernel\.kallsyms" "$tmpdir/merged" | grep -c "$ids")
nother=$(grep "trace_id=" "$tmpdir/merged" | grep -vc "$ids")
echo "merged: $all samples, $good with the planted ids," \
	"$kernel of them in the kernel, $nother other ids"
if [ "$good" -eq 0 ] || [ $((good * 2)) -lt "$all" ] || [ "$kernel" -eq 0 ] ||
		[ "$nother" -ne 0 ]; then
	head -20 "$tmpdir/merged"
	echo "FAIL: the samples do not carry the planted ids"
	exit 1
fi
if grep -q "deferred\|TLS_USER_DEFERRED" "$tmpdir/merged"; then
	grep -m 5 "deferred\|TLS_USER_DEFERRED" "$tmpdir/merged"
	echo "FAIL: perf script shows deferred TLS although it merged it"
	exit 1
fi

# Raw: the samples' cookies, and a record with the cookie of a sample
script "$tmpdir/raw" -F comm,tid,tls --no-merge-callchains
cookie=$(sed -n 's/.*tls: deferred, cookie \(0x[0-9a-f]*\).*/\1/p' "$tmpdir/raw" | head -1)
if [ -z "$cookie" ] || ! grep -q "PERF_RECORD_TLS_USER_DEFERRED cookie=$cookie " "$tmpdir/raw"; then
	head -20 "$tmpdir/raw"
	echo "FAIL: --no-merge-callchains: no record with the cookie '$cookie' of a sample"
	exit 1
fi
# The records decode as the samples would
if ! grep -A1 "PERF_RECORD_TLS_USER_DEFERRED" "$tmpdir/raw" | grep -q "$ids"; then
	grep -m 4 -A1 "PERF_RECORD_TLS_USER_DEFERRED" "$tmpdir/raw"
	echo "FAIL: --no-merge-callchains: the records do not show the planted ids"
	exit 1
fi

# The count in a warning of perf script
warned() {
	n=$(sed -n "s/^\([0-9]*\) samples $1.*/\1/p" "$2" | head -1)
	echo "${n:-0}"
}
plain_unmatched=$(warned "got no deferred TLS record" "$tmpdir/merged.err")

# A record lost: make the one in the middle a PERF_RECORD_SWITCH (type 14),
# same header and sample_id, which perf passes over
perf report -D -i "$data" 2>/dev/null |
	sed -n 's/^\(0x[0-9a-f]*\)[@ ].*event: 62$/\1/p' >"$tmpdir/records"
nr=$(wc -l <"$tmpdir/records")
off=$(sed -n "$((nr / 2))p" "$tmpdir/records")
cp "$data" "$tmpdir/lost.data"
printf '\016' | dd of="$tmpdir/lost.data" bs=1 seek=$((off)) count=1 conv=notrunc 2>/dev/null
data_plain=$data
data=$tmpdir/lost.data
script "$tmpdir/lost" -F comm,tid,ip,dso,tls
lost=$(($(warned "got no deferred TLS record" "$tmpdir/lost.err") - plain_unmatched))
lost_good=$(grep -c "$ids" "$tmpdir/lost")
echo "lost record: $lost more samples without bytes, $lost_good with the ids"
# perf script says why, per process, at the end
if ! grep -q "^tls:   pid [0-9]* (.*): .*[1-9][0-9]* cookie without record" "$tmpdir/lost.err"; then
	cat "$tmpdir/lost.err"
	echo "FAIL: a lost record: perf script does not count the samples without one"
	exit 1
fi
if [ "$lost" -lt 1 ] || [ "$lost_good" -lt $((good - lost)) ]; then
	cat "$tmpdir/lost.err"
	echo "FAIL: a lost record: $lost more samples without bytes, $lost_good of $good with ids"
	exit 1
fi
data=$data_plain

# A limit of 1 byte on what waits: no sample waits, and only those that
# need not wait get bytes: read at once, or taken after their record
printf '[call-graph]\n\tdefer-queue-size = 1\n' >"$tmpdir/.perfconfig"
perf_home=$tmpdir
script "$tmpdir/limit" -F comm,tid,ip,dso,tls
perf_home=$HOME
over=$(warned "waited for their deferred TLS record past the" "$tmpdir/limit.err")
limit_good=$(grep -c "$ids" "$tmpdir/limit")
echo "limit: $over samples past the limit, $limit_good with the ids"
if [ $((over * 2)) -lt "$nsamples" ] || [ $((over + limit_good)) -gt "$all" ]; then
	cat "$tmpdir/limit.err"
	echo "FAIL: a limit of 1 byte: $over samples past it, $limit_good with ids"
	exit 1
fi

# With deferred user callchains too: both merged into the same samples
record --tls-user=otel,offset="$offset",defer --call-graph fp,defer
script "$tmpdir/both" -F comm,tid,ip,dso,tls
# A sample is a line, its callchain (tab-indented), then its tls field on
# a line of its own
both=$(awk -v ids="$ids" '
	/^\t/ {
		if (/kernel\.kallsyms/) k = 1
		if (/perf\)$/) u = 1
		next
	}
	/^ tls:/ { if (k && u && index($0, ids)) good++ }
	{ k = 0; u = 0 }
	END { print good + 0 }' "$tmpdir/both")
echo "with fp,defer: $both samples with kernel frames, user frames in perf and the ids"
if [ "$both" -eq 0 ] || grep -q "deferred" "$tmpdir/both"; then
	head -40 "$tmpdir/both"
	echo "FAIL: the deferred callchains and TLS are not both merged"
	exit 1
fi

echo "PASS: $good of $all samples with the ids ($kernel in the kernel)," \
	"$nrecords records for $nsamples deferred samples, $both with both parts"
exit 0
