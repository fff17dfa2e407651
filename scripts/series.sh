#!/bin/bash
# The series is a stack of sub-series, one per feature.  It is kept as
# patches/subseries (the sub-series in stack order, their sizes and what
# each applies on), patches/series (the order of the patches, and which
# plain files of this repository each adds), patches/SUB/*.patch and
# patches/SUB/cover-letter, and the overlay roots: every file the series
# adds is a plain file there, in its final form.  The patch that adds it
# adds the form it had then: the plain file with the later patches that
# change it taken back.
#
#   series.sh assemble          base + series -> branch "series" of build/linux
#   series.sh export            commits base..HEAD of build/linux -> this repo
#   series.sh mbox DIR [SUB..]  git-am-able sub-series (SUB.. and what they
#                               apply on; all by default) -> DIR
#   series.sh roundtrip         assemble, export to a scratch dir, compare bytes
#   series.sh subseries         each sub-series' name, size and what it needs
#   series.sh tip SUB..         the commit of SUB.. on what they need (object store)
. "$(dirname "$0")/lib.sh"

SERIES=$TOP/patches/series
SUBSERIES=$TOP/patches/subseries
ASSEMBLED=refs/series/assembled

# "name count needs..." per sub-series, in stack order.
subseries() { awk '!/^#/ && NF' "$SUBSERIES"; }

# The sub-series SUB.. and, before them, every sub-series they need, in
# stack order.
with_needs() {
	local want=" $* " changed=1 name count needs n
	while [ $changed = 1 ]; do
		changed=0
		while read -r name count needs; do
			case $want in *" $name "*) ;; *) continue ;; esac
			for n in $needs; do
				[ "$n" = - ] && continue
				case $want in *" $n "*) ;; *) want="$want$n "; changed=1 ;; esac
			done
		done < <(subseries)
	done
	for n in $*; do
		subseries | awk -v n="$n" '$1 == n { f = 1 } END { exit !f }' ||
			die "no sub-series $n (patches/subseries has: $(subseries | cut -d' ' -f1 | xargs))"
	done
	subseries | while read -r name count needs; do
		case $want in *" $name "*) echo "$name" ;; esac
	done
}

# "patch overlay-file..." per line, from patches/series.
series_entries() {
	awk '/^#/ || /^[ \t]*$/ { next }
	     /^[ \t]/ { files = files " " $1; next }
	     { if (p != "") print p files; p = $1; files = "" }
	     END { if (p != "") print p files }' "$SERIES"
}

# assemble SRC-DIR [SUB..]: build the commits of the sub-series SUB.. (all
# by default) in the object store only (a private index, no work tree),
# print the last one.
assemble_commits() {
	local src=$1 parent tmp patch files f p mode blob tree k j n subs entries
	shift
	subs=" $(if [ $# = 0 ]; then subseries | cut -d' ' -f1 | xargs; else echo "$*"; fi) "
	tmp=$(mktemp -d)
	parent=$(git -C "$TREE" rev-parse base)
	mapfile -t entries < <(series_entries)
	n=${#entries[@]}
	for ((k = 0; k < n; k++)); do
		git -C "$TREE" mailinfo -b "$tmp/msg.$k" "$tmp/diff.$k" \
			< "$src/patches/${entries[k]%% *}" > "$tmp/info.$k"
	done
	export GIT_INDEX_FILE=$tmp/index
	git -C "$TREE" read-tree base
	for ((k = 0; k < n; k++)); do
		read -r patch files <<< "${entries[k]}"
		case $subs in *" ${patch%%/*} "*) ;; *) continue ;; esac
		if grep -q '^diff --git ' "$tmp/diff.$k"; then
			git -C "$TREE" apply --cached --whitespace=nowarn "$tmp/diff.$k" ||
				die "$patch does not apply"
		fi
		for f in $files; do
			[ -f "$src/$f" ] || die "$patch: overlay file $f is missing"
			p=$(repo_to_tree "$f")
			mode=100644
			[ -x "$src/$f" ] && mode=100755
			# The plain file, with every later change to it taken back.
			rm -rf "$tmp/w"; mkdir -p "$tmp/w/$(dirname "$p")"
			cp "$src/$f" "$tmp/w/$p"
			for ((j = n - 1; j > k; j--)); do
				grep -q "^diff --git a/$p b/$p\$" "$tmp/diff.$j" || continue
				(cd "$tmp/w" && git apply -R --include="$p" "$tmp/diff.$j") ||
					die "${entries[j]%% *} does not take back from $f"
			done
			blob=$(git -C "$TREE" hash-object -w "$tmp/w/$p")
			git -C "$TREE" update-index --add --cacheinfo "$mode,$blob,$p"
		done
		tree=$(git -C "$TREE" write-tree)
		{
			sed -n 's/^Subject: //p' "$tmp/info.$k"
			echo
			cat "$tmp/msg.$k"
		} > "$tmp/message"
		parent=$(
			GIT_AUTHOR_NAME=$(sed -n 's/^Author: //p' "$tmp/info.$k") \
			GIT_AUTHOR_EMAIL=$(sed -n 's/^Email: //p' "$tmp/info.$k") \
			GIT_AUTHOR_DATE=$(sed -n 's/^Date: //p' "$tmp/info.$k") \
			git -C "$TREE" commit-tree "$tree" -p "$parent" -F "$tmp/message")
	done
	unset GIT_INDEX_FILE
	rm -rf "$tmp"
	echo "$parent"
}

