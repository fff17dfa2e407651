#!/bin/bash
# Build the ABI stress program stress/abi_stress.c statically for one arch,
# against that arch's freshly installed uapi headers, into
# build/stress-ARCH/abi_stress.
. "$(dirname "$0")/lib.sh"

arch=${1:?usage: build-stress.sh ARCH}
out=$BUILD/stress-$arch
src=$TOP/stress/abi_stress.c
hdr=$(kobj "$arch")/usr/include
[ -f "$hdr/linux/perf_event.h" ] || die "$hdr is missing: run scripts/build-kernel.sh $arch"
mkdir -p "$out"
[ "$out/abi_stress" -nt "$src" ] && [ "$out/abi_stress" -nt "$hdr/linux/perf_event.h" ] && exit 0
log "$arch: building abi_stress"
rm -f "$out/abi_stress"
"$(cross "$arch")gcc" -O2 -g -Wall -Wextra -static -isystem "$hdr" \
	-o "$out/abi_stress" "$src" -lpthread
