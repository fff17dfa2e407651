#!/bin/sh
# upstream_layout: Debian's perf 6.1 reads perf.data without new features
# SPDX-License-Identifier: GPL-2.0
#
# perf writes each attr of a perf.data file with attr.size bytes, and every
# perf refuses attrs larger than its own struct perf_event_attr.  This perf
# writes them at the smallest of upstream's sizes that holds their non-zero
# bytes, and at 272 bytes only when they use a field at
# PERF_ATTR_EXT_OFFSET.  Check, with an older perf installed as
# /usr/bin/perf (Debian bookworm's 6.1, whose attr is 128 bytes):
#
# - a cpu-clock recording that uses nothing of the series is read by it,
#   with the same samples as this perf reads;
# - a --tls-user recording is refused by it, for the reason documented in
#   Documentation/userspace-api/perf_abi_numbers.rst: its read_attr() finds
#   a 272-byte attr, "more recent and unsupported ABI (144 bytes extra)";
# - a --uevents and a --call-graph fp,defer recording make its perf script
#   warn about a reserved attr bit and stop, with an error, at the first
#   record type it does not know.

old=${OLD_PERF:-/usr/bin/perf}
if [ ! -x "$old" ]; then
	echo "Skip: no older perf at $old"
	exit 2
fi
if [ "$("$old" --version)" = "$(perf --version)" ]; then
	echo "Skip: $old is this perf"
	exit 2
fi
echo "older perf: $old, $("$old" --version)"

tmpdir=$(mktemp -d /tmp/perf-test-upstream-layout.XXXXXX) || exit 1
trap 'rm -rf "$tmpdir"' EXIT

if ! perf record -o "$tmpdir/plain.data" -e cpu-clock -c 1000000 -- \
		perf test -w noploop >"$tmpdir/record.log" 2>&1; then
	cat "$tmpdir/record.log"
	echo "FAIL: perf record"
	exit 1
fi
perf evlist -v -i "$tmpdir/plain.data" 2>/dev/null | head -n 1

# script NAME PERF: the samples PERF reads from NAME, one line each
script() {
	"$2" script -i "$tmpdir/$1" -F tid,time,event 2>"$tmpdir/script.err" |
		sed 's/^ *//; s/  */ /g' >"$tmpdir/$1.$3"
}

if ! script plain.data perf new || ! script plain.data "$old" old ||
   [ -s "$tmpdir/script.err" ]; then
	cat "$tmpdir/script.err"
	echo "FAIL: perf script"
	exit 1
fi
old_n=$(wc -l <"$tmpdir/plain.data.old")
if [ "$old_n" -eq 0 ] || ! cmp -s "$tmpdir/plain.data.new" "$tmpdir/plain.data.old"; then
	echo "FAIL: $old reads $old_n samples, this perf $(wc -l <"$tmpdir/plain.data.new")"
	exit 1
fi
echo "plain recording: $old reads the same $old_n samples as this perf"

if ! perf record -o "$tmpdir/tls.data" -e cpu-clock -c 1000000 \
		--tls-user=8,offset=-8 -- perf test -w noploop \
		>"$tmpdir/record.log" 2>&1; then
	cat "$tmpdir/record.log"
	echo "FAIL: perf record --tls-user"
	exit 1
fi
if "$old" report -v -i "$tmpdir/tls.data" --stdio >/dev/null 2>"$tmpdir/old.err"; then
	echo "FAIL: $old read a file with 272-byte attrs"
	exit 1
fi
if ! grep -q 'file uses a more recent and unsupported ABI (144 bytes extra)' "$tmpdir/old.err"; then
	cat "$tmpdir/old.err"
	echo "FAIL: $old refused the --tls-user file for another reason"
	exit 1
fi
echo "--tls-user recording: $old says: $(grep -m1 'unsupported ABI' "$tmpdir/old.err")"

# old_warns NAME WHAT: NAME sets attr flag bits that are reserved for the
# older perf and holds a record type it does not know; its perf script
# warns about both and stops, with an error, at the first such record.
old_warns() {
	if "$old" script -i "$tmpdir/$1" >/dev/null 2>"$tmpdir/old.err"; then
		echo "FAIL: $old read the $2 records of $1 without an error"
		exit 1
	fi
	if ! grep -q 'Reserved bits are set unexpectedly' "$tmpdir/old.err" ||
	   ! grep -q 'Found [0-9]* unknown events' "$tmpdir/old.err"; then
		cat "$tmpdir/old.err"
		echo "FAIL: $old refused $1 for another reason"
		exit 1
	fi
	echo "$1: $old says: $(grep -m1 'unknown events' "$tmpdir/old.err")"
}

# --uevents sets flag bit 63 and writes PERF_RECORD_UEVENT (63).
if ! perf record -o "$tmpdir/uevent.data" -e cpu-clock -c 1000000 --uevents -- \
		perf test -w uevent >"$tmpdir/record.log" 2>&1; then
	cat "$tmpdir/record.log"
	echo "FAIL: perf record --uevents"
	exit 1
fi
old_warns uevent.data PERF_RECORD_UEVENT

# --call-graph fp,defer sets defer_callchain and defer_output (bits 38 and
# 39, upstream's since 6.19) and writes PERF_RECORD_CALLCHAIN_DEFERRED (22).
if ! perf record -o "$tmpdir/defer.data" -e cpu-clock -c 1000000 \
		--call-graph fp,defer -- perf test -w noploop \
		>"$tmpdir/record.log" 2>&1; then
	cat "$tmpdir/record.log"
	echo "FAIL: perf record --call-graph fp,defer"
	exit 1
fi
old_warns defer.data PERF_RECORD_CALLCHAIN_DEFERRED
exit 0
