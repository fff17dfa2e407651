#!/bin/bash
# Build perf from the assembled tree into build/perf-ARCH: dynamic for
# x86_64 (the guest runs it from the host root), static and cross-built
# for arm64 (it goes into the initramfs).  Then the programs of the otel_tls
# perf tests (tools/perf/tests/otel_tls: a shared library and programs
# linked against it, which perf cannot build in) into build/perf-ARCH/otel-tls,
# dynamic on both arches: the tests look for them beside perf.  And perf's
# manual pages and tips.txt from the same tree, where perf looks for them
# (below its compile-time prefix; perf help runs man with MANPATH there).
. "$(dirname "$0")/lib.sh"

arch=${1:?usage: build-perf.sh ARCH}
out=${PERF_OUT:-$BUILD/perf-$arch}
mkdir -p "$out"
out=$(cd "$out" && pwd)
# Features nobody here needs, and that would pull in more packages.
opts=(NO_LIBPYTHON=1 NO_LIBPERL=1 NO_GTK2=1 NO_SLANG=1 NO_LIBUNWIND=1
      NO_LIBNUMA=1 NO_LIBBABELTRACE=1 NO_JVMTI=1 NO_LIBAUDIT=1 NO_LIBCAP=1
      NO_LIBBPF=1 BUILD_BPF_SKEL=0 NO_LIBLLVM=1 NO_DEMANGLE=1 NO_LIBPFM4=1
      NO_SDT=1 NO_LIBCRYPTO=1 NO_JEVENTS=1)
# perf finds share/man and share/doc/perf-tip under its prefix: out itself
# on x86_64 (the guest sees the host's paths), /usr on arm64 (initramfs.sh
# puts out/share at the guest's /usr/share).
case $arch in
x86_64)	opts+=(prefix="$out") ;;
arm64)	opts+=(prefix=/usr ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- LDFLAGS=-static
	       NO_LIBELF=1 NO_LIBDW=1 NO_LIBTRACEEVENT=1 NO_LIBZSTD=1 NO_ZLIB=1 NO_LZMA=1) ;;
esac
stale "$out/.built" "$TREE" "$0" && say=log || say=:	# "building" only if it may
$say "$arch: building perf"
make -s -C "$TREE/tools/perf" O="$out" "${opts[@]}" -j"$(nproc)" perf > "$out/build.log" 2>&1 ||
	{ tail -40 "$out/build.log" >&2; die "$arch: perf build failed (log: $out/build.log)"; }

# The manual pages: asciidoc and xmlto, once per changed page (make's own
# dependencies), with Debian's asciidoc (a python3 module) under Debian's
# python3 whatever python3 comes first in PATH.  Copied into share/man only
# when they differ, so that an unchanged page keeps its time stamp.
doc=$out/Documentation
mkdir -p "$doc" "$out/share/man/man1" "$out/share/doc/perf-tip"
docmake=(make -C "$TREE/tools/perf/Documentation" O="$doc" -j"$(nproc)" man)
PATH=/usr/bin:/bin:$PATH "${docmake[@]}" -q > /dev/null 2>&1 ||
	log "$arch: building perf's manual pages"
PATH=/usr/bin:/bin:$PATH "${docmake[@]}" > "$doc/build.log" 2>&1 ||
	{ tail -20 "$doc/build.log" >&2; die "$arch: perf's manual pages failed (log: $doc/build.log)"; }
sync_file() { cmp -s "$1" "$2" || cp "$1" "$2"; }
for f in "$doc"/*.1; do sync_file "$f" "$out/share/man/man1/${f##*/}"; done
for f in "$out"/share/man/man1/*.1; do [ -f "$doc/${f##*/}" ] || rm -f "$f"; done
sync_file "$TREE/tools/perf/Documentation/tips.txt" "$out/share/doc/perf-tip/tips.txt"
# The arm64 guest has no troff: its man (initramfs.sh) shows the pages
# rendered here to plain text, in cat1 as man-db would cache them.
if [ "$arch" = arm64 ]; then
	mkdir -p "$out/share/man/cat1"
	for f in "$out"/share/man/man1/*.1; do
		c=$out/share/man/cat1/${f##*/}
		[ "$c" -nt "$f" ] && continue
		LC_ALL=C MANWIDTH=80 man -l "$f" > "$c.tmp" 2>> "$doc/build.log" ||
			die "$arch: cannot render $f (log: $doc/build.log)"
		mv "$c.tmp" "$c"
	done
	for c in "$out"/share/man/cat1/*.1; do [ -f "$out/share/man/man1/${c##*/}" ] || rm -f "$c"; done
fi

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
