#!/bin/sh
# perf data convert --to-pprof, read back by pprof (otel_tls)
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2154 # bindir, tmpdir, data: set by lib/otel_tls.sh
#
# Two programs, one after the other, each with its own OpenTelemetry ids,
# the first with attributes: perf data convert --to-pprof exports the
# samples, Google's pprof reads the profile back, and the samples of each
# trace_id/span_id label are as many as perf report counts under those ids,
# those of each thread label as many as perf script shows with that comm.
# Once with callchains, once without; then the attributes by the names of
# the process context (OTEP 4719), the index for a key it does not name.
#
# pprof is $PPROF, else pprof beside perf, in ../pprof-ARCH beside perf's
# directory (build/pprof-ARCH of scripts/build-pprof.sh) or in PATH.
# lib/otel_tls.sh sets the test up and says where the programs come from.

trace_a=4bf92f3577b34da6a3ce929d0e0e4736
span_a=00f067aa0ba902b7
trace_b=0af7651916cd43dd8448eb211c80319c
span_b=b7ad6b7169203331
# 1="GET", 2="/api/v1", 1="POST": attributes 1=POST, 2=/api/v1
attrs=010347455402072f6170692f76310104504f5354

# shellcheck source=lib/otel_tls.sh
. "$(dirname "$0")/lib/otel_tls.sh"
otel_tls_need otel_exe

perfdir=$(dirname "$(command -v perf)")
case $(uname -m) in aarch64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
pprof=${PPROF:-}
if [ -z "$pprof" ]; then
	for p in "$perfdir/pprof" "$perfdir/../pprof-$arch/pprof" "$(command -v pprof)"; do
		if [ -n "$p" ] && [ -x "$p" ]; then
			pprof=$p
			break
		fi
	done
fi
if [ -z "$pprof" ] || [ ! -x "$pprof" ]; then
	echo "Skip: no pprof (set PPROF, or build it: scripts/build-pprof.sh, or go build" \
		"github.com/google/pprof from golang-github-google-pprof-dev)"
	exit 2
fi
export PPROF_TMPDIR="$tmpdir"

