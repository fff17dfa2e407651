#!/bin/bash
# Build Google's pprof from Debian's golang-github-google-pprof-dev (GOPATH
# mode, no network) into build/pprof-ARCH/pprof, for the perf test that reads
# perf data convert --to-pprof back (record_otel_tls_pprof.sh): static
# (CGO_ENABLED=0) and stripped so that the arm64 initramfs can carry it beside
# perf.
# The x86_64 guest finds it at the same path, as the test looks in
# ../pprof-ARCH beside perf's directory; the arm64 one in /usr/bin.
#   scripts/build-pprof.sh ARCH
. "$(dirname "$0")/lib.sh"

arch=${1:?usage: build-pprof.sh ARCH}
case $arch in
x86_64) goarch=amd64 ;;
arm64)	goarch=arm64 ;;
*)	die "unknown arch $arch" ;;
esac
src=/usr/share/gocode
[ -d "$src/src/github.com/google/pprof" ] ||
	die "no pprof source in $src (run scripts/deps.sh: golang-github-google-pprof-dev)"
command -v go > /dev/null || die "no go compiler (run scripts/deps.sh: golang-go)"
out=$BUILD/pprof-$arch
# Built once per version of the Debian packages (and of this script)
stamp="$(dpkg-query -W -f='${Version}' golang-github-google-pprof-dev golang-go 2>/dev/null || true) $(cksum < "$0")"
[ -x "$out/pprof" ] && [ "$(cat "$out/.stamp" 2>/dev/null)" = "$stamp" ] && exit 0
mkdir -p "$out/gocache"
log "$arch: building pprof"
GO111MODULE=off GOPATH=$src GOCACHE=$out/gocache GOFLAGS='' CGO_ENABLED=0 GOARCH=$goarch \
	go build -ldflags='-s -w' -o "$out/pprof.new" github.com/google/pprof > "$out/build.log" 2>&1 ||
	{ cat "$out/build.log" >&2; die "$arch: pprof build failed (log: $out/build.log)"; }
mv "$out/pprof.new" "$out/pprof"
echo "$stamp" > "$out/.stamp"
