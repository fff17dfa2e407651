#!/bin/bash
# Pack the arm64 guest's initramfs: Debian's static busybox for arm64, the
# guest scripts, the static kselftests, the static perf and its tests, the
# static ABI stress program, and the dynamic otel_tls test programs with the
# dynamic linker and libc.
#   build/initramfs-arm64.cpio
. "$(dirname "$0")/lib.sh"

root=$BUILD/initramfs-arm64
debs=$BUILD/debs
mkdir -p "$debs"
deb=$(ls "$debs"/busybox-static_*_arm64.deb 2>/dev/null | head -n 1 || true)
if [ -z "$deb" ]; then
	log "downloading busybox-static:arm64"
	(cd "$debs" && apt-get download -q busybox-static:arm64 >/dev/null 2>&1) ||
		die "cannot download busybox-static:arm64 (is arm64 a dpkg foreign architecture? run scripts/deps.sh)"
	deb=$(ls "$debs"/busybox-static_*_arm64.deb | head -n 1)
fi

rm -rf "$root"
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,etc,opt/project/scripts}
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$root" ./bin/busybox
# The applet list of the host's busybox-static: the same Debian version.
for applet in $(busybox --list-full); do
	[ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
done
cp "$TOP/scripts/guest-init.sh" "$root/init"
cp "$TOP"/scripts/guest-*.sh "$TOP/scripts/known-issues.tsv" "$TOP/scripts/perf-builtin-tests.list" \
	"$root/opt/project/scripts/"
[ -d "$BUILD/selftests-arm64" ] && cp -r "$BUILD/selftests-arm64" "$root/opt/project/selftests"
[ -x "$BUILD/perf-arm64/perf" ] && cp "$BUILD/perf-arm64/perf" "$root/usr/bin/perf"
# The otel_tls test programs are dynamic (a DT_NEEDED library is what they
# test): beside perf, with the cross toolchain's dynamic linker and libc.
if [ -d "$BUILD/perf-arm64/otel-tls" ]; then
	cp -r "$BUILD/perf-arm64/otel-tls" "$root/usr/bin/otel-tls"
	mkdir -p "$root/lib/aarch64-linux-gnu"
	cp -L /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 "$root/lib/"
	cp -L /usr/aarch64-linux-gnu/lib/libc.so.6 "$root/lib/aarch64-linux-gnu/"
fi
mkdir -p "$root/opt/project/perf-tests"
cp -r "$BUILD"/perf-tests/. "$root/opt/project/perf-tests/" 2>/dev/null || true
[ -d "$BUILD/bench-arm64" ] && cp -r "$BUILD/bench-arm64" "$root/opt/project/bench"
[ -d "$BUILD/stress-arm64" ] && cp -r "$BUILD/stress-arm64" "$root/opt/project/stress"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) > "$BUILD/initramfs-arm64.cpio"
log "initramfs: $(du -h "$BUILD/initramfs-arm64.cpio" | cut -f1)"
