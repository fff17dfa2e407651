#!/bin/bash
# Install the Debian packages the build, the guests and the tests need,
# but only those that are missing, so a second run costs nothing.
. "$(dirname "$0")/lib.sh"

PACKAGES="build-essential flex bison bc cpio xz-utils kmod pkg-config
	libssl-dev libelf-dev libdw-dev libtraceevent-dev libcap-dev zlib1g-dev libzstd-dev
	qemu-system-x86 qemu-system-arm gcc-aarch64-linux-gnu libc6-dev-arm64-cross
	busybox-static perl python3 python3-ply python3-git
	asciidoc-base xmlto man-db
	golang-go golang-github-google-pprof-dev"

# One query per package: dpkg-query fails for a package dpkg has never
# heard of, which is the normal state of a new machine, not an error.
missing=
for p in $PACKAGES; do
	case $(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true) in
	ii*) ;;
	*) missing="$missing $p" ;;
	esac
done

# The arm64 guest's busybox comes from Debian's arm64 archive.
foreign=
dpkg --print-foreign-architectures | grep -qx arm64 || foreign=arm64

# The kernel source: exactly the pinned version, or, if the archive no
# longer has it, the one installed or else the archive's candidate (said
# loudly; make check's base-tree result line names the version used).
have=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || true)
want_src=""
if [ "$have" != "$BASE_VERSION" ]; then
	if [ -n "$have" ] && ! apt-cache show "linux-source-6.12=$BASE_VERSION" >/dev/null 2>&1; then
		log "WARNING: pinned linux-source-6.12 $BASE_VERSION is not in the archive's package lists;"
		log "WARNING: using the installed $have. Update kernel/base-version."
	else
		want_src=yes
	fi
fi

[ -z "${missing// }" ] && [ -z "$want_src" ] && [ -z "$foreign" ] && exit 0

[ "$(id -u)" = 0 ] || die "missing: ${missing# }${want_src:+ linux-source-6.12=$BASE_VERSION}${foreign:+ (dpkg architecture arm64)}; run as root to install them, or install them yourself"
export DEBIAN_FRONTEND=noninteractive
apt_log=$(mktemp)
trap 'rm -f "$apt_log"' EXIT
apt() {		# apt-get with its output kept for the error message
	apt-get -q "$@" > "$apt_log" 2>&1 && return 0
	tail -n 5 "$apt_log" >&2
	return 1
}
log "installing:${missing:+$missing}${want_src:+ linux-source-6.12=$BASE_VERSION}${foreign:+ (adding dpkg architecture arm64)}"
[ -z "$foreign" ] || dpkg --add-architecture arm64
# --error-on=any: an unreachable archive is an error, not a warning.
apt update --error-on=any ||
	die "apt-get update failed: is the Debian archive in /etc/apt/sources.list* reachable?"
[ -z "${missing// }" ] || apt install -y --no-install-recommends $missing ||
	die "apt-get install failed for:$missing"

if [ -n "$want_src" ]; then
	if apt install -y --allow-downgrades "linux-source-6.12=$BASE_VERSION"; then
		log "linux-source-6.12 $BASE_VERSION installed (pinned)"
	else
		cand=$(apt-cache policy linux-source-6.12 | awk '/Candidate:/ { print $2 }')
		case $cand in ""|"(none)") die "the archive has no linux-source-6.12 at all" ;; esac
		log "WARNING: pinned linux-source-6.12 $BASE_VERSION is gone from the archive;"
		log "WARNING: falling back to the candidate $cand. Update kernel/base-version."
		apt install -y "linux-source-6.12=$cand" || die "cannot install linux-source-6.12=$cand"
	fi
fi
