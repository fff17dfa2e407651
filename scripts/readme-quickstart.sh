#!/bin/bash
# The README's "Quick start", taken literally from README.md (its indented
# command lines, not retyped here), run in order in this checkout as a new
# user would: a clean environment, a scratch home.  Passes when every
# command succeeds, perf script shows the trace and span ids that
# examples/otel_spans.c plants, and perf report puts each span's samples
# in the function that works for it.
#   needs the x86_64 kernel and perf built (make vm builds what is missing)
. "$(dirname "$0")/lib.sh"

mapfile -t cmds < <(awk '/^## Quick start/ { on = 1; next }
	on && /^## / { exit }
	on && /^    [^ ]/ { sub(/^    /, ""); print }' "$TOP/README.md")
[ ${#cmds[@]} -gt 0 ] || die "README.md has no command lines under '## Quick start'"
for want in 'gcc ' 'make vm ' 'perf script ' 'perf report ' '--to-pprof ' 'pprof -tags '; do
	printf '%s\n' "${cmds[@]}" | grep -qF -e "$want" ||
		die "the README's quick start has no '$want' command"
done

# What the example plants: span_enter("TRACE", "SPAN") and, on the next
# line, the function that works for the span.
mapfile -t spans < <(awk '/^[ \t]*span_enter\("/ { split($0, q, "\""); ids = q[2] " " q[4]; next }
	ids != "" && /^[ \t]*[a-z_]+\(\);/ { sub(/^[ \t]*/, ""); sub(/\(.*/, ""); print ids " " $0; ids = "" }' \
	"$TOP/examples/otel_spans.c")
[ ${#spans[@]} -ge 2 ] || die "examples/otel_spans.c plants no spans this script can read"

home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
# What the commands make, so that nothing left from before can pass.
rm -f "$TOP/build/otel_spans" "$TOP/build/vm/x86_64/perf.data" "$TOP/build/profile.pb.gz"
n=0
for cmd in "${cmds[@]}"; do
	n=$((n + 1))
	log "running the README's command: $cmd"
	(cd "$TOP" && env -i PATH="$PATH" HOME="$home" TERM=dumb bash -c "$cmd") \
		> "$home/out.$n" 2>&1 || {
		sed 's/^/  /' "$home/out.$n" >&2
		die "the README's quick start command failed: $cmd"
	}
	case $cmd in
	*"perf script "*) script=$home/out.$n ;;
	*"perf report "*) report=$home/out.$n ;;
	*"pprof -tags "*) tags=$home/out.$n ;;
	esac
done
sed 's/^/  /' "$script" "$report" "$tags" >&2

fail=0
# perf script: the first samples with ids are the first span's.
read -r trace span func <<< "${spans[0]}"
grep -q "trace_id=$trace span_id=$span" "$script" || {
	log "perf script shows no sample with trace_id=$trace span_id=$span"; fail=1; }
# A share of at least 5%, or a failure: PCT WHAT
share() {
	if [ -z "$1" ] || [ "$1" -lt 5 ]; then
		log "less than 5% (${1:-none}): $2"
		fail=1
	else
		log "$1% $2"
	fi
}
for s in "${spans[@]}"; do
	read -r trace span func <<< "$s"
	# perf report: "  70.01%  TRACE  SPAN  [.] FUNC"
	share "$(awk -v t="$trace" -v s="$span" -v f="$func" \
		'$2 == t && $3 == s && $5 == f { sub(/%/, "", $1); print int($1) }' "$report")" \
		"of perf report's samples in $func, trace_id=$trace span_id=$span"
	# pprof -tags: "  1.1s (72.76%): SPAN" under "span_id:"
	share "$(awk -v s="$span" '/^ *[a-z_]+: Total/ { key = $1 }
		key == "span_id:" && $NF == s { gsub(/[(%):]/, "", $2); print int($2) }' "$tags")" \
		"of pprof's time under span_id=$span"
done
[ $fail = 0 ] || die "the README's quick start does not show what it says"
log "the README's quick start works as written (${#cmds[@]} commands)"
