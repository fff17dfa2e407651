#!/bin/bash
# Build the benchmark programs in bench/ (each a .c file and bench.h)
# statically for one arch, against that arch's freshly installed uapi
# headers, into build/bench-ARCH.
. "$(dirname "$0")/lib.sh"

arch=${1:?usage: build-bench.sh ARCH}
out=$BUILD/bench-$arch
mkdir -p "$out"
for src in "$TOP"/bench/*.c; do
	bin=$out/$(basename "$src" .c)
	[ "$bin" -nt "$src" ] && [ "$bin" -nt "$TOP/bench/bench.h" ] &&
		[ "$bin" -nt "$(kobj "$arch")/usr/include/linux/perf_event.h" ] && continue
	"$(cross "$arch")gcc" -O2 -Wall -static -isystem "$(kobj "$arch")/usr/include" \
		-o "$bin" "$src" -lpthread
done
