#!/bin/bash
# The series is kept as patches/series (the order, and which plain files of
# this repository each patch adds), patches/*.patch (edits to files that
# exist in 6.12) and the overlay roots (new files, kept as plain files).
#
#   series.sh assemble     base + series -> branch "series" of build/linux
#   series.sh export       commits base..HEAD of build/linux -> this repo
#   series.sh mbox DIR     git-am-able series with cover letter -> DIR
#   series.sh roundtrip    assemble, export to a scratch dir, compare bytes
. "$(dirname "$0")/lib.sh"

SERIES=$TOP/patches/series
ASSEMBLED=refs/series/assembled

# "patch overlay-file..." per line, from patches/series.
series_entries() {
	awk '/^#/ || /^[ \t]*$/ { next }
	     /^[ \t]/ { files = files " " $1; next }
	     { if (p != "") print p files; p = $1; files = "" }
	     END { if (p != "") print p files }' "$SERIES"
}

# assemble SRC-DIR: build the commits in the object store only (a private
# index, no work tree), print the last one.
assemble_commits() {
	local src=$1 parent tmp patch files f mode blob tree
	tmp=$(mktemp -d)
	parent=$(git -C "$TREE" rev-parse base)
	export GIT_INDEX_FILE=$tmp/index
	git -C "$TREE" read-tree base
	while read -r patch files; do
		git -C "$TREE" mailinfo -b "$tmp/msg" "$tmp/diff" \
			< "$src/patches/$patch" > "$tmp/info"
		if grep -q '^diff --git ' "$tmp/diff"; then
			git -C "$TREE" apply --cached --whitespace=nowarn "$tmp/diff" ||
				die "$patch does not apply"
		fi
		for f in $files; do
			[ -f "$src/$f" ] || die "$patch: overlay file $f is missing"
			mode=100644
			[ -x "$src/$f" ] && mode=100755
			blob=$(git -C "$TREE" hash-object -w "$src/$f")
			git -C "$TREE" update-index --add --cacheinfo "$mode,$blob,$(repo_to_tree "$f")"
		done
		tree=$(git -C "$TREE" write-tree)
		{
			sed -n 's/^Subject: //p' "$tmp/info"
			echo
			cat "$tmp/msg"
		} > "$tmp/message"
		parent=$(
			GIT_AUTHOR_NAME=$(sed -n 's/^Author: //p' "$tmp/info") \
			GIT_AUTHOR_EMAIL=$(sed -n 's/^Email: //p' "$tmp/info") \
			GIT_AUTHOR_DATE=$(sed -n 's/^Date: //p' "$tmp/info") \
			git -C "$TREE" commit-tree "$tree" -p "$parent" -F "$tmp/message")
	done < <(series_entries)
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

# export TIP OUT-DIR: write patches/ and the overlay files for base..TIP.
export_commits() {
	local tip=$1 out=$2 n=0 c name added f later excl files
	mkdir -p "$out/patches"
	rm -f "$out"/patches/*.patch
	{
		echo "# The series, in order.  Indented lines under a patch name the plain files"
		echo "# of this repository that the patch adds to the tree (see README.md)."
	} > "$out/patches/series"
	for c in $(git -C "$TREE" rev-list --reverse base.."$tip"); do
		n=$((n + 1))
		name=$(printf '%04d-%s.patch' "$n" "$(git -C "$TREE" log -1 --format=%f "$c" | cut -c1-52 | sed "s/-*$//")")
		files="" excl=""
		# A new file under an overlay root that no later patch touches is
		# kept as a plain file; anything else stays a diff in the patch.
		while IFS= read -r f; do
			case $f in kernel/configs/*) continue ;; esac
			( tree_to_repo "$f" ) >/dev/null 2>&1 || continue
			later=$(git -C "$TREE" log --format=%H "$c..$tip" -- "$f")
			[ -z "$later" ] || continue
			files="$files $(tree_to_repo "$f")"
			excl="$excl :(exclude)$f"
			mkdir -p "$out/$(dirname "$(tree_to_repo "$f")")"
			git -C "$TREE" show "$c:$f" > "$out/$(tree_to_repo "$f")"
			if [ "$(git -C "$TREE" ls-tree "$c" -- "$f" | cut -c1-6)" = 100755 ]; then
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
	export_commits HEAD "$TOP"
	git -C "$TREE" update-ref "$ASSEMBLED" HEAD
	log "exported $(grep -c '\.patch$' "$SERIES") patches"
}

cmd_mbox() {
	local out tip
	out=$(realpath -m "${1:?usage: series.sh mbox DIR}")
	tip=$(assemble_commits "$TOP")
	rm -rf "$out"; mkdir -p "$out"
	git -C "$TREE" format-patch -q --cover-letter --zero-commit --no-signature \
		--thread --base=base -o "$out" base.."$tip"
	# patches/cover-letter: its first line is the subject, the rest the blurb.
	awk -v cl="$TOP/patches/cover-letter" '
		/\*\*\* SUBJECT HERE \*\*\*/ { getline subj < cl; sub(/\*\*\* SUBJECT HERE \*\*\*/, subj) }
		/^\*\*\* BLURB HERE \*\*\*$/ { while ((getline l < cl) > 0) print l; next }
		{ print }' "$out/0000-cover-letter.patch" > "$out/cover.tmp"
	mv "$out/cover.tmp" "$out/0000-cover-letter.patch"
	log "$(ls "$out" | wc -l) files in $out"
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
	for f in "$TOP"/patches/*.patch; do
		[ -e "$f" ] || continue
		[ -f "$scratch/patches/${f##*/}" ] || { log "round trip lost ${f##*/}"; rc=1; }
	done
	rm -rf "$scratch"
	return $rc
}

cmd=${1:-}; shift || true
case $cmd in
assemble|export|mbox|roundtrip) "cmd_$cmd" "$@" ;;
*) die "usage: series.sh assemble|export|mbox DIR|roundtrip" ;;
esac
