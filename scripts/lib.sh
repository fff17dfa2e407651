# shellcheck shell=bash
# Common settings for the scripts in this directory.  Source it; do not run it.

set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
TREE=${TREE:-$BUILD/linux}             # assembled kernel tree (a git repository)
BASE_VERSION=$(cat "$TOP/kernel/base-version")
ARCHES="x86_64 arm64"

# Commits made by the scripts are reproducible: same inputs, same hashes.
# The project identity: authors and signs the patches, commits the tree.
export GIT_COMMITTER_NAME="Seed 9408bf06 maintainers"
export GIT_COMMITTER_EMAIL="maintainers@users.noreply.a-seed-9408bf06.example"
export GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"

log() { printf '[%s] %s\n' "${0##*/}" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# A build says "building" only when there may be something to build: when
# a file under PATH.. is newer than STAMP, the start of its last build that
# ended well, or there was none.  The build runs anyway: make decides.
#   stale STAMP PATH..   after the build: stamp STAMP
STAMP_T0=$(date +%s.%N)
stale() {
	local stamp=$1; shift
	[ ! -e "$stamp" ] ||
		[ -n "$(find "$@" -path '*/.git' -prune -o -type f -newer "$stamp" -print -quit)" ]
}
stamp() { touch -d "@$STAMP_T0" "$1"; }

# arch -> kernel ARCH, CROSS_COMPILE, image path inside the build directory
karch() { case $1 in x86_64) echo x86 ;; arm64) echo arm64 ;; *) die "unknown arch $1" ;; esac; }
cross() { case $1 in x86_64) echo "" ;; arm64) echo aarch64-linux-gnu- ;; esac; }
kimage() { case $1 in x86_64) echo arch/x86/boot/bzImage ;; arm64) echo arch/arm64/boot/Image ;; esac; }

# Kernel flavour.  "test" kernels carry lockdep and the other debug options
# of kernel/configs/debug.config, so that a splat fails the run; "bench"
# kernels leave them out, as they would dominate every cost measured, and
# add kernel/configs/bench.config (what only the benchmarks use);
# "kasan" kernels are test kernels plus kernel/configs/kasan.config
# (generic KASAN and UBSAN), in build/obj-ARCH-kasan, run on their own:
# make test KFLAVOUR=kasan ARCH=...
KFLAVOUR=${KFLAVOUR:-test}
case $KFLAVOUR in test|bench|kasan) ;; *) die "unknown KFLAVOUR $KFLAVOUR" ;; esac
kobj() { if [ "$KFLAVOUR" = test ]; then echo "$BUILD/obj-$1"; else echo "$BUILD/obj-$1-$KFLAVOUR"; fi; }
# The suffix of the result files and guest directories of a flavour.
ksuffix() { if [ "$KFLAVOUR" = test ]; then echo ""; else echo "-$KFLAVOUR"; fi; }
kfrags() {
	local f
	for f in common "$1" debug kasan bench; do
		[ "$f" = debug ] && [ "$KFLAVOUR" = bench ] && continue
		[ "$f" = kasan ] && [ "$KFLAVOUR" != kasan ] && continue
		[ "$f" = bench ] && [ "$KFLAVOUR" != bench ] && continue
		echo "$TOP/kernel/configs/$f.config"
	done
}

# Overlay roots: a new file kept as a plain file in this repository lives at
# <repo dir>/<path> and at <tree dir>/<path> in the kernel tree.
OVERLAY_ROOTS="kernel:kernel include:include arch:arch Documentation:Documentation
selftests:tools/testing/selftests tools-perf:tools/perf tools-include:tools/include"

repo_to_tree() {
	local p=$1 r
	for r in $OVERLAY_ROOTS; do
		case $p in "${r%%:*}"/*) echo "${r#*:}/${p#*/}"; return ;; esac
	done
	die "$p is not under an overlay root"
}

tree_to_repo() {
	local p=$1 r
	for r in $OVERLAY_ROOTS; do
		case $p in "${r#*:}"/*) echo "${r%%:*}/${p#"${r#*:}"/}"; return ;; esac
	done
	die "$p is not under an overlay root"
}
