#!/bin/bash
# Build the host (x86_64) perf with AddressSanitizer and UndefinedBehavior-
# Sanitizer into build/perf-asan, for the fuzz harness.  Same features as
# build/perf-x86_64; libasan/libubsan come with gcc (libgcc-12-dev).
. "$(dirname "$0")/../scripts/lib.sh"

out=$BUILD/perf-asan
mkdir -p "$out"
san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
opts=(NO_LIBPYTHON=1 NO_LIBPERL=1 NO_GTK2=1 NO_SLANG=1 NO_LIBUNWIND=1
      NO_LIBNUMA=1 NO_LIBBABELTRACE=1 NO_JVMTI=1 NO_LIBAUDIT=1 NO_LIBCAP=1
      NO_LIBBPF=1 BUILD_BPF_SKEL=0 NO_LIBLLVM=1 NO_DEMANGLE=1 NO_LIBPFM4=1
      NO_SDT=1 NO_LIBCRYPTO=1 NO_JEVENTS=1
      EXTRA_CFLAGS="$san" LDFLAGS="$san"
      WERROR=0)	# gcc 12 warns wrongly (stringop-overflow) under ASan
log "x86_64: building perf with ASan+UBSan"
nice -n 5 make -s -C "$TREE/tools/perf" O="$out" "${opts[@]}" -j"$(nproc)" perf > "$out/build.log" 2>&1 ||
	{ tail -40 "$out/build.log" >&2; die "perf-asan build failed (log: $out/build.log)"; }
