#!/bin/bash
# make bench: build, boot each guest, run the benchmarks side by side in one
# run per arch, and write build/bench/results.tsv ("arch name value unit").
# The guests run "bench" kernels: the test kernels' lockdep would be most of
# every cost measured.
export KFLAVOUR=bench
. "$(dirname "$0")/lib.sh"

dir=$BUILD/bench
mkdir -p "$dir"
: > "$dir/results.tsv"
"$TOP/scripts/deps.sh"
"$TOP/scripts/base-tree.sh"
"$TOP/scripts/series.sh" assemble
for arch in $ARCHES; do
	"$TOP/scripts/build-kernel.sh" "$arch"
	"$TOP/scripts/build-bench.sh" "$arch"
	case $arch in
	x86_64) cmd="BENCH=$BUILD/bench-x86_64 sh $TOP/scripts/guest-bench.sh" ;;
	arm64)	cmd="BENCH=/opt/project/bench BENCH_HW_EVENT=cycles sh /opt/project/scripts/guest-bench.sh" ;;
	esac
	"$TOP/scripts/vm.sh" "$arch" -v -o "$dir/vm-$arch" "$cmd" > "$dir/console-$arch.log" 2>&1 ||
		die "$arch: benchmark guest failed, see $dir/console-$arch.log"
	awk -v arch="$arch" '$1 == "BENCH" { printf "%s\t%s\t%s\t%s\n", arch, $2, $3, $4 }' \
		"$dir/console-$arch.log" >> "$dir/results.tsv"
done
column -t -s "$(printf '\t')" "$dir/results.tsv"
