"""Read and write perf.data files (file mode) for the fuzz harness.

load() splits a little-endian perf.data file into its attrs, records and
feature sections; save() writes it back, optionally trimmed, and with
swap=True as a big-endian machine would have written it: every field is
byte-swapped at its own width, raw bytes (TLS dumps, user stacks) stay as
they are, and what perf's reader does to a cross-endian file
(tools/perf/util/session.c perf_event__swap_ops, evsel__parse_sample,
header.c) gives back the original values.
"""
import struct

MAGIC = b"PERFILE2"
HEADER_SIZE = 104
SECTION = struct.Struct("<QQ")

# struct perf_event_attr field offsets/sizes that perf_event__attr_swap()
# swaps (tools/perf/util/session.c), including the series' fields at 256.
ATTR_SWAP = [(0, 4), (4, 4), (8, 8), (16, 8), (24, 8), (32, 8), (48, 4),
             (52, 4), (56, 8), (64, 8), (72, 8), (80, 8), (88, 4), (104, 4),
             (108, 2), (112, 4), (256, 4), (260, 2), (262, 2), (264, 2)]
ATTR_FLAGS = 40         # the bitfield: each byte bit-reversed (swap_bitfield)

S_IP, S_TID, S_TIME, S_ADDR, S_READ, S_CALLCHAIN, S_ID, S_CPU, S_PERIOD, \
    S_STREAM_ID, S_RAW, S_BRANCH_STACK, S_REGS_USER, S_STACK_USER, \
    S_WEIGHT, S_DATA_SRC, S_IDENTIFIER, S_TRANSACTION, S_REGS_INTR, \
    S_PHYS_ADDR, S_AUX, S_CGROUP, S_DATA_PAGE_SIZE, S_CODE_PAGE_SIZE, \
    S_WEIGHT_STRUCT = [1 << i for i in range(25)]
S_TLS_USER = 1 << 62

# record types
MMAP, LOST, COMM, EXIT, THROTTLE, UNTHROTTLE, FORK, READ, SAMPLE, MMAP2, \
    AUX, ITRACE_START, LOST_SAMPLES, SWITCH, SWITCH_CPU_WIDE, NAMESPACES, \
    KSYMBOL, BPF_EVENT, CGROUP, TEXT_POKE, AUX_OUTPUT_HW_ID = range(1, 22)
CALLCHAIN_DEFERRED, TLS_USER_DEFERRED, UEVENT = 22, 62, 63
HEADER_ATTR, FINISHED_ROUND, ID_INDEX, AUXTRACE_INFO, AUXTRACE, \
    AUXTRACE_ERROR, THREAD_MAP, CPU_MAP = 64, 68, 69, 70, 71, 72, 73, 74
EVENT_UPDATE, TIME_CONV, FINISHED_INIT = 78, 79, 82

# feature bits this converter can swap (what perf script needs, and the
# series' own)
F_HOSTNAME, F_OSRELEASE, F_VERSION, F_ARCH, F_NRCPUS, F_CPUDESC, F_CPUID, \
    F_TOTAL_MEM, F_CMDLINE, F_EVENT_DESC = range(3, 13)
F_PMU_MAPPINGS, F_SAMPLE_TIME, F_CLOCKID, F_CLOCK_DATA = 16, 21, 23, 29
# the series' HEADER_OTEL_PROCESS_CTX (the last bit): u32 nr, then nr times
# { u32 pid; u32 nr_keys; u64 published_at_ns; string schema_version;
# string keys[nr_keys] }
F_OTEL_PROCESS_CTX = 255
KEEP_FEATURES = {F_HOSTNAME, F_OSRELEASE, F_VERSION, F_ARCH, F_NRCPUS,
                 F_CPUDESC, F_CPUID, F_TOTAL_MEM, F_CMDLINE, F_EVENT_DESC,
                 F_PMU_MAPPINGS, F_SAMPLE_TIME, F_CLOCKID, F_CLOCK_DATA,
                 F_OTEL_PROCESS_CTX}

SW_AUX_AUXTRACE_TYPE = 0x53574158

# perf stat's record, which perf script does not need and whose payload
# perf's reader does not swap: left out of the seeds
DROP_RECORDS = {EVENT_UPDATE}


def u(fmt, b, off=0):
    return struct.unpack_from("<" + fmt, b, off)[0]


def sw(buf, off, width):
    """Reverse the bytes of one field of @width bytes at @off in place."""
    if off + width <= len(buf):
        buf[off:off + width] = buf[off:off + width][::-1]


