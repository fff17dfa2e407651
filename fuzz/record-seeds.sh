#!/bin/sh
# Runs in the x86_64 guest (make fuzz-seeds): records one perf.data per
# new record/sample kind (and header feature) of the series into /tmp/out,
# with the series' perf ($1, default: perf in PATH).
P=${1:-perf}
cd /tmp/out || exit 1
set -x
$P record -q -o tls.data -e cpu-clock -c 2000000 --tls-user=otel \
	-- $P test -w otel_tls 1
$P record -q -o tlsdefer.data -e cpu-clock -c 2000000 --tls-user=otel,defer \
	-- $P test -w otel_tls 1 syscall
$P record -q -o uevent.data -e cpu-clock -c 2000000 --uevents \
	-- $P test -w uevent
$P record -q -o defer.data -e cpu-clock -c 2000000 --call-graph fp,defer \
	-- $P test -w deferred_chain
# -C 0: a CPU-wide recording, with its range-encoded PERF_RECORD_CPU_MAP
$P record -q -o defer.cpu0.data -C 0 -e cpu-clock -c 2000000 \
	--call-graph fp,defer -- taskset -c 0 $P test -w deferred_chain
$P record -q -o auxsample.data -e '{sw_aux//,cpu-clock}' -c 4000000 \
	--aux-sample=256 -- $P test -w noploop 1
$P record -q -o auxtrace.data -e sw_aux// -e cpu-clock -c 4000000 \
	-- $P test -w noploop 1
# HEADER_OTEL_PROCESS_CTX: otel_exe (built beside perf in otel-tls/)
# publishes an OpenTelemetry process context naming keys 0 and 1, which
# perf record keeps in the feature section (tests/shell/record_otel_tls_names.sh)
OTEL_APP_KEYS=http.method,http.route $P record -q -o otelctx.data -e cpu-clock \
	-c 2000000 --tls-user=otel,size=64 -- \
	"$(dirname "$(command -v "$P")")/otel-tls/otel_exe" 1 \
	4bf92f3577b34da6a3ce929d0e0e4736 00f067aa0ba902b7 \
	0003474554010c2f6170692f76312f75736572
# Pipe mode: PERF_RECORD_HEADER_ATTR and the other synthesized records
$P record -q -o - -e cpu-clock -c 2000000 --uevents --tls-user=otel \
	-- $P test -w otel_tls 1 > pipe.data
ls -l