cmd_assemble() {
	local new old head
	new=$(assemble_commits "$TOP")
	old=$(git -C "$TREE" rev-parse -q --verify "$ASSEMBLED" || true)
	head=$(git -C "$TREE" rev-parse HEAD)
	[ "$head" = "$new" ] && return 0
	if [ "$head" != "$(git -C "$TREE" rev-parse base)" ] && [ "$head" != "$old" ] &&
	   [ -z "${FORCE:-}" ]; then
		die "build/linux has commits that are not in patches/: run 'make export' first (or FORCE=1 to drop them)"
	fi
	if [ -n "$(git -C "$TREE" status --porcelain --untracked-files=no)" ] && [ -z "${FORCE:-}" ]; then
		die "build/linux has uncommitted changes: commit and 'make export' them (or FORCE=1 to drop them)"
	fi
	# Only files that differ are rewritten, so kernel builds stay incremental.
	git -C "$TREE" checkout -q -B series "$new"
	git -C "$TREE" reset -q --hard "$new"
	git -C "$TREE" update-ref "$ASSEMBLED" "$new"
	log "build/linux: $(git -C "$TREE" rev-list --count base.."$new") patches on base"
}

# export TIP OUT-DIR: write patches/ and the overlay files for base..TIP,
# the commits taken in the order and sizes of patches/subseries.
export_commits() {
	local tip=$1 out=$2 n=0 c name f files excl sub left=0 subs prev=
	subs=$(subseries | awk '{ for (i = 0; i < $2; i++) print $1 }')
	[ "$(echo "$subs" | wc -l)" = "$(git -C "$TREE" rev-list --count base.."$tip")" ] ||
		die "patches/subseries counts $(echo "$subs" | wc -l) patches, base..$tip has $(git -C "$TREE" rev-list --count base.."$tip")"
	mkdir -p "$out/patches"
	rm -f "$out"/patches/*/*.patch
	{
		echo "# The series, in order (sub-series: patches/subseries).  Indented lines"
		echo "# under a patch name the plain files of this repository that the patch"
		echo "# adds to the tree (see README.md)."
	} > "$out/patches/series"
	for c in $(git -C "$TREE" rev-list --reverse base.."$tip"); do
		left=$((left + 1))
		sub=$(echo "$subs" | sed -n "${left}p")
		[ "$sub" = "${prev:-}" ] || n=0
		prev=$sub n=$((n + 1))
		mkdir -p "$out/patches/$sub"
		name=$sub/$(printf '%04d-%s.patch' "$n" "$(git -C "$TREE" log -1 --format=%f "$c" | cut -c1-52 | sed "s/-*$//")")
		files="" excl=""
		# A new file under an overlay root is kept as a plain file, in
		# its form at TIP; later patches keep their changes to it.
		while IFS= read -r f; do
			case $f in kernel/configs/*) continue ;; esac
			( tree_to_repo "$f" ) >/dev/null 2>&1 || continue
			files="$files $(tree_to_repo "$f")"
			excl="$excl :(exclude)$f"
			mkdir -p "$out/$(dirname "$(tree_to_repo "$f")")"
			git -C "$TREE" show "$tip:$f" > "$out/$(tree_to_repo "$f")"
			if [ "$(git -C "$TREE" ls-tree "$tip" -- "$f" | cut -c1-6)" = 100755 ]; then
				chmod 755 "$out/$(tree_to_repo "$f")"
			else
				chmod 644 "$out/$(tree_to_repo "$f")"
			fi
		done < <(git -C "$TREE" diff-tree --no-commit-id --diff-filter=A --name-only -r "$c")
		# The range, not -1: with a path limit, -1 would walk back to the
		# last commit that touches the paths when this one touches none.
		# shellcheck disable=SC2086
		git -C "$TREE" format-patch --stdout --zero-commit --no-signature \
			"$c^..$c" -- . $excl > "$out/patches/$name"
		if [ ! -s "$out/patches/$name" ]; then
			{ git -C "$TREE" show -s --format=email --zero-commit "$c" 2>/dev/null ||
			  git -C "$TREE" show -s --format=email "$c" | sed '1s/^From [0-9a-f]*/From 0000000000000000000000000000000000000000/'
			  echo "---"; } > "$out/patches/$name"
		fi
		echo "$name" >> "$out/patches/series"
		for f in $files; do printf '\t%s\n' "$f" >> "$out/patches/series"; done
	done
}

