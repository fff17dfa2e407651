#!/usr/bin/env python3
"""Mutation fuzzer for perf's readers of the series' records.

fuzz.py --perf PERF [--mutants N | --seconds S] [--kinds K,..] [--seed N]
        [--jobs N] [--keep DIR]

For each record kind, mutants of the seeds of that kind (fuzz/seeds/, a
little-endian file and its byte-swapped .be twin, or a pipe-mode stream)
go to `perf script`, `perf report -D` and `perf report --stdio` in turn.
A mutation hits the records of its kind: bit flips, a header.size or a
length field set to a boundary value, the file truncated inside the
record, the record's type swapped for another.  The otelctx kind is the
series' header feature HEADER_OTEL_PROCESS_CTX (bit 255, the last
section) instead: bit flips in it, its nr, nr_keys and string lengths
set to boundary values, the file cut inside it, its size and offset in
the feature table, another feature bit set before it, a context repeated;
its mutants go to `perf report --header-only` too, which prints it.
A crash is a signal or a sanitizer report (perf built with
-fsanitize=address,undefined, see build-perf-asan.sh); an exit status
with an error message is fine.
Every regression seed (fuzz/regress/KIND-*.data, a mutant that once
crashed perf) is replayed first, then every seed of the kind must be read
by all of them with exit status 0.  One line per kind on stdout:
KIND<TAB>pass|fail<TAB>mutants<TAB>crashes<TAB>seconds; crashing mutants
are kept in --keep with their stderr.
"""
import argparse
import concurrent.futures
import glob
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SEEDS = os.path.join(HERE, "seeds")
REGRESS = os.path.join(HERE, "regress")

SAMPLE, CALLCHAIN_DEFERRED, TLS_USER_DEFERRED, UEVENT = 9, 22, 62, 63
HEADER_ATTR, AUXTRACE_INFO, AUXTRACE = 64, 70, 71
THREAD_MAP, CPU_MAP = 73, 74
OTEL_CTX = 255          # HEADER_OTEL_PROCESS_CTX, a feature bit
S_AUX, S_CALLCHAIN, S_TLS_USER = 1 << 20, 1 << 5, 1 << 62

# kind: (seed file stems, record types it mutates, sample_type bit whose
# samples it mutates too)
KINDS = {
    "tls":       (["tls"], set(), S_TLS_USER),
    # --tls-user=otel,defer: the samples' cookies and the records
    "tlsdefer":  (["tlsdefer"], {TLS_USER_DEFERRED}, S_TLS_USER),
    "uevent":    (["uevent"], {UEVENT}, 0),
    "deferred":  (["defer"], {CALLCHAIN_DEFERRED}, S_CALLCHAIN),
    "auxsample": (["auxsample"], {AUXTRACE_INFO}, S_AUX),
    "auxtrace":  (["auxtrace"], {AUXTRACE, AUXTRACE_INFO}, 0),
    # attrs (the header section, or HEADER_ATTR records in a pipe) and
    # the thread and CPU maps; defer.cpu0 was recorded on one CPU
    "attr":      (["pipe", "tls", "uevent", "defer"],
                  {HEADER_ATTR, THREAD_MAP, CPU_MAP}, 0),
    # the feature section HEADER_OTEL_PROCESS_CTX of perf record
    # --tls-user: the key names of the process contexts (mutate_otelctx)
    "otelctx":   (["otelctx"], set(), 0),
}
COMMANDS = [["script"], ["report", "-D"], ["report", "--stdio"]]
# per kind, when not COMMANDS
KIND_COMMANDS = {"otelctx": COMMANDS + [["report", "--header-only"]]}
SAN_MARKS = (b"ERROR: AddressSanitizer", b"runtime error:",
             b"ERROR: LeakSanitizer", b"UndefinedBehaviorSanitizer",
             b"AddressSanitizer:DEADLYSIGNAL")
INTERESTING = [0, 1, 7, 8, 9, 15, 16, 17, 24, 31, 32, 63, 64, 255, 256,
               0x7fff, 0x8000, 0xfff8, 0xffff, 0x10000, 0x7fffffff,
               0xffffffff, 1 << 32, 1 << 63, (1 << 64) - 1, (1 << 64) - 8]


