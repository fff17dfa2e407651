#!/bin/bash
# make stress: run the ABI stress program (stress/abi_stress.c) for SECONDS
# in one arch's guest, on the test kernel or KFLAVOUR's (kasan:
# build/obj-ARCH-kasan).  vm.sh fails the run on any kernel splat in the
# console.  Prints the program's closing lines and one result line
#   stress ARCH[-kasan] abi-stress.seed-N pass|fail (reason)
# and exits non-zero on a failure.  The console is build/check/stress-ARCH.log.
#   stress.sh ARCH SECONDS [SEED [ARGS...]]
. "$(dirname "$0")/lib.sh"

arch=${1:?usage: stress.sh ARCH SECONDS [SEED [ARGS...]]}
secs=${2:-60}
seed=${3:-}
shift $(($# < 3 ? $# : 3))
out=$BUILD/vm/$arch-stress$(ksuffix)
console=$BUILD/check/stress-$arch$(ksuffix).log
mkdir -p "$BUILD/check"

"$TOP/scripts/build-stress.sh" "$arch"
case $arch in
x86_64) bin=$BUILD/stress-x86_64/abi_stress ;;	# the host root, over 9p
arm64) bin=/opt/project/stress/abi_stress ;;	# initramfs.sh copies it
esac
cmd="$bin --seconds $secs${seed:+ --seed $seed}${*:+ $*}"

rc=0
t0=$(date +%s)
"$TOP/scripts/vm.sh" "$arch" -v -t $((secs + 600)) -o "$out" "$cmd" > "$console" 2>&1 || rc=$?
case $rc in
0) res=pass reason= ;;
3) res=fail reason="kernel splat" ;;
124) res=fail reason="guest timed out" ;;
*) res=fail reason="exit $rc" ;;
esac

# Every line of the program carries its seed.
seed=$(sed -n 's/^abi-stress seed=\([0-9]*\) .*/\1/p' "$console" | head -n 1)
# A failure with its event, attr and the head of its record; then the end.
grep -a -m1 -A24 -E '^abi-stress seed=[0-9]+ FAILURE' "$console" || true
grep -a -E '^abi-stress seed=[0-9]+ (coverage|result)' "$console" || true
[ "$rc" != 3 ] || grep -a -A3 -E '\[ cut here \]|BUG: |KASAN|UBSAN|WARNING: CPU' "$console" | head -40
echo "stress $arch$(ksuffix) abi-stress.seed-${seed:-unknown} $res${reason:+ ($reason)}" \
	"in $(($(date +%s) - t0)) s, console $console"
[ "$res" = pass ]