def sw64s(buf, start, end):
    for off in range(start, end - 7, 8):
        sw(buf, off, 8)


def revbyte(b):
    return int("{:08b}".format(b)[::-1], 2)


def swap_attr(buf, off, size):
    """perf_event__attr_swap() on the attr of @size bytes at @off."""
    for fo, w in ATTR_SWAP:
        if size > fo:
            sw(buf, off + fo, w)
    if size > ATTR_FLAGS:
        for i in range(8):
            buf[off + ATTR_FLAGS + i] = revbyte(buf[off + ATTR_FLAGS + i])


class Attr:
    def __init__(self, raw, ids):
        self.raw = raw
        self.ids = ids
        self.sample_type = u("Q", raw, 24)
        self.read_format = u("Q", raw, 32)
        flags = u("Q", raw, 40)
        self.sample_id_all = bool(flags >> 18 & 1)
        self.regs_user = u("Q", raw, 80) if len(raw) > 80 else 0
        self.regs_intr = u("Q", raw, 96) if len(raw) > 96 else 0
        # tls_user_flags (PERF_TLS_USER_DEFER: 2) at 260
        self.tls_user_flags = u("H", raw, 260) if len(raw) >= 262 else 0
        self.type = u("I", raw, 0)


class PerfData:
    def __init__(self, path):
        b = open(path, "rb").read()
        if b[:8] != MAGIC:
            raise ValueError("%s: not a little-endian file-mode perf.data" % path)
        attr_size = u("Q", b, 16)
        a_off, a_size = SECTION.unpack_from(b, 24)
        self.data_off, self.data_size = SECTION.unpack_from(b, 40)
        self.features_bits = [u("Q", b, 72 + 8 * i) for i in range(4)]
        self.attrs = []
        for off in range(a_off, a_off + a_size, attr_size):
            raw = b[off:off + attr_size - 16]
            ids_off, ids_size = SECTION.unpack_from(b, off + attr_size - 16)
            ids = [u("Q", b, ids_off + 8 * i) for i in range(ids_size // 8)]
            self.attrs.append(Attr(raw, ids))
        self.by_id = {i: a for a in self.attrs for i in a.ids}
        # records: [bytes of the record, bytes that follow it (AUXTRACE)]
        self.records = []
        pos, end = self.data_off, self.data_off + self.data_size
        while pos + 8 <= end:
            typ, misc, size = struct.unpack_from("<IHH", b, pos)
            if size < 8:
                raise ValueError("record of size %d at %#x" % (size, pos))
            rec = b[pos:pos + size]
            extra = b""
            if typ == AUXTRACE:
                n = u("Q", rec, 8)
                extra = b[pos + size:pos + size + n]
            self.records.append([rec, extra])
            pos += size + len(extra)
        self.auxtrace_type = None
        for rec, _ in self.records:
            if u("I", rec, 0) == AUXTRACE_INFO:
                self.auxtrace_type = u("I", rec, 8)
        # feature sections, in bit order after the data
        self.features = {}
        pos = self.data_off + self.data_size
        for bit in range(256):
            if self.features_bits[bit // 64] >> (bit % 64) & 1:
                off, size = SECTION.unpack_from(b, pos)
                self.features[bit] = b[off:off + size]
                pos += 16

    # -- sample layout ------------------------------------------------
    def attr_of(self, rec):
        """The attr perf's evlist__event2evsel() would pick."""
        a0 = self.attrs[0]
        typ = u("I", rec, 0)
        if len(self.attrs) == 1 or not a0.sample_type & S_IDENTIFIER:
            return a0
        if typ == SAMPLE:
            return self.by_id.get(u("Q", rec, 8), a0)
        if a0.sample_id_all and len(rec) >= 16:
            return self.by_id.get(u("Q", rec, len(rec) - 8), a0)
        return a0

    @staticmethod
    def id_fields(st):
        """(width, split-in-u32s) of the sample_id trailer fields, in order."""
        f = []
        if st & S_TID:
            f.append((8, True))
        for bit in (S_TIME, S_ID, S_STREAM_ID):
            if st & bit:
                f.append((8, False))
        if st & S_CPU:
            f.append((8, True))
        if st & S_IDENTIFIER:
            f.append((8, False))
        return f

    def swap_trailer(self, buf, attr, start):
        """The sample_id_all trailer, which ends the record."""
        fields = self.id_fields(attr.sample_type)
        off = len(buf) - 8 * len(fields)
        if not attr.sample_id_all or off < start:
            return
        for _, split in fields:
            if split:
                sw(buf, off, 4)
                sw(buf, off + 4, 4)
            else:
                sw(buf, off, 8)
            off += 8

    def swap_sw_aux_records(self, buf, start, end):
        for off in range(start, end - 31, 32):
            for fo, w in ((0, 8), (8, 8), (16, 8), (24, 4), (28, 4)):
                sw(buf, off + fo, w)

    def swap_sample(self, buf):
        a = self.attr_of(buf)
        st, p = a.sample_type, 8

        def q(n=1):
            nonlocal p
            for _ in range(n):
                sw(buf, p, 8)
                p += 8

        def pair():
            nonlocal p
            sw(buf, p, 4)
            sw(buf, p + 4, 4)
            p += 8

        def val():
            return u("Q", buf, p)

        for bit in (S_IDENTIFIER, S_IP):
            if st & bit:
                q()
        if st & S_TID:
            pair()
        for bit in (S_TIME, S_ADDR, S_ID, S_STREAM_ID):
            if st & bit:
                q()
        if st & S_CPU:
            pair()
        if st & S_PERIOD:
            q()
        if st & S_READ:
            rf = a.read_format
            per = 1 + bool(rf & 4) + bool(rf & 16)   # value, id, lost
            if rf & 8:                               # GROUP
                nr = val()
                q(1 + bool(rf & 1) + bool(rf & 2) + nr * per)
            else:
                q(per + bool(rf & 1) + bool(rf & 2))
        if st & S_CALLCHAIN:
            nr = val()
            q(1 + nr)
        if st & (S_RAW | S_BRANCH_STACK):
            raise ValueError("RAW/BRANCH_STACK samples are not converted")
        for bit, mask in ((S_REGS_USER, a.regs_user),):
            if st & bit:
                abi = val()
                q(1 + (bin(mask).count("1") if abi else 0))
        if st & S_STACK_USER:
            n = val()
            q()
            p += n
            if n:
                q()
        for bit in (S_WEIGHT | S_WEIGHT_STRUCT, S_DATA_SRC, S_TRANSACTION):
            if st & bit:
                q()
        if st & S_REGS_INTR:
            abi = val()
            q(1 + (bin(a.regs_intr).count("1") if abi else 0))
        for bit in (S_PHYS_ADDR, S_CGROUP, S_DATA_PAGE_SIZE, S_CODE_PAGE_SIZE):
            if st & bit:
                q()
        if st & S_AUX:
            n = val()
            q()
            if self.auxtrace_type == SW_AUX_AUXTRACE_TYPE:
                self.swap_sw_aux_records(buf, p, p + n)
            p += n
        if st & S_TLS_USER:
            if a.tls_user_flags & 2:
                q()         # PERF_TLS_USER_DEFER: the cookie, then the dump
            n = val()
            q()
            p += n          # raw user bytes: as they are
            if n:
                q()

    def swap_record(self, buf, extra):
        typ, misc = u("I", buf, 0), u("H", buf, 4)
        a = self.attr_of(buf)
        if typ == SAMPLE:
            self.swap_sample(buf)
        sw(buf, 0, 4)
        sw(buf, 4, 2)
        sw(buf, 6, 2)
        if typ == SAMPLE:
            return

        def cstr_end(off):
            n = buf.index(0, off) + 1 if 0 in buf[off:] else len(buf)
            return off + (n - off + 7) // 8 * 8

        body = None     # where the trailer may start
        if typ in (MMAP, MMAP2):
            sw(buf, 8, 4), sw(buf, 12, 4)
            for o in (16, 24, 32):
                sw(buf, o, 8)
            name = 40
            if typ == MMAP2:
                if not misc & (1 << 14):     # MISC_MMAP_BUILD_ID
                    sw(buf, 40, 4), sw(buf, 44, 4), sw(buf, 48, 8), sw(buf, 56, 8)
                sw(buf, 64, 4), sw(buf, 68, 4)
                name = 72
            body = cstr_end(name)
        elif typ == COMM:
            sw(buf, 8, 4), sw(buf, 12, 4)
            body = cstr_end(16)
        elif typ in (FORK, EXIT):
            for o in (8, 12, 16, 20):
                sw(buf, o, 4)
            sw(buf, 24, 8)
            body = 32
        elif typ in (LOST, LOST_SAMPLES, AUX_OUTPUT_HW_ID):
            body = 8 + 8 * (1 if typ != LOST else 2)
            sw64s(buf, 8, body)
        elif typ in (THROTTLE, UNTHROTTLE):
            sw64s(buf, 8, 32)
            body = 32
        elif typ == AUX:
            sw64s(buf, 8, 32)
            body = 32
        elif typ == ITRACE_START:
            sw(buf, 8, 4), sw(buf, 12, 4)
            body = 16
        elif typ in (SWITCH, SWITCH_CPU_WIDE):
            if typ == SWITCH_CPU_WIDE:
                sw(buf, 8, 4), sw(buf, 12, 4)
            body = 16
        elif typ == KSYMBOL:
            sw(buf, 8, 8), sw(buf, 16, 4), sw(buf, 20, 2), sw(buf, 22, 2)
            body = cstr_end(24)
        elif typ == BPF_EVENT:
            sw(buf, 8, 2), sw(buf, 10, 2), sw(buf, 12, 4)
            body = 24
        elif typ == CGROUP:
            sw(buf, 8, 8)
            body = cstr_end(16)
        elif typ == NAMESPACES:
            sw(buf, 8, 4), sw(buf, 12, 4)
            nr = u("Q", buf, 16)
            sw64s(buf, 16, 24 + 16 * nr)
            body = 24 + 16 * nr
        elif typ == TEXT_POKE:
            old, new = u("H", buf, 16), u("H", buf, 18)
            sw(buf, 8, 8), sw(buf, 16, 2), sw(buf, 18, 2)
            body = (20 + old + new + 7) // 8 * 8
        elif typ == CALLCHAIN_DEFERRED:
            nr = u("Q", buf, 16)
            sw64s(buf, 8, 24 + 8 * nr)
            body = 24 + 8 * nr
        elif typ == TLS_USER_DEFERRED:
            # cookie, id, size, raw user bytes as they are, dyn_size
            n = u("Q", buf, 24)
            sw(buf, 8, 8), sw(buf, 16, 8), sw(buf, 24, 8)
            sw(buf, 32 + n, 8)
            body = 40 + n
        elif typ == UEVENT:
            n = u("I", buf, 12)
            sw(buf, 8, 4), sw(buf, 12, 4)
            body = 16 + (n + 7) // 8 * 8
        elif typ in (FINISHED_ROUND, FINISHED_INIT):
            return
        elif typ == ID_INDEX:
            sw64s(buf, 8, len(buf))
            return
        elif typ == TIME_CONV:
            sw64s(buf, 8, 32)
            if len(buf) >= 48:
                sw64s(buf, 32, 48)
            return
        elif typ == AUXTRACE_INFO:
            sw(buf, 8, 4)
            sw64s(buf, 16, len(buf))
            return
        elif typ == AUXTRACE:
            sw64s(buf, 8, 32)
            for o in (32, 36, 40):
                sw(buf, o, 4)
            if self.auxtrace_type == SW_AUX_AUXTRACE_TYPE:
                self.swap_sw_aux_records(extra, 0, len(extra))
            return
        elif typ == EVENT_UPDATE:
            sw(buf, 8, 8), sw(buf, 16, 8)
            return
        elif typ == THREAD_MAP:
            nr = u("Q", buf, 8)
            sw(buf, 8, 8)
            for i in range(nr):
                sw(buf, 16 + 24 * i, 8)
            return
        elif typ == CPU_MAP:
            # u16 type at 8, then the packed encoding (event.h)
            enc = u("H", buf, 8)
            sw(buf, 8, 2)
            if enc == 0:                # CPUS: u16 nr, u16 cpu[nr]
                nr = u("H", buf, 10)
                for o in range(10, 12 + 2 * nr, 2):
                    sw(buf, o, 2)
            elif enc == 1:              # MASK: u16 nr, u16 long_size, ...
                nr, long_size = u("H", buf, 10), u("H", buf, 12)
                first = 14 if long_size == 4 else 18
                sw(buf, 10, 2), sw(buf, 12, 2)
                for i in range(nr):
                    sw(buf, first + long_size * i, long_size)
            elif enc == 2:              # RANGE: u8 any, u8 pad, u16 start, end
                sw(buf, 12, 2), sw(buf, 14, 2)
            return
        else:
            raise ValueError("record type %d is not converted" % typ)
        self.swap_trailer(buf, a, body)

    # -- features -------------------------------------------------------
    @staticmethod
    def swap_feature(bit, b):
        b = bytearray(b)
        p = 0

        def w(n):
            nonlocal p
            v = u({4: "I", 8: "Q"}[n], b, p)
            sw(b, p, n)
            p += n
            return v

        def string():
            nonlocal p
            n = w(4)
            p += n

        if bit in (F_HOSTNAME, F_OSRELEASE, F_VERSION, F_ARCH, F_CPUDESC, F_CPUID):
            string()
        elif bit == F_NRCPUS:
            w(4), w(4)
        elif bit in (F_TOTAL_MEM, F_CLOCKID):
            w(8)
        elif bit == F_SAMPLE_TIME:
            w(8), w(8)
        elif bit == F_CLOCK_DATA:
            w(4), w(4), w(8), w(8)
        elif bit == F_CMDLINE:
            for _ in range(w(4)):
                string()
        elif bit == F_PMU_MAPPINGS:
            for _ in range(w(4)):
                w(4)
                string()
        elif bit == F_EVENT_DESC:
            nr, sz = w(4), w(4)
            for _ in range(nr):
                swap_attr(b, p, u("I", b, p + 4))
                p += sz
                nids = w(4)
                string()
                for _ in range(nids):
                    w(8)
        elif bit == F_OTEL_PROCESS_CTX:
            for _ in range(w(4)):
                w(4)
                nr_keys = w(4)
                w(8)
                string()
                for _ in range(nr_keys):
                    string()
        return bytes(b)

    # -- writing ----------------------------------------------------------
    def save(self, path, swap=False, max_records=None, max_aux=None):
        """Write the file; keep @max_records samples, AUXTRACE buffers
        cut to @max_aux bytes, only KEEP_FEATURES."""
        e = ">" if swap else "<"
        bulk = (SAMPLE, CALLCHAIN_DEFERRED, TLS_USER_DEFERRED, AUX)
        # a window of @max_records samples in the middle of the recording,
        # with the deferred callchains and AUX records among them
        samples = [i for i, (r, _) in enumerate(self.records)
                   if u("I", r, 0) == SAMPLE]
        lo, hi = 0, len(self.records)
        if max_records is not None and len(samples) > max_records:
            first = (len(samples) - max_records) // 2
            lo = samples[first]
            hi = samples[first + max_records - 1] + 1
        recs = []
        for i, (rec, extra) in enumerate(self.records):
            typ = u("I", rec, 0)
            if typ in DROP_RECORDS:
                continue
            if typ in bulk and not lo <= i < hi:
                continue
            rec, extra = bytearray(rec), bytearray(extra)
            if max_aux is not None and len(extra) > max_aux:
                extra = extra[:max_aux // 32 * 32]
                struct.pack_into("<Q", rec, 8, len(extra))
            if swap:
                self.swap_record(rec, extra)
            recs.append(bytes(rec) + bytes(extra))
        data = b"".join(recs)

        attr_size = len(self.attrs[0].raw) + 16
        out = bytearray(HEADER_SIZE)
        ids_blob = bytearray()
        ids_off = HEADER_SIZE
        id_secs = []
        for a in self.attrs:
            id_secs.append((ids_off + len(ids_blob), 8 * len(a.ids)))
            ids_blob += b"".join(struct.pack(e + "Q", i) for i in a.ids)
        attrs_off = HEADER_SIZE + len(ids_blob)
        attrs_blob = bytearray()
        for a, (io, isz) in zip(self.attrs, id_secs):
            raw = bytearray(a.raw)
            if swap:
                swap_attr(raw, 0, u("I", a.raw, 4))
            attrs_blob += raw + struct.pack(e + "QQ", io, isz)
        data_off = attrs_off + len(attrs_blob)
        feats = sorted(b for b in self.features if b in KEEP_FEATURES)
        bits = [0, 0, 0, 0]
        for b in feats:
            bits[b // 64] |= 1 << (b % 64)
        sec_off = data_off + len(data)
        fpos = sec_off + 16 * len(feats)
        secs, fblob = bytearray(), bytearray()
        for b in feats:
            f = self.features[b]
            if swap:
                f = self.swap_feature(b, f)
            secs += struct.pack(e + "QQ", fpos + len(fblob), len(f))
            fblob += f
        struct.pack_into(e + "QQQQQQQQQ", out, 0,
                         u("Q", MAGIC), HEADER_SIZE, attr_size,
                         attrs_off, len(attrs_blob), data_off, len(data), 0, 0)
        struct.pack_into(e + "QQQQ", out, 72, *bits)
        out += ids_blob + attrs_blob + data + secs + fblob
        open(path, "wb").write(out)
        return len(out)
