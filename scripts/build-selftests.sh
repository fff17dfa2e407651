#!/bin/bash
# Build the perf_events kselftests (upstream ones and this series' ones)
# statically for one arch, against that arch's freshly installed uapi
# headers, into build/selftests-ARCH.
. "$(dirname "$0")/lib.sh"

arch=${1:?usage: build-selftests.sh ARCH}
out=$BUILD/selftests-$arch
mkdir -p "$out"
if stale "$out/.built" "$TREE/tools/testing/selftests" "$(kobj "$arch")/usr/include" "$0"; then
	log "$arch: building kselftests perf_events"
fi
make -s -C "$TREE/tools/testing/selftests/perf_events" \
	ARCH="$(karch "$arch")" CROSS_COMPILE="$(cross "$arch")" CC="$(cross "$arch")gcc" \
	OUTPUT="$out" KHDR_INCLUDES="-isystem $(kobj "$arch")/usr/include" \
	LDFLAGS="-static -lpthread" all
cp "$TREE/tools/testing/selftests/perf_events/settings" "$out/" 2>/dev/null || true
stamp "$out/.built"
