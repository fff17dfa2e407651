#!/bin/sh
# upstream_layout: AUX area data of upstream's VPA_DTL type is refused
# SPDX-License-Identifier: GPL-2.0
#
# perf.data tags AUX area data with an auxtrace type.  sw_aux's is
# 0x53574158, out of upstream's sequence, where 7 is powerpc's
# PERF_AUXTRACE_VPA_DTL.  Record a sw_aux trace and check that perf decodes
# it; then give the file type 7, as a VPA DTL recording has, and check that
# perf refuses it as an AUX type it does not support instead of decoding it
# as sw_aux.  POSIX sh: it also runs under busybox.

if [ ! -d /sys/bus/event_source/devices/sw_aux ]; then
	echo "Skip: no sw_aux PMU (CONFIG_PERF_SW_AUX)"
	exit 2
fi

tmpdir=$(mktemp -d /tmp/perf-test-upstream-layout.XXXXXX) || exit 1
trap 'rm -rf "$tmpdir"' EXIT

if ! perf record -o "$tmpdir/sw.data" -e sw_aux// -- perf test -w noploop \
		>"$tmpdir/record.log" 2>&1; then
	cat "$tmpdir/record.log"
	echo "FAIL: perf record -e sw_aux//"
	exit 1
fi

# The file offset of the PERF_RECORD_AUXTRACE_INFO record (type 70), from
# the raw dump's "OFFSET@FILE [SIZE]: event: 70" line; its auxtrace type is
# the u32 after the 8-byte record header.
line=$(perf report -D -i "$tmpdir/sw.data" 2>/dev/null | grep -m1 ': event: 70$')
case $line in
0x*@*) offset=$(( ${line%%@*} + 8 )) ;;
*)
	echo "FAIL: no PERF_RECORD_AUXTRACE_INFO in the sw_aux recording"
	exit 1
	;;
esac
auxtrace_type() {
	od -A n -t u4 -j $offset -N 4 "$1" | tr -d ' '
}

type=$(auxtrace_type "$tmpdir/sw.data")
if [ "$type" != 1398227288 ]; then
	echo "FAIL: the sw_aux recording has auxtrace type $type, not 0x53574158"
	exit 1
fi
if ! perf script -i "$tmpdir/sw.data" >"$tmpdir/sw.out" 2>"$tmpdir/sw.err" ||
   ! grep -q 'sw_aux-tick' "$tmpdir/sw.out"; then
	cat "$tmpdir/sw.err"
	echo "FAIL: perf script does not decode the sw_aux trace"
	exit 1
fi

cp "$tmpdir/sw.data" "$tmpdir/vpa.data"
printf '\007\000\000\000' |
	dd of="$tmpdir/vpa.data" bs=1 seek=$offset conv=notrunc 2>/dev/null
type=$(auxtrace_type "$tmpdir/vpa.data")
if [ "$type" != 7 ]; then
	echo "FAIL: the type was not changed to 7: $type"
	exit 1
fi

if perf script -i "$tmpdir/vpa.data" >"$tmpdir/vpa.out" 2>"$tmpdir/vpa.err"; then
	echo "FAIL: perf script accepted AUX area data of type 7"
	exit 1
fi
if grep -q 'sw_aux' "$tmpdir/vpa.out"; then
	echo "FAIL: type 7 data decoded as sw_aux"
	exit 1
fi
if ! grep -q 'AUX area data of unsupported type 7$' "$tmpdir/vpa.err"; then
	cat "$tmpdir/vpa.err"
	echo "FAIL: no 'unsupported type 7' error"
	exit 1
fi
echo "type 7 refused: $(grep 'unsupported type' "$tmpdir/vpa.err")"
exit 0