# "COUNT TRACE_ID SPAN_ID" per OpenTelemetry context of the pprof samples
# ("-" without one), then "COUNT comm=THREAD" per thread label, sorted
pprof_counts() {
	"$pprof" -raw -symbolize=none "$1" > "$tmpdir/raw.out" 2>&1 || return 1
	awk '
	function flush() {
		if (n == "")
			return
		ids[trace " " span] += n
		if (thread != "")
			comm[thread] += n
		n = ""
	}
	/^Samples:/ { in_samples = 1; next }
	/^[A-Z][a-z]*:/ { flush(); in_samples = 0; next }
	!in_samples { next }
	/^ *[0-9]+ +[0-9]+: / { flush(); n = $1; trace = "-"; span = "-"; thread = ""; next }
	{
		for (i = 1; i <= NF; i++) {
			if ($i ~ /^trace_id:\[/)
				trace = substr($i, 11, length($i) - 11)
			else if ($i ~ /^span_id:\[/)
				span = substr($i, 10, length($i) - 10)
			else if ($i ~ /^thread:\[/)
				thread = substr($i, 9, length($i) - 9)
		}
	}
	END {
		flush()
		for (k in ids)
			print ids[k], k
		for (k in comm)
			print comm[k], "comm=" k
	}' "$tmpdir/raw.out" | sort
}

# The same from perf report, and perf script for the comms (perf report
# cuts a comm to the length of the thread's last one: perf-exec, otel_exe)
perf_counts() {
	{
		perf report -i "$data" --stdio -g none -s trace_id,span_id \
			-F sample,trace_id,span_id 2> /dev/null |
			awk '!/^#/ && NF == 3 { print $1, $2, $3 }'
		perf script -i "$data" -F comm 2> /dev/null |
			awk '{ n[$1]++ } END { for (c in n) print n[c], "comm=" c }'
	} | sort
}

# Convert $data, compare the counts; $1 names the recording
check_pprof() {
	if ! perf data convert -i "$data" --force --to-pprof "$tmpdir/profile.pb.gz" \
			> "$tmpdir/convert.log" 2>&1; then
		cat "$tmpdir/convert.log"
		echo "FAIL: perf data convert --to-pprof ($1)"
		exit 1
	fi
	if ! pprof_counts "$tmpdir/profile.pb.gz" > "$tmpdir/pprof.counts"; then
		cat "$tmpdir/raw.out"
		echo "FAIL: pprof cannot read the profile ($1)"
		exit 1
	fi
	perf_counts > "$tmpdir/perf.counts"
	echo "$1: samples per trace_id span_id and per thread, perf | pprof:"
	paste "$tmpdir/perf.counts" "$tmpdir/pprof.counts" | sed 's/^/  /'
	if [ ! -s "$tmpdir/perf.counts" ] ||
			! cmp -s "$tmpdir/perf.counts" "$tmpdir/pprof.counts"; then
		echo "FAIL: pprof does not count the samples as perf report does ($1)"
		exit 1
	fi
	for s in "$trace_a $span_a" "$trace_b $span_b"; do
		if ! grep -q " $s\$" "$tmpdir/pprof.counts"; then
			echo "FAIL: no pprof samples with trace_id span_id $s ($1)"
			exit 1
		fi
	done
	if ! grep -q " comm=otel_exe\$" "$tmpdir/pprof.counts" ||
			! grep -q "pid:\[[0-9]*\] tid:\[[0-9]*\]" "$tmpdir/raw.out"; then
		echo "FAIL: no thread, pid and tid labels ($1)"
		exit 1
	fi
}

run="$bindir/otel_exe 1 $trace_a $span_a $attrs; $bindir/otel_exe 1 $trace_b $span_b"

perf record -o "$data" -g -e cpu-clock -c 1000000 --tls-user=otel,size=64 \
	-- sh -c "$run" > "$tmpdir/record.log" 2>&1 ||
	record_failed -g --tls-user=otel,size=64 -- otel_exe
check_pprof "with callchains"
# The attributes of the first program, on its samples
if ! grep "span_id:\[$span_a\]" "$tmpdir/raw.out" |
		grep -q "otel.attr.1:\[POST\] otel.attr.2:\[/api/v1\]"; then
	grep -m 3 "span_id" "$tmpdir/raw.out"
	echo "FAIL: no otel.attr.1:[POST] otel.attr.2:[/api/v1] labels"
	exit 1
fi
if grep "span_id:\[$span_b\]" "$tmpdir/raw.out" | grep -q "otel.attr"; then
	echo "FAIL: attribute labels on the samples of the second program"
	exit 1
fi

# Key 1 named by the process context of the program (OTEP 4719), not key 2
OTEL_APP_CTX=memfd OTEL_APP_KEYS=http.method,http.route \
perf record -o "$data" -e cpu-clock -c 1000000 --tls-user=otel,size=64 \
	-- "$bindir/otel_exe" 1 $trace_a $span_a $attrs > "$tmpdir/record.log" 2>&1 ||
	record_failed --tls-user=otel,size=64 -- otel_exe with OTEL_APP_CTX=memfd
if ! perf data convert -i "$data" --force --to-pprof "$tmpdir/profile.pb.gz" \
		> "$tmpdir/convert.log" 2>&1 ||
		! "$pprof" -raw -symbolize=none "$tmpdir/profile.pb.gz" \
		> "$tmpdir/raw.out" 2>&1; then
	cat "$tmpdir/convert.log" "$tmpdir/raw.out"
	echo "FAIL: perf data convert --to-pprof or pprof (named attributes)"
	exit 1
fi
if ! grep "span_id:\[$span_a\]" "$tmpdir/raw.out" |
		grep -q "http.route:\[POST\] otel.attr.2:\[/api/v1\]"; then
	grep -m 3 "span_id" "$tmpdir/raw.out"
	echo "FAIL: no http.route:[POST] otel.attr.2:[/api/v1] labels"
	exit 1
fi

perf record -o "$data" -e task-clock -c 1000000 --tls-user=otel \
	-- sh -c "$run" > "$tmpdir/record.log" 2>&1 ||
	record_failed --tls-user=otel -- otel_exe
check_pprof "without callchains"

echo "PASS: pprof ($pprof) counts the samples of each span and thread as perf does"
exit 0
