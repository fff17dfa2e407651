#!/bin/bash
# Build perf from the assembled tree into build/perf-ARCH: dynamic for
# x86_64 (the guest runs it from the host root), static and cross-built
# for arm64 (it goes into the initramfs).  Then the programs of the otel_tls
# perf tests (tools/perf/tests/otel_tls: a shared library and programs
# linked against it, which perf cannot build in) into build/perf-ARCH/otel-tls,
# dynamic on both arches: the tests look for them beside perf.
. "$(dirname "$0")/lib.sh"

arch=${1:?usage: build-perf.sh ARCH}
out=${PERF_OUT:-$BUILD/perf-$arch}
mkdir -p "$out"
# Features nobody here needs, and that would pull in more packages.
opts=(NO_LIBPYTHON=1 NO_LIBPERL=1 NO_GTK2=1 NO_SLANG=1 NO_LIBUNWIND=1
      NO_LIBNUMA=1 NO_LIBBABELTRACE=1 NO_JVMTI=1 NO_LIBAUDIT=1 NO_LIBCAP=1
      NO_LIBBPF=1 BUILD_BPF_SKEL=0 NO_LIBLLVM=1 NO_DEMANGLE=1 NO_LIBPFM4=1
      NO_SDT=1 NO_LIBCRYPTO=1 NO_JEVENTS=1)
case $arch in
x86_64) ;;
arm64)	opts+=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- LDFLAGS=-static
	       NO_LIBELF=1 NO_LIBDW=1 NO_LIBTRACEEVENT=1 NO_LIBZSTD=1 NO_ZLIB=1 NO_LZMA=1) ;;
esac
stale "$out/.built" "$TREE" "$0" && say=log || say=:	# "building" only if it may
$say "$arch: building perf"
make -s -C "$TREE/tools/perf" O="$out" "${opts[@]}" -j"$(nproc)" perf > "$out/build.log" 2>&1 ||
	{ tail -40 "$out/build.log" >&2; die "$arch: perf build failed (log: $out/build.log)"; }

# (A tree of the series before the otel_tls tests, as scripts/bisect.sh builds.)
[ -d "$TREE/tools/perf/tests/otel_tls" ] || { stamp "$out/.built"; exit 0; }
$say "$arch: building the otel_tls test programs"
cross=()
[ "$arch" = arm64 ] && cross=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
mkdir -p "$out/otel-tls"
make -s -C "$TREE/tools/perf/tests/otel_tls" OUTPUT="$out/otel-tls/" "${cross[@]}" \
	> "$out/otel-tls.log" 2>&1 ||
	{ cat "$out/otel-tls.log" >&2; die "$arch: otel_tls test programs failed (log: $out/otel-tls.log)"; }
stamp "$out/.built"
