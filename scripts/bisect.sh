#!/bin/bash
# Every patch of the series builds on its own, and every sub-series applies
# and builds on what patches/subseries says it applies on.  Prints result
# lines (arch, kind, what, pass/fail) for make check.
#
#   bisect.sh patches ARCH   each patch of the assembled series, in order:
#                            the kernel objects the series touches, and on
#                            x86_64 perf and the kselftests when the patch
#                            changes them
#   bisect.sh subseries SUB  SUB on what it needs, on the base: applies;
#                            the kernel objects for each arch; perf and the
#                            kselftests (x86_64)
#
# The kernel objects are the .o of every C file the series changes that the
# guest kernel builds, kernel/events/ and kernel/unwind/, compiled in
# build/bisect/obj-ARCH with the guest kernel's configuration (make check
# builds the whole kernel of the full stack).  Builds are incremental from
# one tree to the next, in a work tree of build/linux of their own.
. "$(dirname "$0")/lib.sh"

top=$BUILD/bisect
wt=$top/wt
mkdir -p "$top"
[ -d "$wt" ] || git -C "$TREE" worktree add -q --detach "$wt" base

kmake() {		# arch args...
	local arch=$1; shift
	make -s -C "$wt" O="$top/obj-$arch" ARCH="$(karch "$arch")" \
		CROSS_COMPILE="$(cross "$arch")" "$@"
}

# The objects of the full stack that the guest kernel of ARCH builds.
objects() {
	local f o
	echo kernel/events/
	for f in $(git -C "$TREE" diff --name-only base series -- '*.c'); do
		o=${f%.c}.o
		case $f in tools/*|kernel/events/*|kernel/unwind/*) continue ;; esac
		[ -f "$(kobj "$1")/$o" ] && echo "$o"
	done
}

# kernel_at ARCH COMMIT: check COMMIT out and build the objects there.
kernel_at() {
	local arch=$1 c=$2 obj=$top/obj-$arch tg
	git -C "$wt" checkout -q --detach "$c"
	mkdir -p "$obj"
	cp "$(kobj "$arch")/.config" "$obj/.config"
	tg=$(objects "$arch")
	[ -d "$wt/kernel/unwind" ] && tg="$tg kernel/unwind/"
	kmake "$arch" olddefconfig > "$obj/build.log" 2>&1 &&
		kmake "$arch" -j"$(nproc)" $tg >> "$obj/build.log" 2>&1 ||
		{ grep -E 'error|Error' "$obj/build.log" | head -5 >&2; return 1; }
}

# tools_at ARCH: perf and the kselftests of the checked out tree.
tools_at() {
	local arch=$1
	TREE=$wt PERF_OUT=$top/perf-$arch "$TOP/scripts/build-perf.sh" "$arch" 2> "$top/perf.log" ||
		{ tail -40 "$top/perf.log" >&2; return 1; }
	mkdir -p "$top/selftests-$arch"
	kmake "$arch" headers_install > /dev/null &&
		make -s -C "$wt/tools/testing/selftests/perf_events" \
			OUTPUT="$top/selftests-$arch" \
			KHDR_INCLUDES="-isystem $top/obj-$arch/usr/include" all \
			> "$top/selftests.log" 2>&1 ||
		{ tail -20 "$top/selftests.log" >&2; return 1; }
}

cmd_patches() {
	local arch=${1:?usage: bisect.sh patches ARCH} c n=0 bad=0 what
	for c in $(git -C "$TREE" rev-list --reverse base..series); do
		n=$((n + 1))
		what=kernel
		if kernel_at "$arch" "$c"; then
			if [ "$arch" = x86_64 ] &&
			   [ -n "$(git -C "$TREE" diff --name-only "$c^" "$c" -- tools)" ]; then
				what=tools
				tools_at "$arch" || bad=1
			fi
		else
			bad=1
		fi
		[ $bad = 0 ] ||
			{ log "$arch: patch $n ($(git -C "$TREE" log -1 --format=%s "$c")): $what does not build"; break; }
	done
	log "$arch: $n patches built"
	printf '%s\tbisect\tevery-patch\t%s\n' "$arch" "$([ $bad = 0 ] && echo pass || echo fail)"
}

cmd_subseries() {
	local sub=${1:?usage: bisect.sh subseries SUB} tip arch ok
	if ! tip=$("$TOP/scripts/series.sh" tip "$sub"); then
		printf 'noarch\tsubseries\t%s-applies\tfail\n' "$sub"
		for arch in $ARCHES; do printf '%s\tsubseries\t%s-builds\tfail\n' "$arch" "$sub"; done
		return
	fi
	printf 'noarch\tsubseries\t%s-applies\tpass\n' "$sub"
	for arch in $ARCHES; do
		ok=pass
		kernel_at "$arch" "$tip" || ok=fail
		if [ "$arch" = x86_64 ] && [ $ok = pass ]; then
			tools_at "$arch" || ok=fail
		fi
		printf '%s\tsubseries\t%s-builds\t%s\n' "$arch" "$sub" "$ok"
	done
}

cmd=${1:-}; shift || true
case $cmd in
patches|subseries) "cmd_$cmd" "$@" ;;
*) die "usage: bisect.sh patches ARCH | subseries SUB" ;;
esac
