#!/bin/bash
# make demo: build what is missing, boot the x86_64 guest and show the
# series at work with perf record / perf script (scripts/guest-demo.sh).
. "$(dirname "$0")/lib.sh"

"$TOP/scripts/deps.sh"
"$TOP/scripts/base-tree.sh"
"$TOP/scripts/series.sh" assemble
"$TOP/scripts/build-kernel.sh" x86_64
"$TOP/scripts/build-perf.sh" x86_64
"$TOP/scripts/vm.sh" x86_64 -o "$BUILD/vm/demo" "sh $TOP/scripts/guest-demo.sh"
