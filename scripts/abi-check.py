#!/usr/bin/env python3
# Compare the perf ABI numbers the series adds with upstream's.
#
#   abi-check.py TREE FACTS
#
# TREE is the assembled kernel tree (a git repository whose tag "base" is
# the untouched 6.12 source), FACTS is scripts/upstream-abi.tsv.  The
# numbers the series adds are what the tree's include/uapi/linux/
# perf_event.h and prctl.h, their tools/include/uapi copies and
# tools/perf/util/auxtrace.h define beyond the base tree.  Fails when one of
# them is a number upstream has taken, has in flight or hands out next, when
# a name upstream also has is not upstream's number, or when the tools copy
# of a header disagrees with the kernel's.
import os
import re
import subprocess
import sys
import tempfile

HEADERS = [("include/uapi", "kernel uapi"), ("tools/include/uapi", "tools copy")]


def git_show(tree, rev, path):
    if rev is None:
        with open(os.path.join(tree, path)) as f:
            return f.read()
    return subprocess.run(["git", "-C", tree, "show", f"{rev}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def number(s):
    s = s.strip()
    return int(s, 0)


def value_range(s):
    m = re.fullmatch(r"(-?\w+)-(-?\w+)", s)
    if m:
        return number(m.group(1)), number(m.group(2))
    return number(s), number(s)


def block(text, start):
    i = text.index(start)
    return text[i:text.index("\n};", i)]


def sample_bits(text):
    out = {}
    for m in re.finditer(r"\b(PERF_SAMPLE_\w+|__PERF_SAMPLE_\w+)\s*=\s*1U?L*\s*<<\s*(\d+)",
                         block(text, "enum perf_event_sample_format {")):
        if m.group(1) != "PERF_SAMPLE_MAX":
            out[m.group(1)] = int(m.group(2))
    return out


def record_types(text):
    out = {}
    for m in re.finditer(r"\b(PERF_RECORD_\w+)\s*=\s*(\d+)\s*,",
                         block(text, "enum perf_event_type {")):
        out[m.group(1)] = int(m.group(2))
    return out


def contexts(text):
    out = {}
    for m in re.finditer(r"\b(PERF_CONTEXT_\w+)\s*=\s*\(__u64\)\s*(-\d+)",
                         block(text, "enum perf_callchain_context {")):
        out[m.group(1)] = int(m.group(2))
    return out


def attr_sizes(text):
    out = {}
    for m in re.finditer(r"^#define\s+(PERF_ATTR_(?:SIZE_\w+|EXT_OFFSET))\s+(\d+)", text, re.M):
        out[m.group(1)] = int(m.group(2))
    return out


def attr_flags(text):
    """Bit numbers of the flag word: the bitfields that follow read_format."""
    body = block(text, "struct perf_event_attr {")
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    word = body[body.index("read_format;"):]
    word = word[:word.index(";", word.index(":")) + 1]
    out, bit = {}, 0
    for m in re.finditer(r"(\w+)\s*:\s*(\d+)", word):
        if not m.group(1).startswith("__reserved"):
            out[m.group(1)] = bit
        bit += int(m.group(2))
    if bit != 64:
        sys.exit(f"abi-check: the attr flag word has {bit} bits, not 64")
    return out


def attr_fields(text):
    """Byte range of every named, non-bitfield member of perf_event_attr."""
    body = block(text, "struct perf_event_attr {")
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    names = re.findall(r"^\s*__[us](?:8|16|32|64)\s+(\w+)\s*(?:\[\d+\])?\s*;", body, re.M)
    with tempfile.TemporaryDirectory() as tmp:
        # The header alone, over the host's linux/types.h and asm/*.
        os.mkdir(os.path.join(tmp, "linux"))
        with open(os.path.join(tmp, "linux", "perf_event.h"), "w") as f:
            f.write(text)
        src = os.path.join(tmp, "attr.c")
        with open(src, "w") as f:
            f.write("#include <stdio.h>\n#include <stddef.h>\n#include <linux/perf_event.h>\n")
            f.write("#define F(n) printf(\"%s %zu %zu\\n\", #n, "
                    "offsetof(struct perf_event_attr, n), "
                    "sizeof(((struct perf_event_attr *)0)->n));\n")
            f.write("int main(void)\n{\n")
            f.write("\tprintf(\"sizeof %zu 0\\n\", sizeof(struct perf_event_attr));\n")
            for n in names:
                f.write(f"\tF({n})\n")
            f.write("\treturn 0;\n}\n")
        exe = os.path.join(tmp, "attr")
        subprocess.run(["cc", "-I", tmp, "-o", exe, src], check=True)
        out = {}
        for line in subprocess.run([exe], check=True, capture_output=True,
                                   text=True).stdout.splitlines():
            n, off, size = line.split()
            out[n] = (int(off), int(off) + int(size) - 1)
        return out


def prctl_options(text):
    out = {}
    for m in re.finditer(r"^#define\s+(PR_\w+)\s+(0x[0-9a-fA-F]+|\d+)\b", text, re.M):
        out[m.group(1)] = int(m.group(2), 0)
    return out


def auxtrace_types(text):
    out, v = {}, 0
    body = block(text, "enum auxtrace_type {")
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    for m in re.finditer(r"(PERF_AUXTRACE_\w+)\s*(?:=\s*(\w+))?\s*,", body):
        if m.group(2):
            v = int(m.group(2), 0)
        out[m.group(1)] = v
        v += 1
    return out


def numbers(tree, rev):
    """space -> {name: value or (low, high)} for one side of one tree."""
    per_copy = {}
    for incdir, what in HEADERS:
        pe = git_show(tree, rev, f"{incdir}/linux/perf_event.h")
        pr = git_show(tree, rev, f"{incdir}/linux/prctl.h")
        d = {
            "sample-bit": sample_bits(pe),
            "record-type": record_types(pe),
            "callchain-context": contexts(pe),
            "attr-size": {k: v for k, v in attr_sizes(pe).items() if k.startswith("PERF_ATTR_SIZE")},
            "attr-flag": attr_flags(pe),
            "prctl": prctl_options(pr),
        }
        if rev is None:
            d["attr-bytes"] = attr_fields(pe)
            ext = attr_sizes(pe).get("PERF_ATTR_EXT_OFFSET")
            if ext is not None:
                d["attr-bytes"]["PERF_ATTR_EXT_OFFSET"] = (ext, ext)
        per_copy[what] = d
    aux = git_show(tree, rev, "tools/perf/util/auxtrace.h")
    return per_copy, auxtrace_types(aux)


def main():
    tree, facts_path = sys.argv[1], sys.argv[2]
    facts = []
    with open(facts_path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            space, name, value, status, source = line.rstrip("\n").split("\t")
            facts.append((space, name, value_range(value), status, source))

    base, base_aux = numbers(tree, "base")
    ours, ours_aux = numbers(tree, None)
    failures = []

    # The tools copy must say what the kernel header says.
    k, t = ours["kernel uapi"], ours["tools copy"]
    for space in k:
        for name, v in k[space].items():
            if name in t[space] and t[space][name] != v:
                failures.append(f"{space} {name}: kernel uapi {v}, tools copy {t[space][name]}")
            in_base = (name in base_fields_6_12(tree) if space == "attr-bytes"
                       else name in base["kernel uapi"][space])
            if name not in t[space] and not in_base:
                failures.append(f"{space} {name}: in the kernel uapi header, not in its tools copy")

    # What the series adds or moves: names not in the base tree, or with
    # another value there (attr fields: every named field not in the base).
    added = []
    for space, d in k.items():
        for name, v in d.items():
            if name.startswith("__reserved"):
                continue
            if space == "attr-bytes":
                if name in ("sizeof",) or name in base_fields_6_12(tree):
                    continue
            elif name in base["kernel uapi"][space] and base["kernel uapi"][space][name] == v:
                continue
            added.append((space, name, v if isinstance(v, tuple) else (v, v)))
    for name, v in ours_aux.items():
        if base_aux.get(name) != v:
            added.append(("auxtrace-type", name, (v, v)))

    print(f"{'space':18} {'name':32} {'ours':>22}  verdict")
    for space, name, (lo, hi) in added:
        ours_s = f"{lo}" if lo == hi else f"{lo}-{hi}"
        if space in ("prctl", "auxtrace-type") and lo > 4096:
            ours_s = hex(lo)
        same = [fa for fa in facts if fa[0] == space and fa[1] == name]
        verdict = "ours: no upstream number in the way"
        if same:
            fa = same[0]
            if fa[2] != (lo, hi):
                failures.append(f"{space} {name}: ours {ours_s}, upstream {fa[2]} ({fa[4]})")
                verdict = "FAIL: not upstream's value"
            else:
                verdict = f"upstream's own ({fa[3]})"
        else:
            for fa in facts:
                if fa[0] != space or fa[3] == "free":
                    continue
                flo, fhi = fa[2]
                if lo <= fhi and flo <= hi:
                    theirs = f"{flo}" if flo == fhi else f"{flo}-{fhi}"
                    failures.append(f"{space} {name} = {ours_s} collides with upstream "
                                    f"{fa[1]} = {theirs} ({fa[3]}: {fa[4]})")
                    verdict = f"FAIL: collides with {fa[1]} ({fa[3]})"
        print(f"{space:18} {name:32} {ours_s:>22}  {verdict}")

    if failures:
        print("\nupstream-collision: FAIL")
        for f in failures:
            print("  " + f)
        return 1
    print("\nupstream-collision: pass")
    return 0


_base_fields = None


def base_fields_6_12(tree):
    """Names of the perf_event_attr fields of the base tree."""
    global _base_fields
    if _base_fields is None:
        text = git_show(tree, "base", "include/uapi/linux/perf_event.h")
        body = re.sub(r"/\*.*?\*/", "", block(text, "struct perf_event_attr {"), flags=re.S)
        _base_fields = set(re.findall(r"^\s*__[us](?:8|16|32|64)\s+(\w+)", body, re.M))
    return _base_fields


if __name__ == "__main__":
    sys.exit(main())
