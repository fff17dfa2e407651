#!/bin/sh
# perf names OpenTelemetry attributes from the process context (otel_tls)
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2154 # bindir, tmpdir, data: set by lib/otel_tls.sh
#
# otel_exe publishes its process context (OTEP 4719) naming key 0
# http.method and key 1 http.route, in a memfd mapping, then (if the
# kernel names anonymous mappings) in an [anon:OTEL_CTX] one.  perf record
# keeps the names in the file: perf report --header-only lists them, perf
# script prints the attributes by name, and perf report sorts by
# otel.http.route and otel.http.method with as many samples as perf script
# shows with the planted values.  A context updated while perf records is
# read again, and the update names the keys.  A process without a process
# context keeps the key indexes, and otel.1 sorts by index.
# lib/otel_tls.sh sets the test up and says where the programs come from.

trace_id=4bf92f3577b34da6a3ce929d0e0e4736
span_id=00f067aa0ba902b7
# 0="GET", 1="/api/v1/user"
attrs=0003474554010c2f6170692f76312f75736572

# shellcheck source=lib/otel_tls.sh
. "$(dirname "$0")/lib/otel_tls.sh"
otel_tls_need otel_exe

# $1: memfd or anon; the remaining arguments: what the writer must print
record_named() {
	OTEL_APP_CTX=$1 OTEL_APP_KEYS=http.method,http.route \
	perf record -o "$data" -e cpu-clock -c 1000000 --tls-user=otel,size=64 \
		-- "$bindir/otel_exe" 1 $trace_id $span_id $attrs > "$tmpdir/record.log" 2>&1 ||
		record_failed --tls-user=otel,size=64 -- otel_exe with OTEL_APP_CTX=$1
}

check_named() {
	perf report -i "$data" --header-only > "$tmpdir/header.out" 2>&1
	if ! grep -q "^#   pid [0-9]*, schema tlsdesc_v1_dev: 0=http.method 1=http.route\$" \
			"$tmpdir/header.out"; then
		grep -A3 "OpenTelemetry" "$tmpdir/header.out"
		echo "FAIL ($1): no process context with the two key names in the header"
		exit 1
	fi
	check_ids otel_exe $trace_id $span_id
	want='attrs: http.method="GET" http.route="/api/v1/user"'
	named=$(grep -c "span_id=$span_id $want\$" "$tmpdir/script.out")
	if [ "$named" -eq 0 ]; then
		grep -m 3 "trace_id=" "$tmpdir/script.out"
		echo "FAIL ($1): perf script does not name the attributes"
		exit 1
	fi
	perf report -i "$data" --stdio -n --comm otel_exe \
		-s otel.http.route,otel.http.method > "$tmpdir/report.out" 2>&1
	if ! grep -q "Samples  *http.route  *http.method" "$tmpdir/report.out"; then
		cat "$tmpdir/report.out"
		echo "FAIL ($1): no http.route and http.method columns"
		exit 1
	fi
	line=$(grep "%  *[0-9]*  */api/v1/user  *GET *\$" "$tmpdir/report.out")
	n=$(echo "$line" | awk '{ print $2 }')
	if [ "$n" != "$named" ]; then
		cat "$tmpdir/report.out"
		echo "FAIL ($1): perf report has '$line', perf script $named such samples"
		exit 1
	fi
	echo "$1: $named samples with http.route=/api/v1/user http.method=GET"
}

record_named memfd
check_named memfd

# Without CONFIG_ANON_VMA_NAME the mapping has no name for perf to find
record_named anon
if grep -q "the kernel did not name the mapping" "$tmpdir/record.log"; then
	echo "anon: skipped, the kernel does not name anonymous mappings (CONFIG_ANON_VMA_NAME)"
else
	check_named anon
fi

# An update half a second in (OTEP 4719's updating protocol): perf reads
# the context again every second, and the update names the keys
OTEL_APP_KEYS=http.method,http.route OTEL_APP_KEYS_LATER=verb,route \
perf record -o "$data" -e cpu-clock -c 1000000 --tls-user=otel,size=64 \
	-- "$bindir/otel_exe" 2 $trace_id $span_id $attrs > "$tmpdir/record.log" 2>&1 ||
	record_failed --tls-user=otel,size=64 -- otel_exe with OTEL_APP_KEYS_LATER
perf report -i "$data" --header-only > "$tmpdir/header.out" 2>&1
if ! grep -q "^#   pid [0-9]*, schema tlsdesc_v1_dev: 0=verb 1=route\$" "$tmpdir/header.out"; then
	grep -A3 "OpenTelemetry" "$tmpdir/header.out"
	echo "FAIL: the updated process context is not the one kept"
	exit 1
fi
check_ids otel_exe $trace_id $span_id
want='attrs: verb="GET" route="/api/v1/user"'
if ! grep -q "span_id=$span_id $want\$" "$tmpdir/script.out"; then
	grep -m 3 "trace_id=" "$tmpdir/script.out"
	echo "FAIL: perf script does not name the attributes by the updated context"
	exit 1
fi
echo "update: the updated context names the keys"

# No process context: the indexes, and otel.1 by index
perf record -o "$data" -e cpu-clock -c 1000000 --tls-user=otel,size=64 \
	-- "$bindir/otel_exe" 1 $trace_id $span_id $attrs > "$tmpdir/record.log" 2>&1 ||
	record_failed --tls-user=otel,size=64 -- otel_exe
check_ids otel_exe $trace_id $span_id
if ! grep -q "span_id=$span_id attrs: 0=\"GET\" 1=\"/api/v1/user\"\$" "$tmpdir/script.out"; then
	grep -m 3 "trace_id=" "$tmpdir/script.out"
	echo "FAIL: attributes of a process without a process context not by index"
	exit 1
fi
if ! perf report -i "$data" --stdio --comm otel_exe -s otel.1 2>&1 |
		grep -q "%  */api/v1/user *\$"; then
	echo "FAIL: perf report -s otel.1"
	exit 1
fi
echo "PASS: attribute names from the process context"
exit 0
