#!/bin/bash
# Pack the arm64 guest's initramfs: Debian's static busybox for arm64, the
# guest scripts, the static kselftests, the static perf and its tests, the
# static ABI stress program, the dynamic otel_tls test programs with the
# dynamic linker and libc, and perf's manual pages (as text) and tips.txt
# with a man that shows them.
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
# Google's pprof (static, scripts/build-pprof.sh) beside perf, for the test
# that reads perf data convert --to-pprof back (record_otel_tls_pprof.sh).
[ -x "$BUILD/pprof-arm64/pprof" ] && cp "$BUILD/pprof-arm64/pprof" "$root/usr/bin/pprof"
# perf's prefix is /usr on arm64 (build-perf.sh): perf help runs man with
# MANPATH=/usr/share/man, perf report reads /usr/share/doc/perf-tip/tips.txt.
# There is no troff here: build-perf.sh rendered the pages to text (cat1).
if [ -d "$BUILD/perf-arm64/share/man/cat1" ]; then
	mkdir -p "$root/usr/share/man" "$root/usr/share/doc"
	cp -r "$BUILD/perf-arm64/share/man/cat1" "$root/usr/share/man/"
	cp -r "$BUILD/perf-arm64/share/doc/perf-tip" "$root/usr/share/doc/"
	cat > "$root/usr/bin/man" <<'MAN'
#!/bin/sh
# man [SECTION] PAGE: the first catSECTION/PAGE.SECTION on $MANPATH, through
# $PAGER (the pages perf's build rendered to text).
case $1 in [1-9]*) sect=$1; shift ;; *) sect='[1-9]' ;; esac
[ $# = 1 ] || { echo "usage: man [SECTION] PAGE" >&2; exit 2; }
dirs=$(echo "${MANPATH:-}:/usr/share/man" | tr : ' ')
for d in $dirs; do
	for f in "$d"/cat$sect/"$1".$sect; do
		[ -f "$f" ] && exec ${PAGER:-cat} "$f"
	done
done
echo "No manual entry for $1" >&2
exit 16
MAN
	chmod 755 "$root/usr/bin/man"
fi
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
