#!/usr/bin/env python3
"""swap.py IN OUT [--native] [--records N] [--aux N]

Write the little-endian file-mode perf.data IN as OUT: byte-swapped, as a
big-endian machine would have written it (default), or with --native in
the same byte order; both trimmed alike (samples, AUXTRACE buffer bytes) and with only the features the converter knows how to swap,
so that `perf script` of the two gives the same output.
"""
import argparse
import perfdata

ap = argparse.ArgumentParser()
ap.add_argument("inp")
ap.add_argument("out")
ap.add_argument("--native", action="store_true")
ap.add_argument("--records", type=int)
ap.add_argument("--aux", type=int)
a = ap.parse_args()
pd = perfdata.PerfData(a.inp)
n = pd.save(a.out, swap=not a.native, max_records=a.records,
            max_aux=a.aux)
print("%s: %d bytes" % (a.out, n))
