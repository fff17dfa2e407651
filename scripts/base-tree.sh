#!/bin/bash
# Unpack Debian's linux-source-6.12 into build/linux and make it a git
# repository whose first commit, tagged "base", is the untouched source.
. "$(dirname "$0")/lib.sh"

tarball=/usr/src/linux-source-6.12.tar.xz
used=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null) ||
	die "linux-source-6.12 is not installed (run scripts/deps.sh)"
[ "$used" = "$BASE_VERSION" ] ||
	log "WARNING: using linux-source-6.12 $used, not the pinned $BASE_VERSION"

if git -C "$TREE" rev-parse -q --verify "refs/tags/base-${used//\~/_}" >/dev/null 2>&1; then
	exit 0
fi

log "unpacking $tarball ($used) into $TREE"
rm -rf "$TREE" "$TREE.tmp"
mkdir -p "$TREE.tmp"
tar -xJf "$tarball" -C "$TREE.tmp" --strip-components=1
cd "$TREE.tmp"
git init -q -b series
git config core.autocrlf false
git config gc.auto 0
# Debian ships a few files that the kernel's own .gitignore hides; -f keeps
# them so that the base commit is the whole tarball.
git add -A -f .
GIT_AUTHOR_NAME="$GIT_COMMITTER_NAME" GIT_AUTHOR_EMAIL="$GIT_COMMITTER_EMAIL" \
GIT_AUTHOR_DATE="$GIT_COMMITTER_DATE" \
	git commit -q -m "Linux $used (Debian linux-source-6.12)"
git tag base
git tag "base-${used//\~/_}"
cd - >/dev/null
mv "$TREE.tmp" "$TREE"
log "base tree ready: $(git -C "$TREE" rev-parse --short base)"
