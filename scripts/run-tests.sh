#!/bin/bash
# Boot one arch's guest and run the kselftests and perf tool tests in it
# (all of them, or those whose name contains FILTER).  Writes
# build/check/results-ARCH.tsv ("arch<TAB>suite<TAB>test<TAB>result") and
# build/check/skips-ARCH.tsv; exit status non-zero on any failure.
#   run-tests.sh ARCH [FILTER]
. "$(dirname "$0")/lib.sh"

arch=${1:?usage: run-tests.sh ARCH [FILTER]}
filter=${2:-}
out=$BUILD/vm/$arch-tests$(ksuffix)
results=$BUILD/check/results-$arch$(ksuffix).tsv
mkdir -p "$BUILD/check"

# The perf tool tests this series adds, as the assembled tree has them,
# and the helpers in lib/ that they source.
rm -rf "$BUILD/perf-tests"; mkdir -p "$BUILD/perf-tests/lib"
for t in $(git -C "$TREE" diff --name-only --diff-filter=A base HEAD -- 'tools/perf/tests/shell/*.sh'); do
	case $t in
	tools/perf/tests/shell/lib/*) cp "$TREE/$t" "$BUILD/perf-tests/lib/" ;;
	*) cp "$TREE/$t" "$BUILD/perf-tests/" ;;
	esac
done

case $arch in
x86_64)
	cmd="SELFTESTS=$BUILD/selftests-x86_64 STRESS_DIR=$BUILD/stress-x86_64"
	cmd="$cmd KNOWN_ISSUES=$TOP/scripts/known-issues.tsv PERF_BUILTIN_TESTS=$TOP/scripts/perf-builtin-tests.list PERF_TESTS=$BUILD/perf-tests sh $TOP/scripts/guest-tests.sh '$filter'" ;;
arm64)
	cmd="SELFTESTS=/opt/project/selftests PERF_TESTS=/opt/project/perf-tests"
	cmd="$cmd STRESS_DIR=/opt/project/stress"
	cmd="$cmd KNOWN_ISSUES=/opt/project/scripts/known-issues.tsv"
	cmd="$cmd PERF_BUILTIN_TESTS=/opt/project/scripts/perf-builtin-tests.list"
	cmd="$cmd sh /opt/project/scripts/guest-tests.sh '$filter'" ;;
esac

cmd="ABI_STRESS_SECONDS=${ABI_STRESS_SECONDS:-60} $cmd"

rc=0
console=$BUILD/check/console-$arch$(ksuffix).log
"$TOP/scripts/vm.sh" "$arch" -v -t "${VM_TIMEOUT:-1500}" -o "$out" "$cmd" > "$console" 2>&1 || rc=$?
case $rc in
0|1) boot=pass ;;
3) boot=fail; log "$arch: kernel splat, see $console" ;;
*) boot=fail; log "$arch: guest failed (exit $rc), see $console"
   tail -30 "$console" >&2 ;;
esac
{
	printf '%s\tboot\tconsole-clean\t%s\n' "$arch" "$boot"
	[ -f "$out/results.tsv" ] && sed "s/^/$arch\t/" "$out/results.tsv"
} > "$results"
[ -f "$out/skips.tsv" ] && sed "s/^/$arch\t/" "$out/skips.tsv" > "$BUILD/check/skips-$arch$(ksuffix).tsv"
awk -F'\t' '{ n[$4]++ } END { printf "%s: %d passed, %d failed, %d skipped\n", ARCH, n["pass"], n["fail"], n["skip"] }' \
	ARCH="$arch$(ksuffix)" "$results" >&2
! grep -q '	fail$' "$results"
