#!/bin/sh
# upstream_layout: attrs in pipe mode keep their size and ids
# SPDX-License-Identifier: GPL-2.0
#
# A perf.data file of this perf holds its attrs at the smallest of
# upstream's attr sizes that holds them (64 bytes for a plain cpu-clock
# recording), and a pipe's PERF_RECORD_HEADER_ATTR is the attr's own size
# of bytes followed by its ids.  Check that perf inject, from such a file to
# a pipe, writes each attr record at the attr's size with exactly the
# file's ids (a record sized for the whole structure would add zero ids),
# and that the pipe gives the same samples.
# With an older perf installed as /usr/bin/perf, check that it reads a pipe
# of this perf with the same samples too.  POSIX sh: it also runs under
# busybox.

tmpdir=$(mktemp -d /tmp/perf-test-upstream-layout.XXXXXX) || exit 1
trap 'rm -rf "$tmpdir"' EXIT

if ! perf record -o "$tmpdir/file.data" -e cpu-clock -c 1000000 -- \
		perf test -w noploop >"$tmpdir/record.log" 2>&1; then
	cat "$tmpdir/record.log"
	echo "FAIL: perf record"
	exit 1
fi
if ! perf inject -i "$tmpdir/file.data" -o - >"$tmpdir/pipe.data" 2>"$tmpdir/inject.err"; then
	cat "$tmpdir/inject.err"
	echo "FAIL: perf inject to a pipe"
	exit 1
fi

# ids FILE: the "id = { ... }" list of each event of FILE's header
ids() {
	perf report --header-only -i "$tmpdir/$1" 2>/dev/null |
		sed -n 's/^# event : .* id = { \([^}]*\) }.*/\1/p'
}
ids file.data >"$tmpdir/file.ids"
ids pipe.data >"$tmpdir/pipe.ids"
if [ ! -s "$tmpdir/file.ids" ] || ! cmp -s "$tmpdir/file.ids" "$tmpdir/pipe.ids"; then
	echo "file ids: $(cat "$tmpdir/file.ids")"
	echo "pipe ids: $(cat "$tmpdir/pipe.ids")"
	echo "FAIL: perf inject changed the ids of an attr"
	exit 1
fi
echo "ids in the file and in the pipe: $(cat "$tmpdir/file.ids")"

# The ids printed for a pipe come from its EVENT_DESC feature: check the
# PERF_RECORD_HEADER_ATTR record (64) itself, the attr's size of bytes and
# one u64 per id behind an 8-byte header.
attr_size=$(perf evlist -v -i "$tmpdir/file.data" 2>/dev/null |
	sed -n '1s/.* size: \([0-9]*\),.*/\1/p')
nr_ids=$(tr ',' '\n' <"$tmpdir/file.ids" | grep -c '[0-9]')
rec_size=$(perf report -D -i "$tmpdir/pipe.data" 2>/dev/null |
	sed -n 's/^[0-9]*@pipe \[\(0x[0-9a-f]*\)\]: event: 64$/\1/p' | head -n 1)
if [ -z "$attr_size" ] || [ -z "$rec_size" ] ||
   [ "$((rec_size))" -ne $((8 + attr_size + 8 * nr_ids)) ]; then
	echo "FAIL: the pipe's attr record is ${rec_size:-missing} bytes," \
		"not 8 + $attr_size + 8 * $nr_ids"
	exit 1
fi
echo "the pipe's attr record: $((rec_size)) bytes = 8 + $attr_size + 8 * $nr_ids"

# script PERF NAME: the samples PERF reads from NAME, one line each
script() {
	"$1" script -i "$tmpdir/$2" -F tid,time,event 2>"$tmpdir/script.err" |
		sed 's/^ *//; s/  */ /g' >"$tmpdir/$2.$3"
}
script perf file.data new
script perf pipe.data new
n=$(wc -l <"$tmpdir/file.data.new")
if [ "$n" -eq 0 ] || ! cmp -s "$tmpdir/file.data.new" "$tmpdir/pipe.data.new"; then
	echo "FAIL: the pipe has $(wc -l <"$tmpdir/pipe.data.new") samples, the file $n"
	exit 1
fi
echo "the pipe has the file's $n samples"

old=${OLD_PERF:-/usr/bin/perf}
if [ ! -x "$old" ] || [ "$("$old" --version)" = "$(perf --version)" ]; then
	echo "no older perf at $old: pipe checks with this perf only"
	exit 0
fi
if ! perf record -o - -e cpu-clock -c 1000000 -- perf test -w noploop \
		>"$tmpdir/rec.pipe" 2>"$tmpdir/record.log"; then
	cat "$tmpdir/record.log"
	echo "FAIL: perf record -o -"
	exit 1
fi
script perf rec.pipe new
if ! script "$old" rec.pipe old || [ -s "$tmpdir/script.err" ]; then
	cat "$tmpdir/script.err"
	echo "FAIL: $old script of a pipe of this perf"
	exit 1
fi
n=$(wc -l <"$tmpdir/rec.pipe.new")
if [ "$n" -eq 0 ] || ! cmp -s "$tmpdir/rec.pipe.new" "$tmpdir/rec.pipe.old"; then
	echo "FAIL: $old reads $(wc -l <"$tmpdir/rec.pipe.old") samples of the pipe, this perf $n"
	exit 1
fi
echo "$old ($("$old" --version)) reads the same $n samples of a pipe of this perf"
exit 0
