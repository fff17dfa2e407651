#!/bin/sh
# Runs inside a guest: every kselftest program in $SELFTESTS, every perf
# tool test in $PERF_TESTS and ABI_STRESS_SECONDS (default 60) of the ABI
# stress program $STRESS_DIR/abi_stress, one result line per test case in
# /tmp/out/results.tsv ("suite<TAB>test<TAB>result") and one line per skip
# with its reason in /tmp/out/skips.tsv.  POSIX sh: it runs under busybox.
#
#   guest-tests.sh [FILTER]   run only tests whose name contains FILTER
out=/tmp/out
filter=${1:-}
: > "$out/results.tsv"
: > "$out/skips.tsv"
status=0
case $(uname -m) in aarch64) arch=arm64 ;; *) arch=$(uname -m) ;; esac

result() {	# suite test pass|fail|skip [reason]
	printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$out/results.tsv"
	[ "$3" != skip ] || printf '%s\t%s\t%s\n' "$1" "$2" "$4" >> "$out/skips.tsv"
	[ "$3" != fail ] || status=1
	echo "RESULT $1 $2 $3${4:+ ($4)}"
}

# One kselftest program: its TAP lines become results; a program that
# crashes or times out before it reports is one failing line of its own.
run_kselftest() {
	prog=$1 name=${1##*/}
	echo "=== kselftest $name"
	# Known issues of this arch are not run, and reported as skips.
	set --
	if [ -f "${KNOWN_ISSUES:-}" ]; then
		while IFS='	' read -r k_arch k_prog k_case k_reason; do
			[ "$k_arch" = "$arch" ] && [ "$k_prog" = "$name" ] || continue
			set -- "$@" -T "${k_case##*.}"
			result kselftest "$k_case" skip "$k_reason"
		done < "$KNOWN_ISSUES"
	fi
	timeout -s KILL "${KSELFTEST_TIMEOUT:-300}" "$prog" "$@" > "$out/$name.tap" 2>&1
	rc=$?
	cat "$out/$name.tap"
	awk -v name="$name" '
		/^ok [0-9]+ / || /^not ok [0-9]+ / {
			res = ($1 == "ok") ? "pass" : "fail"
			sub(/^(not )?ok [0-9]+ /, "")
			reason = ""
			if (match($0, / # (SKIP|skip) ?/)) {
				reason = substr($0, RSTART + RLENGTH)
				$0 = substr($0, 1, RSTART - 1)
				res = "skip"
			}
			test = $1
			if (test !~ /\./) test = name "." test
			printf "%s\t%s\t%s\n", test, res, reason
		}' "$out/$name.tap" > "$out/$name.cases"
	if [ ! -s "$out/$name.cases" ]; then
		result kselftest "$name" fail
		return
	fi
	while IFS='	' read -r test res reason; do
		result kselftest "$test" "$res" "$reason"
	done < "$out/$name.cases"
	# Exit 4 is kselftest's "skip"; anything else non-zero with no failing
	# case means the program died after its last report.
	if [ $rc -ne 0 ] && [ $rc -ne 4 ] && ! grep -q '	fail	' "$out/$name.cases"; then
		result kselftest "$name.exit-$rc" fail
	fi
}

# One perf tool test: a shell script, exit 0 pass, 2 skip (reason on its
# last line of output), anything else fail.
run_perf_test() {
	t=$1 name=${1##*/}
	name=${name%.sh}
	echo "=== perf-test $name"
	timeout -s KILL "${PERF_TEST_TIMEOUT:-300}" sh "$t" > "$out/perf-$name.log" 2>&1
	rc=$?
	cat "$out/perf-$name.log"
	case $rc in
	0) result perf-test "$name" pass ;;
	2) result perf-test "$name" skip "$(tail -n 1 "$out/perf-$name.log")" ;;
	*) result perf-test "$name" fail ;;
	esac
}

