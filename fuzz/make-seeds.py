#!/usr/bin/env python3
"""make-seeds.py RECDIR: the seeds of fuzz/seeds/ from the perf.data files
record-seeds.sh recorded in the guest: each trimmed (KIND.data) and
byte-swapped (KIND.be.data), the pipe-mode stream cut after its first
records (pipe.data)."""
import os
import struct
import sys

import perfdata

rec = sys.argv[1]
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")
os.makedirs(out, exist_ok=True)
# samples (and deferred, AUX records) kept per seed, AUXTRACE bytes kept
TRIM = dict(max_records=40, max_aux=2048)
for kind in ("tls", "tlsdefer", "uevent", "defer", "defer.cpu0", "auxsample",
             "auxtrace", "otelctx"):
    pd = perfdata.PerfData(os.path.join(rec, kind + ".data"))
    n1 = pd.save(os.path.join(out, kind + ".data"), **TRIM)
    n2 = pd.save(os.path.join(out, kind + ".be.data"), swap=True, **TRIM)
    print("%s: %d bytes, byte-swapped %d bytes" % (kind, n1, n2))

# pipe mode: the 16-byte header, then records up to about 12 KB
b = open(os.path.join(rec, "pipe.data"), "rb").read()
pos = 16
while pos + 8 <= len(b) and pos < 12000:
    typ, _, size = struct.unpack_from("<IHH", b, pos)
    pos += size
open(os.path.join(out, "pipe.data"), "wb").write(b[:pos])
print("pipe: %d bytes" % pos)