class Seed:
    """A seed file and where its records are."""

    def __init__(self, path):
        self.path = path
        self.data = open(path, "rb").read()
        magic = self.data[:8]
        self.pipe = False
        if magic in (b"PERFILE2", b"2ELIFREP"):
            self.e = "<" if magic == b"PERFILE2" else ">"
            hdr_size = struct.unpack_from(self.e + "Q", self.data, 8)[0]
            if hdr_size == 16:          # pipe mode: records follow
                self.pipe, start, end = True, 16, len(self.data)
            else:
                start, size = struct.unpack_from(self.e + "QQ", self.data, 40)
                end = start + size
                # the attrs section, for the attr kind of file mode
                a_off, a_size = struct.unpack_from(self.e + "QQ", self.data, 24)
                self.attrs = (a_off, a_size)
        else:
            raise ValueError(path)
        self.feats = {}         # bit: (offset of its table entry, offset, size)
        if not self.pipe:
            bits = struct.unpack_from(self.e + "4Q", self.data, 72)
            tpos = end
            for bit in range(256):
                if bits[bit // 64] >> (bit % 64) & 1:
                    off, fsize = struct.unpack_from(self.e + "QQ", self.data, tpos)
                    self.feats[bit] = (tpos, off, fsize)
                    tpos += 16
        self.otel_fields, self.otel_ctxs = self.read_otel_ctx()
        self.sample_types = self.read_sample_types()
        self.records = []       # (offset, type, size)
        pos = start
        while pos + 8 <= end:
            t, _, s = struct.unpack_from(self.e + "IHH", self.data, pos)
            if s < 8:
                break
            self.records.append((pos, t, s))
            if t == AUXTRACE:
                s += struct.unpack_from(self.e + "Q", self.data, pos + 8)[0]
            pos += s

    def read_sample_types(self):
        st = 0
        if self.pipe:
            return st
        a_off, a_size = struct.unpack_from(self.e + "QQ", self.data, 24)
        attr_size = struct.unpack_from(self.e + "Q", self.data, 16)[0]
        for off in range(a_off, a_off + a_size, attr_size):
            st |= struct.unpack_from(self.e + "Q", self.data, off + 24)[0]
        return st

    def read_otel_ctx(self):
        """The fields of HEADER_OTEL_PROCESS_CTX: [(offset, width, name)],
        and where each context is: [(start, end)]."""
        if OTEL_CTX not in self.feats:
            return [], []
        _, off, size = self.feats[OTEL_CTX]
        end = min(off + size, len(self.data))
        e, fields, ctxs = self.e, [], []
        if off + 4 > end:
            return fields, ctxs
        nr = struct.unpack_from(e + "I", self.data, off)[0]
        fields.append((off, 4, "nr"))
        p = off + 4
        for i in range(nr):
            if p + 16 > end:
                break
            start = p
            nr_keys = struct.unpack_from(e + "I", self.data, p + 4)[0]
            fields += [(p, 4, "pid"), (p + 4, 4, "nr_keys"),
                       (p + 8, 8, "published_at_ns")]
            p += 16
            for k in range(nr_keys + 1):
                if p + 4 > end:
                    break
                fields.append((p, 4, "len of " +
                               ("schema_version" if not k else "key %d" % (k - 1))))
                p += 4 + struct.unpack_from(e + "I", self.data, p)[0]
            ctxs.append((start, min(p, end)))
        return fields, ctxs

    def targets(self, types, sample_bit):
        t = [r for r in self.records if r[1] in types]
        if sample_bit and self.sample_types & sample_bit:
            t += [r for r in self.records if r[1] == SAMPLE]
        return t


# for the u32 counts and lengths of HEADER_OTEL_PROCESS_CTX: around
# OTEL_CTX_MAX_KEYS (256) and OTEL_CTX_MAX_STRING + NAME_ALIGN (1088)
OTEL_U32 = [0, 1, 2, 3, 4, 19, 20, 21, 63, 64, 65, 255, 256, 257, 1023,
            1024, 1025, 1087, 1088, 1089, 0x7fff, 0xffff, 0x10000,
            0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff]


def mutate_otelctx(seed, rng):
    """A mutant of the HEADER_OTEL_PROCESS_CTX section of @seed."""
    b = bytearray(seed.data)
    e = seed.e
    tpos, off, size = seed.feats[OTEL_CTX]
    op = rng.choice(["flip", "flip", "field", "field", "field", "u32",
                     "truncate", "size", "offset", "bits", "repeat"])
    if op == "flip":
        for _ in range(rng.randint(1, 8)):
            o = off + rng.randrange(max(size, 1))
            b[o] ^= 1 << rng.randrange(8)
        return bytes(b), "otelctx flip"
    if op == "field" and seed.otel_fields:
        o, width, name = rng.choice(seed.otel_fields)
        if width == 8:
            v = rng.choice(INTERESTING)
            struct.pack_into(e + "Q", b, o, v)
        else:
            cur = struct.unpack_from(e + "I", b, o)[0]
            v = rng.choice(OTEL_U32 + [cur - 1, cur + 1, size, size // 20,
                                       size // 20 + 1, off + size - o,
                                       rng.randrange(1 << 32)]) & 0xffffffff
            struct.pack_into(e + "I", b, o, v)
        return bytes(b), "otelctx %s @%#x = %#x" % (name, o, v)
    if op in ("field", "u32"):
        # any u32 of the section (its fields are all 4-aligned)
        o = off + rng.randrange(max(size // 4, 1)) * 4
        v = rng.choice(OTEL_U32)
        struct.pack_into(e + "I", b, o, v)
        return bytes(b), "otelctx u32 @%#x = %#x" % (o, v)
    if op == "truncate":
        cut = off + rng.randrange(size + 1)
        return bytes(b[:cut]), "otelctx truncate at %#x" % cut
    if op == "size":
        v = rng.choice([0, 1, 3, 4, 19, 20, 21, size - 4, size - 1, size + 1,
                        size + 4, size + 64, 2 * size, len(b) - off,
                        len(b) - off + 1, rng.randrange(size + 1),
                        0x7fffffff, 0xffffffff, 1 << 32, 1 << 63,
                        (1 << 64) - 1]) & ((1 << 64) - 1)
        struct.pack_into(e + "Q", b, tpos + 8, v)
        return bytes(b), "otelctx section size %#x" % v
    if op == "offset":
        v = rng.choice([0, 8, 104, off - 4, off - 1, off + 1, off + 4,
                        off + size - 4, off + size, len(b), len(b) + 1,
                        tpos, rng.randrange(len(b)), 0x7fffffff,
                        0xffffffff, 1 << 63, (1 << 64) - 1]) & ((1 << 64) - 1)
        struct.pack_into(e + "Q", b, tpos, v)
        return bytes(b), "otelctx section offset %#x" % v
    if op == "bits":
        # another feature bit before 255: perf reads the feature table one
        # entry further, and takes 16 bytes past it for bit 255's section
        bit = rng.choice([254, 253, 128, 64, rng.randrange(33, 255)])
        w = struct.unpack_from(e + "Q", b, 72 + 8 * (bit // 64))[0]
        struct.pack_into(e + "Q", b, 72 + 8 * (bit // 64), w | 1 << (bit % 64))
        return bytes(b), "otelctx feature bit %d set too" % bit
    # repeat: one more context, a copy of one there (the same pid, or
    # another), appended when the section ends the file
    if not seed.otel_ctxs or off + size != len(b):
        return bytes(b), "none"
    start, stop = rng.choice(seed.otel_ctxs)
    ctx = bytearray(b[start:stop])
    same = rng.random() < 0.5
    if not same:
        pid = struct.unpack_from(e + "I", ctx, 0)[0]
        struct.pack_into(e + "I", ctx, 0, (pid + 1) & 0xffffffff)
    nr = struct.unpack_from(e + "I", b, off)[0]
    struct.pack_into(e + "I", b, off, (nr + 1) & 0xffffffff)
    struct.pack_into(e + "Q", b, tpos + 8, size + len(ctx))
    return bytes(b + ctx), "otelctx context repeated (%s pid)" % \
        ("the same" if same else "another")


def mutate(seed, targets, rng, kind):
    """A mutant of @seed: bytes, and what was done."""
    if kind == "otelctx":
        return mutate_otelctx(seed, rng)
    b = bytearray(seed.data)
    e = seed.e
    if kind == "attr" and not seed.pipe and (not targets or rng.random() < 0.5):
        # the attr section of a file: its size field and ids section
        a_off, a_size = seed.attrs
        off = a_off + rng.randrange(max(a_size, 1))
        op = rng.choice(["flip", "size"])
        if op == "size":
            struct.pack_into(e + "I", b, a_off + 4, rng.choice(INTERESTING) & 0xffffffff)
            return bytes(b), "attr.size"
        b[off] ^= 1 << rng.randrange(8)
        return bytes(b), "attr flip @%#x" % off
    pos, typ, size = rng.choice(targets)
    op = rng.choice(["flip", "flip", "size", "field", "field", "truncate", "type"])
    if op == "flip":
        for _ in range(rng.randint(1, 8)):
            off = pos + rng.randrange(size)
            b[off] ^= 1 << rng.randrange(8)
        return bytes(b), "flip record %d@%#x" % (typ, pos)
    if op == "size":
        v = rng.choice([0, 1, 7, 8, 9, 12, 15, 16, 17, 23, 24, size - 8,
                        size - 1, size + 1, size + 8, 0xfff8, 0xffff,
                        rng.randrange(0x10000)])
        struct.pack_into(e + "H", b, pos + 6, max(0, min(v, 0xffff)))
        return bytes(b), "header.size %d of record %d@%#x" % (v, typ, pos)
    if op == "field":
        # a u32 or u64 length/count field of the record body
        width = rng.choice([4, 8])
        if size <= 8 + width:
            return bytes(b), "none"
        off = pos + 8 + rng.randrange((size - 8 - width) // width + 1) * width
        v = rng.choice(INTERESTING + [size, size - 16, size // 8])
        if width == 4:
            v &= 0xffffffff
        v &= (1 << 64) - 1
        struct.pack_into(e + ("I" if width == 4 else "Q"), b, off, v)
        return bytes(b), "field%d @%#x = %#x in record %d" % (width * 8, off, v, typ)
    if op == "truncate":
        cut = pos + rng.randrange(size + 1)
        return bytes(b[:cut]), "truncate at %#x in record %d" % (cut, typ)
    new = rng.choice([1, 2, 3, 4, 9, 10, 11, 22, 63, 64, 68, 69, 70, 71, 72,
                      73, 74, 78, 79, 81, 82, rng.randrange(256)])
    struct.pack_into(e + "I", b, pos, new)
    return bytes(b), "type %d -> %d @%#x" % (typ, new, pos)


class Runner:
    def __init__(self, perf, tmp, timeout):
        self.perf, self.tmp, self.timeout = perf, tmp, timeout
        self.symfs = os.path.join(tmp, "symfs")
        os.makedirs(self.symfs, exist_ok=True)
        self.env = dict(os.environ, HOME=tmp, PAGER="cat",
                        ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:"
                        "detect_leaks=0:allocator_may_return_null=1:"
                        "handle_segv=1:handle_abort=1:print_summary=1",
                        UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")

    def run(self, path, cmd, strict=False):
        """None if fine, else what went wrong and its stderr; @strict: an
        error exit is wrong too (an unmutated seed must be read whole)."""
        argv = [self.perf] + cmd + ["-i", path, "-f", "--symfs", self.symfs]
        if cmd[0] == "report":
            argv += ["--no-children"] if cmd[1] == "--stdio" else []
        stdin = open(path, "rb") if path == "-" else subprocess.DEVNULL
        try:
            p = subprocess.run(argv, stdin=stdin, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, env=self.env,
                               timeout=self.timeout, cwd=self.tmp)
        except subprocess.TimeoutExpired as ex:
            return "timeout %ds" % self.timeout, ex.stderr or b""
        err = p.stderr
        if p.returncode < 0:
            return "signal %d" % -p.returncode, err
        for m in SAN_MARKS:
            if m in err:
                return "sanitizer report", err
        if strict and p.returncode:
            return "exit %d on an unmutated seed" % p.returncode, err
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--perf", required=True)
    ap.add_argument("--mutants", type=int, default=10000,
                    help="mutants per kind")
    ap.add_argument("--seconds", type=float,
                    help="time per kind instead of a count")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=30)
    ap.add_argument("--jobs", type=int, default=1,
                    help="perf processes run at once")
    ap.add_argument("--keep", default=None)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="perf-fuzz.")
    runner = Runner(os.path.abspath(a.perf), tmp, a.timeout)
    keep = a.keep or os.path.join(tmp, "crashes")
    os.makedirs(keep, exist_ok=True)
    pool = concurrent.futures.ThreadPoolExecutor(max(a.jobs, 1))
    rc = 0
    totals = [0, 0, 0.0]
    for kind in a.kinds.split(","):
        stems, types, sample_bit = KINDS[kind]
        commands = KIND_COMMANDS.get(kind, COMMANDS)
        t0 = time.time()
        crashes = n = 0

        def keep_crash(path, what, cmd, r):
            """Keep a mutant that crashed perf, with its stderr."""
            nonlocal crashes
            crashes += 1
            name = os.path.join(keep, "%s-%d" % (kind, crashes))
            shutil.copy(path, name + ".data")
            with open(name + ".txt", "wb") as f:
                f.write(("%s: perf %s: %s\n" % (what, " ".join(cmd), r[0])).encode())
                f.write(r[1][-20000:])
            print("CRASH %s: %s: perf %s: %s (%s.data)" %
                  (kind, what, " ".join(cmd), r[0], name), file=sys.stderr)

        def read_whole(path, what, strict=False):
            """All readers on @path, up to the first that fails."""
            for cmd in commands:
                r = runner.run(path, cmd, strict)
                if r:
                    keep_crash(path, what, cmd, r)
                    return

        for reg in sorted(glob.glob(os.path.join(REGRESS, kind + "-*.data"))):
            read_whole(reg, "regression " + os.path.basename(reg))
            n += 1
        seeds = []
        for stem in stems:
            for p in sorted(glob.glob(os.path.join(SEEDS, stem + ".*data"))):
                s = Seed(p)
                t = s.targets(types, sample_bit)
                if t or (kind == "attr" and not s.pipe) or \
                        (kind == "otelctx" and OTEL_CTX in s.feats):
                    seeds.append((s, t))
                read_whole(p, "seed", strict=True)
        if not seeds:
            # nothing to mutate: the seeds are missing or lack the records
            print("%s: no seed with what the kind mutates in %s" % (kind, SEEDS),
                  file=sys.stderr)
            print("%s\tfail\t%d\t%d\t%.0f" % (kind, n, crashes + 1,
                                               time.time() - t0), flush=True)
            rc = 1
            continue
        rng = random.Random("%s-%d" % (kind, a.seed))

        def one(i):
            """Mutant i to one reader, in turn; its result and where it is."""
            s, t = seeds[i % len(seeds)] if kind != "attr" else rng.choice(seeds)
            data, what = mutate(s, t, rng, kind)
            mpath = os.path.join(tmp, "mutant-%d.data" % i)
            with open(mpath, "wb") as f:
                f.write(data)
            cmd = commands[i % len(commands)]
            return mpath, os.path.basename(s.path) + " " + what, cmd, \
                pool.submit(runner.run, mpath, cmd)

        # mutants are made here, in order, so a seed gives the same ones
        # whatever --jobs is; up to 2 x jobs are in flight
        inflight = []
        i = 0
        while True:
            if a.seconds is not None:
                more = time.time() - t0 < a.seconds
            else:
                more = i < a.mutants
            if more and len(inflight) < 2 * max(a.jobs, 1):
                inflight.append(one(i))
                i += 1
                continue
            if not inflight:
                break
            mpath, what, cmd, fut = inflight.pop(0)
            r = fut.result()
            if r:
                keep_crash(mpath, what, cmd, r)
            os.unlink(mpath)
            n += 1
        dt = time.time() - t0
        totals[0] += n
        totals[1] += crashes
        totals[2] += dt
        print("%s\t%s\t%d\t%d\t%.0f" % (kind, "fail" if crashes else "pass",
                                        n, crashes, dt), flush=True)
        rc |= bool(crashes)
    print("total: %d mutants, %d crashes, %.0f s, %.1f mutants/s" %
          (totals[0], totals[1], totals[2], totals[0] / max(totals[2], 1e-9)),
          file=sys.stderr)
    pool.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
