#!/bin/bash
# make check: every stage in order, a timing line each, one result line per
# test in build/check/results.tsv, and the closing "N passed, N failed,
# N skipped" line.  Exit status non-zero on any failure.
. "$(dirname "$0")/lib.sh"

dir=$BUILD/check
results=$dir/results.tsv
mkdir -p "$dir"
rm -f "$dir"/results*.tsv "$dir"/skips*.tsv
: > "$results"

# stage NAME COMMAND...: run, time, and keep going on failure.
stage() {
	local name=$1 t0 rc=0; shift
	t0=$(date +%s)
	"$@" || rc=$?
	printf 'stage %-22s %4ss  %s\n' "$name" $(( $(date +%s) - t0 )) "$([ $rc = 0 ] && echo ok || echo FAILED)"
	return $rc
}
result() { printf '%s\t%s\t%s\t%s\n' "$@" >> "$results"; }
build_line() {		# arch what command...
	local arch=$1 what=$2; shift 2
	if stage "$what-$arch" "$@"; then result "$arch" build "$what" pass; return 0; fi
	result "$arch" build "$what" fail; return 1
}

summary() {
	awk -F'\t' '{ n[$4]++ } END { printf "%d passed, %d failed, %d skipped\n", n["pass"], n["fail"], n["skip"] }' "$results"
}
# A stage that everything after it needs: on failure, its result line, the
# closing line, and out.
first_stage() {		# name message command...
	local name=$1 msg=$2; shift 2
	stage "$name" "$@" && return 0
	result noarch stage "$name" fail
	log "error: $msg"
	summary
	exit 1
}

t_start=$(date +%s)
first_stage deps "cannot install the dependencies" "$TOP/scripts/deps.sh"
first_stage base-tree "cannot prepare the base tree" "$TOP/scripts/base-tree.sh"
first_stage assemble "the series does not apply" "$TOP/scripts/series.sh" assemble
result noarch subseries whole-stack-applies pass
# The base the run used: the pinned version, or what it used instead.
used=$(dpkg-query -W -f='${Version}' linux-source-6.12)
if [ "$used" = "$BASE_VERSION" ]; then
	result noarch base-tree "linux-source-6.12=$used" pass
else
	result noarch base-tree "linux-source-6.12=$used(pinned:$BASE_VERSION)" pass
fi

# checkpatch --strict on the series as it would be mailed.
checkpatch() {
	local p ignore rc=0
	"$TOP/scripts/series.sh" mbox "$BUILD/series" 2>/dev/null
	for p in "$BUILD"/series/*/0*.patch; do
		case $p in */0000-cover-letter.patch) continue ;; esac
		[ -e "$p" ] || continue
		# patches/checkpatch-ignore: "type<TAB>patch glob<TAB>reason".
		ignore=$(awk -F'\t' -v p="${p#"$BUILD"/series/}" '
			!/^#/ && NF >= 2 {
				g = $2; gsub(/\*/, ".*", g)
				if (p ~ ("^" g "$")) { printf "%s%s", sep, $1; sep = "," }
			}' "$TOP/patches/checkpatch-ignore")
		# /usr/bin first: checkpatch runs spdxcheck.py with Debian's python3-ply.
		if (cd "$TREE" && PATH=/usr/bin:$PATH ./scripts/checkpatch.pl --strict --quiet --no-summary \
			${ignore:+--ignore "$ignore"} "$p") > "$dir/checkpatch.out" 2>&1; then
			result noarch checkpatch "${p#"$BUILD"/series/}" pass
		else
			cat "$dir/checkpatch.out"; result noarch checkpatch "${p#"$BUILD"/series/}" fail; rc=1
		fi
	done
	return $rc
}
stage checkpatch checkpatch || true

# The README's apply command, as written there, on a fresh base checkout.
if stage readme-apply "$TOP/scripts/readme-apply.sh"; then
	result noarch newcomer readme-apply pass
else
	result noarch newcomer readme-apply fail
fi

# A new machine: a debootstrap root, the install stage and every tool
# proven in it (not inside such a root already: `make fresh` runs this
# whole check in one).
if [ -n "${IN_FRESH_ROOT:-}" ]; then
	result noarch newcomer fresh-root skip
else
	fresh_root() { "$TOP/scripts/fresh-root.sh" > "$dir/fresh-root.tsv"; }
	stage fresh-root fresh_root || true
	cat "$dir/fresh-root.tsv" >> "$results"
	grep -q '	fresh-root	' "$dir/fresh-root.tsv" || result noarch newcomer fresh-root fail
fi

if stage roundtrip "$TOP/scripts/series.sh" roundtrip; then
	result noarch roundtrip series pass
else
	result noarch roundtrip series fail
fi

# No ABI number of the series may be one upstream has taken or hands out
# next (scripts/upstream-abi.tsv lists upstream's, with their sources).
abi_check() {
	python3 "$TOP/scripts/abi-check.py" "$TREE" "$TOP/scripts/upstream-abi.tsv" \
		> "$dir/abi-check.out" 2>&1 || { cat "$dir/abi-check.out"; return 1; }
}
if stage abi-check abi_check; then
	result noarch abi upstream-collision pass
