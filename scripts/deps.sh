#!/bin/bash
# Install the Debian packages the build, the guests and the tests need,
# but only those that are missing, so a second run costs nothing.
. "$(dirname "$0")/lib.sh"

PACKAGES="build-essential flex bison bc cpio xz-utils kmod pkg-config
	libssl-dev libelf-dev libdw-dev libtraceevent-dev libcap-dev zlib1g-dev libzstd-dev
	qemu-system-x86 qemu-system-arm gcc-aarch64-linux-gnu libc6-dev-arm64-cross
	busybox-static perl python3 python3-ply python3-git"

missing=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' $PACKAGES 2>/dev/null |
	  awk '$2 != "ii" { print $1 }')
for p in $PACKAGES; do
	dpkg-query -W "$p" >/dev/null 2>&1 || missing="$missing $p"
done
missing=$(echo $missing | tr ' ' '\n' | sort -u | tr '\n' ' ')

# The arm64 guest's busybox comes from Debian's arm64 archive.
foreign=
dpkg --print-foreign-architectures | grep -qx arm64 || foreign=arm64

# The kernel source: exactly the pinned version, or the candidate if the
# archive no longer has it (said loudly, and recorded for the run).
have=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || true)
want_src=""
[ "$have" = "$BASE_VERSION" ] || want_src=yes

[ -z "${missing// }" ] && [ -z "$want_src" ] && [ -z "$foreign" ] && exit 0

[ "$(id -u)" = 0 ] || die "missing packages ($missing linux-source-6.12 arch:$foreign) and not root"
export DEBIAN_FRONTEND=noninteractive
log "installing:${missing:+ $missing}${want_src:+ linux-source-6.12=$BASE_VERSION}${foreign:+ (adding dpkg architecture arm64)}"
[ -z "$foreign" ] || dpkg --add-architecture arm64
apt-get update -q >/dev/null
[ -z "${missing// }" ] || apt-get install -y -q --no-install-recommends $missing >/dev/null

if [ -n "$want_src" ]; then
	if apt-get install -y -q --allow-downgrades "linux-source-6.12=$BASE_VERSION" >/dev/null 2>&1; then
		log "linux-source-6.12 $BASE_VERSION installed (pinned)"
	else
		cand=$(apt-cache policy linux-source-6.12 | awk '/Candidate:/ { print $2 }')
		log "WARNING: pinned linux-source-6.12 $BASE_VERSION is gone from the archive;"
		log "WARNING: falling back to the candidate $cand. Update kernel/base-version."
		apt-get install -y -q "linux-source-6.12=$cand" >/dev/null
	fi
fi