# One of perf's built-in tests, by its description.
run_perf_builtin() {
	desc=$1
	name=$(echo "$desc" | tr 'A-Z ' 'a-z-')
	echo "=== perf-test $name (perf test '$desc')"
	line=$(timeout -s KILL "${PERF_TEST_TIMEOUT:-300}" perf test "$desc" 2>&1 | tee /dev/stderr | grep ": $desc *:" | tail -n 1)
	case $line in
	*": Ok") result perf-test "$name" pass ;;
	*": Skip"*) result perf-test "$name" skip "${line##*: Skip}" ;;
	*) result perf-test "$name" fail ;;
	esac
}

# What a user of `make vm` gets: the series' perf first in PATH (it knows
# --tls-user, the host's perf does not) and no pager on the serial console.
case newcomer-guest-perf in *"$filter"*)
	if [ "${PAGER:-}" = cat ] && perf record -h 2>&1 | grep -q -- --tls-user; then
		result newcomer guest-perf pass
	else
		echo "perf is $(command -v perf), PAGER=${PAGER:-unset}"
		result newcomer guest-perf fail
	fi ;;
esac

# perf's own manual is the series' (perf help record has --tls-user, man
# finds it too), perf report finds its tips, and --header-only names every
# missing feature (no "(null)").
case newcomer-perf-manual in *"$filter"*)
	perf record -q -o /tmp/manual.data -e cpu-clock -- true > /dev/null 2>&1
	why=
	perf help record 2>&1 | grep -q -- --tls-user || why="perf help record has no --tls-user"
	man perf-record 2>&1 | grep -q -- --tls-user || why="$why${why:+; }man perf-record has no --tls-user"
	perf report -i /tmp/manual.data --stdio 2>&1 | grep -q "Cannot load tips.txt" &&
		why="$why${why:+; }perf report cannot load tips.txt"
	perf report -i /tmp/manual.data --header-only 2>&1 | grep -q "(null)" &&
		why="$why${why:+; }perf report --header-only prints (null)"
	if [ -z "$why" ]; then
		result newcomer perf-manual pass
	else
		echo "$why"
		result newcomer perf-manual fail
	fi ;;
esac

for prog in "$SELFTESTS"/*; do
	[ -f "$prog" ] && [ -x "$prog" ] || continue
	case ${prog##*/} in *"$filter"*) run_kselftest "$prog" ;; esac
done
if [ -f "${PERF_BUILTIN_TESTS:-}" ] && command -v perf > /dev/null; then
	while IFS= read -r desc; do
		case $desc in ''|'#'*) continue ;; esac
		case $desc in *"$filter"*) run_perf_builtin "$desc" ;; esac
	done < "$PERF_BUILTIN_TESTS"
fi
if [ -n "${PERF_TESTS:-}" ]; then
	for t in "$PERF_TESTS"/*.sh; do
		[ -f "$t" ] || continue
		case ${t##*/} in *"$filter"*) run_perf_test "$t" ;; esac
	done
fi
# A bounded share of the ABI stress (make stress is the long run): one
# line named by its seed, which replays it (make stress SEED=N); its kernel
# splats fail the boot's console-clean line.
if [ -x "${STRESS_DIR:-}/abi_stress" ]; then
	# shellcheck disable=SC2194 # a constant name matched against the filter
	case abi-stress in *"$filter"*)
		secs=${ABI_STRESS_SECONDS:-60}
		echo "=== stress abi-stress"
		timeout -s KILL $((secs + 120)) "$STRESS_DIR/abi_stress" --seconds "$secs" \
			> "$out/abi-stress.log" 2>&1
		rc=$?
		cat "$out/abi-stress.log"
		seed=$(sed -n 's/^abi-stress seed=\([0-9]*\) .*/\1/p' "$out/abi-stress.log" | head -n 1)
		if [ $rc -eq 0 ]; then
			result stress "abi-stress.seed-${seed:-unknown}" pass
		else
			result stress "abi-stress.seed-${seed:-unknown}" fail
		fi ;;
	esac
fi
exit $status
