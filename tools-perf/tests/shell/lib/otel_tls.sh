# SPDX-License-Identifier: GPL-2.0
#
# What the otel_tls perf tests share, sourced by each of them.  The
# programs come from tools/perf/tests/otel_tls, built beside perf in the
# directory otel-tls (or $OTEL_TLS_BIN).  POSIX sh: it also runs under
# busybox.

bindir=${OTEL_TLS_BIN:-$(dirname "$(command -v perf)")/otel-tls}

# Skip the test unless every program and library it names is there
otel_tls_need() {
	for f in "$@"; do
		if [ ! -f "$bindir/$f" ]; then
			echo "Skip: $bindir/$f is missing" \
				"(tools/perf/tests/otel_tls/Makefile builds it)"
			exit 2
		fi
	done
}

tmpdir=$(mktemp -d /tmp/perf-test-otel-tls.XXXXXX) || exit 1
trap 'rm -rf "$tmpdir"' EXIT
data=$tmpdir/perf.data

# perf record writes the offset it computed with -v, signed as %+lld
signed() {
	case $1 in -*) echo "$1" ;; *) echo "+$1" ;; esac
}

# The log of a failed perf record: skip when the kernel lacks the feature
record_failed() {
	cat "$tmpdir/record.log"
	if grep -q "does not support PERF_SAMPLE_TLS_USER" "$tmpdir/record.log"; then
		echo "Skip: the kernel does not support PERF_SAMPLE_TLS_USER"
		exit 2
	fi
	echo "FAIL: perf record $*"
	exit 1
}

# The samples of COMM carry the planted ids: at least half of them (the
# others are taken before the writer publishes the context), and none other
check_ids() {
	comm=$1 trace=$2 span=$3
	# stderr apart: a warning written between two buffers of stdout would
	# cut a sample's line
	if ! perf script -i "$data" -F comm,tid,tls > "$tmpdir/script.out" \
			2> "$tmpdir/script.err"; then
		cat "$tmpdir/script.out" "$tmpdir/script.err"
		echo "FAIL: perf script"
		exit 1
	fi
	all=$(grep -c "^ *$comm " "$tmpdir/script.out")
	good=$(grep "^ *$comm " "$tmpdir/script.out" | grep -c "trace_id=$trace span_id=$span")
	nother=$(grep "^ *$comm " "$tmpdir/script.out" | grep "trace_id=" |
		grep -vc "trace_id=$trace span_id=$span")
	echo "$comm: $all samples, $good with trace_id=$trace span_id=$span, $nother other ids"
	# The first samples without them, to tell why
	grep "^ *$comm " "$tmpdir/script.out" | grep -v "trace_id=$trace span_id=$span" |
		head -3 | sed 's/^/  without: /'

	if [ "$good" -eq 0 ] || [ $((good * 2)) -lt "$all" ] || [ "$nother" -ne 0 ]; then
		grep "^ *$comm " "$tmpdir/script.out" | head -5
		echo "FAIL: the samples of $comm do not carry the planted ids"
		exit 1
	fi
}
