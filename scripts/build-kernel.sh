#!/bin/bash
# Configure and build the guest kernel for one arch out of tree, in
# build/obj-ARCH: tinyconfig + kernel/configs/{common,ARCH,debug}.config
# (KFLAVOUR=bench: build/obj-ARCH-bench, without debug.config, with bench.config).
# The configuration is made again only when a fragment changes; the build
# itself is the kernel's own incremental make.
. "$(dirname "$0")/lib.sh"

arch=${1:?usage: build-kernel.sh ARCH}
obj=$(kobj "$arch")
frags=$(kfrags "$arch")
kmake() { make -s -C "$TREE" O="$obj" ARCH="$(karch "$arch")" CROSS_COMPILE="$(cross "$arch")" "$@"; }

mkdir -p "$obj"
sum=$(cat $frags | sha256sum | cut -c1-16)
if [ "$(cat "$obj/.config.fragments" 2>/dev/null)" != "$sum" ]; then
	log "$arch: configuring (tinyconfig + $(echo $frags | xargs -n1 basename | tr '\n' ' '))"
	kmake tinyconfig >/dev/null
	KCONFIG_CONFIG="$obj/.config" "$TREE/scripts/kconfig/merge_config.sh" \
		-m -O "$obj" "$obj/.config" $frags >/dev/null
	kmake olddefconfig >/dev/null
	echo "$sum" > "$obj/.config.fragments"
fi

# Every option a fragment asks for must have the asked value, or the guest
# silently lacks what a test needs.
bad=0
for f in $frags; do
	while IFS= read -r line; do
		case $line in CONFIG_*=*) ;; *) continue ;; esac
		sym=${line%%=*} val=${line#*=}
		if [ "$val" = n ]; then
			grep -q "^$sym=" "$obj/.config" && { log "$arch: $sym should be unset"; bad=1; }
		else
			grep -qx "$sym=$val" "$obj/.config" || { log "$arch: $sym=$val did not take"; bad=1; }
		fi
	done < "$f"
done
[ $bad = 0 ] || die "$arch: configuration differs from the fragments"

if stale "$obj/.built" "$TREE" "$obj/.config" "$0"; then log "$arch: building $(kimage "$arch")"; fi
kmake -j"$(nproc)" "$(basename "$(kimage "$arch")")" headers
stamp "$obj/.built"
