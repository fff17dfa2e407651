#!/bin/bash
# The new user's machine: a minimal Debian bookworm root made with
# debootstrap from the archive this machine's apt uses, a clone of this
# repository in it at ~/perf-sample-ext, and inside it, as a new machine
# would, the install stage and then proof that every tool the build and the
# guests need works.  Bad input is tried first: not root, no network.
#
#   fresh-root.sh            install and tool checks, result lines on stdout
#   fresh-root.sh --full     then `make check` and `make demo` in the root
#
# Result lines ("noarch newcomer TEST pass|fail") go to stdout; check.sh
# appends them to build/check/results.tsv.
. "$(dirname "$0")/lib.sh"

full=
[ "${1:-}" = --full ] && full=yes
[ "$(id -u)" = 0 ] || die "debootstrap and chroot need root"
command -v debootstrap >/dev/null || die "debootstrap is missing: run scripts/deps.sh"

root=$BUILD/fresh-root
mkdir -p "$BUILD"
flog=$BUILD/fresh-root.log
: > "$flog"

umount_root() {
	local m
	for m in $(awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
}
trap umount_root EXIT

ok() { printf 'noarch\tnewcomer\t%s\t%s\n' "$1" "$2"; }
in_root() { chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	LANG=C.UTF-8 TERM=dumb "$@"; }

# The archive this machine's apt uses, read from its sources (deb822 or
# one-line), so that nothing here names a mirror.
mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
	 awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }')
[ -n "$mirror" ] || mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
	 awk '$1 == "deb" && $2 !~ /security/ { print $2; exit }')
[ -n "$mirror" ] || die "no Debian archive in /etc/apt/sources.list*"

umount_root
rm -rf --one-file-system "$root"
t0=$(date +%s)
log "debootstrap bookworm from $mirror into $root"
mkdir -p /var/cache/apt/archives
debootstrap --variant=minbase --cache-dir=/var/cache/apt/archives bookworm "$root" "$mirror" \
	>> "$flog" 2>&1 || { tail -n 20 "$flog" >&2; die "debootstrap failed (see $flog)"; }
log "debootstrap: $(( $(date +%s) - t0 ))s"

# The same apt sources as this machine (the security suite carries
# linux-source-6.12), the host's package cache for what was downloaded
# already (nothing is installed from it that apt does not choose), the
# kernel file systems, and a clone of the project with only git.
rm -f "$root/etc/apt/sources.list"
cp -a /etc/apt/sources.list /etc/apt/sources.list.d "$root/etc/apt/" 2>/dev/null || true
find "$root/etc/apt/sources.list.d" -name '*.disabled*' -delete
cp /etc/resolv.conf "$root/etc/resolv.conf"
for m in proc sys dev dev/pts; do mount --bind "/$m" "$root/$m"; done
mount --bind /var/cache/apt/archives "$root/var/cache/apt/archives"
in_root apt-get -q update >> "$flog" 2>&1 &&
	in_root apt-get -q install -y --no-install-recommends git make ca-certificates >> "$flog" 2>&1 ||
	die "cannot install git and make in the fresh root (see $flog)"
git clone -q "$TOP" "$root/root/perf-sample-ext"
# The base tree comes from the package: a clean clone, no build/.
proj=/root/perf-sample-ext

# Bad input first, on the bare root: each must stop with its message.
# (A user's own clone: ~root is not theirs to read.)
git clone -q "$root$proj" "$root/tmp/user-clone"
chmod -R a+rX "$root/tmp/user-clone"
msg=$(in_root setpriv --reuid=65534 --regid=65534 --clear-groups \
	make -C /tmp/user-clone deps 2>&1) && rc=0 || rc=$?
rm -rf "$root/tmp/user-clone"
echo "$msg" >> "$flog"
if [ $rc != 0 ] && grep -q "run as root" <<< "$msg"; then ok not-root pass; else ok not-root fail; fi

msg=$(unshare -n chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	make -C "$proj" deps 2>&1) && rc=0 || rc=$?
echo "$msg" >> "$flog"
if [ $rc != 0 ] && grep -q "archive .* reachable" <<< "$msg"; then ok no-network pass; else ok no-network fail; fi