cmd_export() {
	local f
	# Overlay files the old series listed and the new one does not are removed.
	for f in $(series_entries | cut -s -d' ' -f2-); do rm -f "$TOP/$f"; done
	rm -f "$TOP"/patches/*.patch
	export_commits HEAD "$TOP"
	git -C "$TREE" update-ref "$ASSEMBLED" HEAD
	log "exported $(grep -c '\.patch$' "$SERIES") patches"
}

cmd_mbox() {
	local out tip subs sub count needs prev footer from to
	out=$(realpath -m "${1:?usage: series.sh mbox DIR [SUB..]}")
	shift
	subs=$(with_needs "${@:-$(subseries | cut -d' ' -f1 | xargs)}")
	# shellcheck disable=SC2086
	tip=$(assemble_commits "$TOP" $subs)
	rm -rf "$out"; mkdir -p "$out"
	to=$tip
	# Each sub-series as a thread of its own, with its cover letter
	# (patches/SUB/cover-letter: subject, then body) and a footer that
	# names the stack and what base-commit is, last first.
	for sub in $(echo "$subs" | tac); do
		count=$(subseries | awk -v s="$sub" '$1 == s { print $2 }')
		needs=$(subseries | awk -v s="$sub" '$1 == s { $1 = $2 = ""; sub(/^ +/, ""); gsub(/ /, ", "); print }')
		prev=$(echo "$subs" | grep -B1 -x "$sub" | grep -vx "$sub" || true)
		from=$(git -C "$TREE" rev-parse "$to~$count")
		git -C "$TREE" format-patch -q --cover-letter --zero-commit --no-signature \
			--thread --base="$from" -o "$out/$sub" "$from..$to"
		prev=${prev:+the top of $prev, which it follows in that stack}
		footer=$(printf 'Sent as one stack, in this order: %s. base-commit below is %s; this sub-series needs only %s (patches/subseries).\n' \
			"$(echo "$subs" | paste -sd, | sed 's/,/, /g')" "${prev:-the 6.12 base}" \
			"${needs/#-/the 6.12 base}" | fmt -w 72)
		awk -v cl="$TOP/patches/$sub/cover-letter" -v footer="$footer" '
			/\*\*\* SUBJECT HERE \*\*\*/ { getline subj < cl; sub(/\*\*\* SUBJECT HERE \*\*\*/, subj) }
			/^\*\*\* BLURB HERE \*\*\*$/ {
				while ((getline l < cl) > 0) print l
				print ""
				print footer
				next
			}
			{ print }' "$out/$sub/0000-cover-letter.patch" > "$out/cover.tmp"
		mv "$out/cover.tmp" "$out/$sub/0000-cover-letter.patch"
		to=$from
	done
	# The whole stack chosen, for one git am.
	for sub in $subs; do
		for f in "$out/$sub"/0*.patch; do
			case $f in */0000-cover-letter.patch) ;; *) cat "$f" ;; esac
		done
	done > "$out/series.mbox"
	echo "$subs" > "$out/subseries"
	log "$(echo $subs | wc -w) sub-series, $(grep -c '^From 0' "$out/series.mbox") patches in $out (one git am: $out/series.mbox)"
}

cmd_roundtrip() {
	local tip scratch f rc=0
	tip=$(assemble_commits "$TOP")
	scratch=$(mktemp -d)
	export_commits "$tip" "$scratch"
	for f in $(cd "$scratch" && find . -type f | sort); do
		if ! cmp -s "$scratch/$f" "$TOP/$f"; then
			log "round trip changed ${f#./}"; diff -u "$TOP/$f" "$scratch/$f" | head -20 >&2; rc=1
		fi
	done
	for f in "$TOP"/patches/*/*.patch; do
		[ -e "$f" ] || continue
		[ -f "$scratch/patches/${f#"$TOP"/patches/}" ] || { log "round trip lost ${f#"$TOP"/}"; rc=1; }
	done
	rm -rf "$scratch"
	return $rc
}

cmd_subseries() { subseries; }

# tip SUB..: SUB.. on what they need, in the object store; print the last commit.
cmd_tip() {
	# shellcheck disable=SC2046
	assemble_commits "$TOP" $(with_needs "${@:?usage: series.sh tip SUB..}")
}

cmd=${1:-}; shift || true
case $cmd in
assemble|export|mbox|roundtrip|subseries|tip) "cmd_$cmd" "$@" ;;
*) die "usage: series.sh assemble|export|mbox DIR [SUB..]|roundtrip|subseries|tip SUB.." ;;
esac
