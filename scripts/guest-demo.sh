#!/bin/sh
# Runs inside the x86_64 guest for "make demo": one section per feature of
# the series, each a perf record of a small workload and its perf script.
set -e
cd /tmp

section() { printf '\n### %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }

section "kernel"
uname -r
ls /sys/bus/event_source/devices | tr '\n' ' '; echo

section "plain sampling: cpu-clock with callchains on a busy loop"
show perf record -q -e cpu-clock -c 1000000 -g -o /tmp/plain.data -- perf test -w noploop 1
show perf script -i /tmp/plain.data -F comm,tid,time,ip,sym | head -n 24
