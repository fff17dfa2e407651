#!/bin/bash
# The README's "Applying it to your own 6.12 tree" command, taken literally
# from README.md (not retyped here), run against a fresh checkout of the
# base tree with ~/perf-sample-ext meaning this checkout.  Passes when every
# patch of patches/series is applied, in order, with its subject.
#   needs build/series (scripts/series.sh mbox build/series)
. "$(dirname "$0")/lib.sh"

cmd=$(awk '/^### Applying it to your own 6.12 tree/ { on = 1; next }
	   on && /^#/ { exit }
	   on && /^    .*git am / { sub(/^    /, ""); print; exit }' "$TOP/README.md")
[ -n "$cmd" ] || die "README.md has no git am command under 'Applying it to your own 6.12 tree'"
[ -s "$BUILD"/series/series.mbox ] ||
	die "no $BUILD/series: run scripts/series.sh mbox $BUILD/series"

# A home of its own: ~/perf-sample-ext/build is this checkout's build
# directory, ~/src/linux-6.12.y a fresh worktree of the untouched base, and
# a git identity of its own, as git am needs one (the scripts' committer
# variables are not passed on).
home=$(mktemp -d)
trap 'git -C "$TREE" worktree remove --force "$home/src/linux-6.12.y" 2>/dev/null; rm -rf "$home"' EXIT
mkdir -p "$home/src" "$home/perf-sample-ext"
ln -s "$BUILD" "$home/perf-sample-ext/build"
printf '[user]\n\tname = readme-apply\n\temail = readme-apply@localhost\n' > "$home/.gitconfig"
git -C "$TREE" worktree add -q --detach "$home/src/linux-6.12.y" base
log "running the README's command: $cmd"
HOME=$home env -u GIT_COMMITTER_NAME -u GIT_COMMITTER_EMAIL -u GIT_COMMITTER_DATE \
	bash -c "$cmd" > "$home/am.log" 2>&1 || {
	sed 's/^/  /' "$home/am.log" >&2
	die "the README's apply command failed"
}

want=$(grep -c '\.patch$' "$TOP/patches/series")
got=$(git -C "$home/src/linux-6.12.y" rev-list --count base..HEAD)
[ "$got" = "$want" ] || die "the README's command applied $got patches, the series has $want"
# Each commit's subject is its patch's subject, in series order.
git -C "$home/src/linux-6.12.y" log --reverse --format=%s base..HEAD > "$home/subjects"
for p in $(for s in $(cat "$BUILD/series/subseries"); do ls "$BUILD/series/$s"/0*.patch; done); do
	case $p in */0000-cover-letter.patch) continue ;; esac
	git -C "$TREE" mailinfo /dev/null /dev/null < "$p" | sed -n 's/^Subject: //p'
done > "$home/want"
diff -u "$home/want" "$home/subjects" >&2 || die "applied commits differ from the series"
log "all $want patches applied by the README's command"