# The real install, timed: what `make check` does first on a new machine.
t1=$(date +%s)
if in_root make -C "$proj" deps >> "$flog" 2>&1; then
	ok install pass
else
	ok install fail; tail -n 20 "$flog" >&2
fi
log "install stage: $(( $(date +%s) - t1 ))s"

# A pin the archive no longer has: a warning naming the version used
# instead, and the install goes on.
git clone -q "$root$proj" "$root$proj-gone"
echo 6.12.0-0~gone > "$root$proj-gone/kernel/base-version"
msg=$(in_root make -C "$proj-gone" deps 2>&1) && rc=0 || rc=$?
echo "$msg" >> "$flog"
if [ $rc = 0 ] && grep -q "WARNING: falling back to the candidate 6\.12\." <<< "$msg"; then
	ok base-version-gone pass
else
	ok base-version-gone fail
fi
rm -rf "$root$proj-gone"

# Every tool the build and the guests need, proven to work.
cat > "$root/tmp/tools-check.sh" <<'EOF'
set -eu
cd /tmp
fail() { echo "tools-check: $*" >&2; exit 1; }
printf '#include <stdio.h>\nint main(void) { puts("ok"); return 0; }\n' > hello.c
gcc -O2 -o hello hello.c && [ "$(./hello)" = ok ] || fail "host gcc"
aarch64-linux-gnu-gcc -static -o hello-arm64 hello.c || fail "aarch64 cross gcc"
od -An -tx1 -j18 -N2 hello-arm64 | grep -q 'b7 00' || fail "cross gcc made no arm64 ELF"
# The libraries of the perf build, headers and linking.
cat > perf-libs.c <<'C'
#include <elfutils/libdw.h>
#include <gelf.h>
#include <traceevent/event-parse.h>
#include <sys/capability.h>
#include <zstd.h>
#include <zlib.h>
#include <openssl/evp.h>
int main(void)
{
	struct tep_handle *tep = tep_alloc();

	elf_version(EV_CURRENT);
	tep_free(tep);
	return !(ZSTD_versionNumber() && zlibVersion() && cap_init() && EVP_sha256() &&
		 dwarf_begin(-1, DWARF_C_READ) == NULL);
}
C
gcc -o perf-libs perf-libs.c $(pkg-config --cflags --libs libtraceevent libdw libelf) \
	-lcap -lzstd -lz -lcrypto || fail "perf's libraries"
./perf-libs || fail "perf's libraries do not run"
for t in flex bison bc cpio xz perl python3 depmod busybox; do
	command -v $t >/dev/null || fail "$t is missing"
done
python3 -c 'import ply, git' || fail "python3-ply or python3-git"
tar -tJf /usr/src/linux-source-6.12.tar.xz 2>/dev/null | head -n 1 | grep -q . ||
	fail "linux-source-6.12 tarball"
mkdir -p /tmp/debs && cd /tmp/debs && apt-get download -q busybox-static:arm64 >/dev/null ||
	fail "busybox-static:arm64"
for q in "qemu-system-x86_64 -M pc -cpu max" "qemu-system-aarch64 -M virt -cpu max"; do
	echo quit | timeout 60 $q -display none -nodefaults -monitor stdio >/dev/null ||
		fail "${q%% *} does not start"
done
echo "tools-check: all tools work"
EOF
if in_root sh /tmp/tools-check.sh >> "$flog" 2>&1; then
	ok fresh-root pass
else
	ok fresh-root fail; tail -n 5 "$flog" >&2
fi
log "fresh root checks: $(( $(date +%s) - t0 ))s in all; linux-source-6.12 $(
	in_root dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || echo none)"

[ -n "$full" ] || exit 0

# The new user's first hour: the README's two commands, timed.
for target in check demo; do
	t=$(date +%s)
	in_root IN_FRESH_ROOT=1 make -C "$proj" "$target" > "$BUILD/fresh-root-$target.log" 2>&1 && rc=0 || rc=$?
	log "make $target in the fresh root: exit $rc after $(( $(date +%s) - t ))s ($BUILD/fresh-root-$target.log)"
done
tail -n 3 "$BUILD/fresh-root-check.log"
