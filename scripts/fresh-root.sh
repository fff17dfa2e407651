#!/bin/bash
# The new user's machine: a minimal Debian bookworm root made with
# debootstrap from the Debian archive this machine's apt uses, a clone of
# this repository in it at ~/perf-sample-ext, and inside it, as a new
# machine would, the install stage and then proof that every tool the
# build and the guests need works.  Bad input first: not root, no network;
# then, after the install, a pinned base version the archive lacks.
#
#   fresh-root.sh            install and tool checks
#   fresh-root.sh --full     then `make check` and `make demo` in the root
#
# One result line per check ("noarch newcomer TEST pass|fail|skip") on
# stdout, also for the checks a failure kept from running; check.sh
# appends them to build/check/results.tsv.  Exit status non-zero when any
# check or, with --full, the root's make check or make demo failed.
. "$(dirname "$0")/lib.sh"

full=
[ "${1:-}" = --full ] && full=yes
TESTS="not-root no-network install base-version-gone fresh-root"
reported=" "
failed=0
ok() {			# TEST pass|fail|skip
	printf 'noarch\tnewcomer\t%s\t%s\n' "$1" "$2"
	reported="$reported$1 "
	[ "$2" != fail ] || failed=1
}
# The checks that never ran: a line each, so that none goes missing.
finish() {
	local t
	for t in $TESTS; do
		case $reported in *" $t "*) ;; *) ok "$t" "$1" ;; esac
	done
}
skip_all() { log "skipped: $*"; finish skip; exit 0; }

[ "$(id -u)" = 0 ] || skip_all "debootstrap, mount and chroot need root"
# Our own mount namespace: the bind mounts below end with this process,
# however it ends, and never stay behind in the host's view of build/.
if [ -z "${FRESH_ROOT_NS:-}" ]; then
	unshare -m true 2>/dev/null || skip_all "no mount namespace (unshare -m) here"
	exec unshare -m --propagation private env FRESH_ROOT_NS=1 "$0" "$@"
fi
trap 'finish fail' EXIT

if ! command -v debootstrap >/dev/null; then
	log "installing debootstrap"
	DEBIAN_FRONTEND=noninteractive apt-get -q install -y debootstrap > /dev/null ||
		die "cannot install debootstrap"
fi

root=$BUILD/fresh-root
mkdir -p "$BUILD"
flog=$BUILD/fresh-root.log
: > "$flog"
proxies=$(env | grep -Ei '^(https?|no)_proxy=' || true)
in_root() {
	# shellcheck disable=SC2086
	chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		LANG=C.UTF-8 TERM=dumb $proxies "$@"
}

# The Debian archive and suites this machine's apt uses, as apt lists
# them, so that nothing here names a mirror.
suites=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(ORIGIN)' \
	 'Created-By: Packages' 2>/dev/null | awk '$3 == "Debian" { print $1, $2 }' | sort -u)
mirror=$(awk '$2 == "bookworm" { print $1; exit }' <<< "$suites")
[ -n "$mirror" ] || die "this machine's apt has no Debian bookworm archive (run apt-get update?)"

# Nothing of an earlier run may stay mounted in the tree we delete (in
# this namespace; the host's never had these mounts).
awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r |
	while read -r m; do umount -l "$m"; done
rm -rf --one-file-system "$root"
t0=$(date +%s)
log "debootstrap bookworm into $root"
mkdir -p /var/cache/apt/archives
debootstrap --variant=minbase --include=ca-certificates \
	--cache-dir=/var/cache/apt/archives bookworm "$root" "$mirror" >> "$flog" 2>&1 ||
	{ tail -n 20 "$flog" >&2; die "debootstrap failed (see $flog)"; }
log "debootstrap: $(( $(date +%s) - t0 ))s"

# The same Debian suites as this machine (bookworm-security carries
# linux-source-6.12), the host's download cache (apt checks every package
# it takes from it), no services started by package scripts, the kernel
# file systems, and a clone of the project with only git to get it.
rm -f "$root/etc/apt/sources.list"
while read -r uri suite; do
	printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n\n' \
		"$uri" "$suite" /usr/share/keyrings/debian-archive-keyring.gpg
done <<< "$suites" > "$root/etc/apt/sources.list.d/debian.sources"
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod +x "$root/usr/sbin/policy-rc.d"
cp /etc/resolv.conf "$root/etc/resolv.conf"
for m in proc sys dev dev/pts; do mount --bind "/$m" "$root/$m"; done
mount --bind /var/cache/apt/archives "$root/var/cache/apt/archives"
in_root apt-get -q update >> "$flog" 2>&1 &&
	in_root apt-get -q install -y --no-install-recommends git make >> "$flog" 2>&1 ||
	die "cannot install git and make in the fresh root (see $flog)"
proj=/root/perf-sample-ext
git clone -q "$TOP" "$root$proj"

# Bad input first, on the bare root: each must stop with its message.
# Not root (a user's own clone: ~root is not theirs to read).
git clone -q "$root$proj" "$root/tmp/user-clone"
chmod -R a+rX "$root/tmp/user-clone"
msg=$(in_root setpriv --reuid=65534 --regid=65534 --clear-groups \
	make -C /tmp/user-clone deps 2>&1) && rc=0 || rc=$?
rm -rf "$root/tmp/user-clone"
echo "$msg" >> "$flog"
if [ $rc != 0 ] && grep -q "run as root" <<< "$msg"; then ok not-root pass; else ok not-root fail; fi

# No network: an empty network namespace.
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
if [ $rc = 0 ] && grep -q "WARNING: .*using the installed 6\\.12\\.\\|WARNING: falling back to the candidate 6\\.12\\." <<< "$msg"; then
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
xz -t /usr/src/linux-source-6.12.tar.xz || fail "linux-source-6.12 tarball"
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

if [ -n "$full" ]; then
	# The new user's first hour: the README's two commands, timed.
	for target in check demo; do
		t=$(date +%s)
		in_root IN_FRESH_ROOT=1 make -C "$proj" "$target" \
			> "$BUILD/fresh-root-$target.log" 2>&1 && rc=0 || rc=$?
		[ $rc = 0 ] || failed=1
		log "make $target in the fresh root: exit $rc after $(( $(date +%s) - t ))s" \
		    "($BUILD/fresh-root-$target.log)"
	done
	tail -n 3 "$BUILD/fresh-root-check.log" >&2
fi
exit $failed