else
	result noarch abi upstream-collision fail
fi

# perf's readers against crafted files: the fuzz harness' regression
# seeds and a bounded share of mutants (22 s per record kind: 7 kinds, at most 3 min
# in all) fed to the host perf built with ASan and UBSan; `make fuzz` is
# the full run.  One line per record kind.
fuzz_kinds="tls tlsdefer uevent deferred auxsample auxtrace attr otelctx"
if build_line noarch perf-asan "$TOP/fuzz/build-perf-asan.sh"; then
	fuzz_check() {
		python3 "$TOP/fuzz/fuzz.py" --perf "$BUILD/perf-asan/perf" --seconds 22 \
			--keep "$dir/fuzz-crashes" > "$dir/fuzz.tsv"
	}
	stage perf-fuzz fuzz_check || true
	for k in $fuzz_kinds; do
		r=$(awk -F'\t' -v k="$k" '$1 == k { print $2 }' "$dir/fuzz.tsv")
		result noarch perf-fuzz "$k" "${r:-fail}"
	done
else
	for k in $fuzz_kinds; do result noarch perf-fuzz "$k" fail; done
fi

for arch in $ARCHES; do
	ok=1
	build_line "$arch" kernel "$TOP/scripts/build-kernel.sh" "$arch" || ok=0
	if [ $ok = 1 ]; then
		build_line "$arch" selftests "$TOP/scripts/build-selftests.sh" "$arch" || ok=0
		build_line "$arch" perf "$TOP/scripts/build-perf.sh" "$arch" || ok=0
		# pprof reads the export of perf data convert --to-pprof back
		# (record_otel_tls_pprof); built before the arm64 initramfs
		build_line "$arch" pprof "$TOP/scripts/build-pprof.sh" "$arch" || ok=0
		# Without it the guest stage runs, less the ABI stress.
		build_line "$arch" stress "$TOP/scripts/build-stress.sh" "$arch" || true
	fi
	if [ $ok = 1 ]; then
		stage "guest-$arch" "$TOP/scripts/run-tests.sh" "$arch" || true
		cat "$dir/results-$arch.tsv" >> "$results"
		[ ! -s "$dir/skips-$arch.tsv" ] || {
			echo "skipped on $arch, with the reason each test gave:"
			sed 's/^/  /' "$dir/skips-$arch.tsv"
		}
	else
		result "$arch" boot console-clean skip
		echo "$arch	boot	console-clean	a build failed" >> "$dir/skips-$arch.tsv"
	fi
	# The README's quick start, as written there (make vm in the x86_64
	# guest, then the series' perf on the host), once that guest's
	# kernel and perf are built.
	[ "$arch" = x86_64 ] || continue
	if [ $ok = 0 ]; then
		result x86_64 newcomer readme-quickstart skip
		echo "x86_64	newcomer	readme-quickstart	a build failed" >> "$dir/skips-$arch.tsv"
	elif stage readme-quickstart "$TOP/scripts/readme-quickstart.sh"; then
		result x86_64 newcomer readme-quickstart pass
	else
		result x86_64 newcomer readme-quickstart fail
	fi
done

# Every sub-series applies and builds on what patches/subseries says it
# applies on, and every patch of the stack builds (the kernel objects the
# series touches, for both arches; perf and the kselftests at each
# sub-series' end, x86_64): scripts/bisect.sh.  Needs the kernels above.
if [ -f "$BUILD/obj-x86_64/.config" ] && [ -f "$BUILD/obj-arm64/.config" ]; then
	for sub in $("$TOP/scripts/series.sh" subseries | cut -d' ' -f1); do
		bisect_sub() { "$TOP/scripts/bisect.sh" subseries "$1" > "$dir/subseries-$1.tsv"; }
		stage "subseries-$sub" bisect_sub "$sub" || true
		cat "$dir/subseries-$sub.tsv" >> "$results"
		grep -q "$sub-applies" "$dir/subseries-$sub.tsv" ||
			result noarch subseries "$sub-applies" fail
	done
	for arch in $ARCHES; do
		bisect_patches() { "$TOP/scripts/bisect.sh" patches "$1" > "$dir/bisect-$1.tsv"; }
		stage "bisect-$arch" bisect_patches "$arch" || true
		cat "$dir/bisect-$arch.tsv" >> "$results"
		grep -q every-patch "$dir/bisect-$arch.tsv" || result "$arch" bisect every-patch fail
	done
else
	result noarch subseries all fail
fi

printf 'stage %-22s %4ss\n' total $(( $(date +%s) - t_start ))
if grep -q '	fail$' "$results"; then
	echo "failed:"; grep '	fail$' "$results" | sed 's/^/  /'
fi
summary
! grep -q '	fail$' "$results"
