#!/usr/bin/env python3
# Compare the perf ABI numbers the series adds with upstream's.
#
#   abi-check.py TREE FACTS
#
# TREE is the assembled kernel tree (a git repository whose tag "base" is
# the untouched 6.12 source), FACTS is scripts/upstream-abi.tsv.
#
# Only names are read from the headers; every value is what the C compiler
# makes of it (a program built against the header prints it), so spelling
# does not matter: 1ULL << 62, BIT_ULL-like macros, hex, (63), a last
# enumerator without a comma.  The spaces looked at: the sample types,
# record types and callchain contexts of include/uapi/linux/perf_event.h
# (enumerators of any enum, and macros, by name prefix), its PERF_ATTR_*
# sizes, the bits of the attr flag word, the byte range of every
# perf_event_attr member, the PR_* values of prctl.h, and perf's enum
# auxtrace_type.  Stops when an attr byte belongs to no member it could
# read (a declaration it does not parse), or the attr is not as large as
# its largest PERF_ATTR_SIZE_*.  Fails when
#   - a name the base has changes its value (a base attr field moves, a
#     record type is renumbered; a __reserved* field may only shrink),
#   - a name the series adds has a value upstream has taken, has in flight
#     or hands out next (a __reserved* field of the series may cover what
#     upstream hands out next, nothing upstream has taken),
#   - a name upstream also has is not upstream's number,
#   - the tools/include copy of a header disagrees with the kernel's, in
#     any object-like macro or number above,
#   - a file other than those headers defines one of their names again.
import os
import re
import subprocess
import sys
import tempfile

HEADERS = [("include/uapi", "kernel uapi"), ("tools/include/uapi", "tools copy")]
AUXTRACE_H = "tools/perf/util/auxtrace.h"


def git_show(tree, rev, path):
    if rev is None:
        with open(os.path.join(tree, path)) as f:
            return f.read()
    return subprocess.run(["git", "-C", tree, "show", f"{rev}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def strip_comments(text):
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def block(text, start):
    """The body of the brace block that follows START, comments removed."""
    i = text.index(start) + len(start)
    return strip_comments(text[i:text.index("\n};", i)])


def enumerators(text, start):
    body = re.sub(r"^[ \t]*#.*$", "", block(text, start), flags=re.M)
    return enum_names(body)


def enum_names(body):
    names = []
    for item in body.split(","):
        name = item.split("=")[0].strip()
        if re.fullmatch(r"[A-Za-z_]\w*", name):
            names.append(name)
    return names


def defines(text, prefix):
    """Object-like macros whose names start with PREFIX."""
    return re.findall(r"^[ \t]*#[ \t]*define[ \t]+(" + prefix + r"\w*)[ \t]+\S", text, re.M)


def all_enumerators(text, prefix, skip):
    """Enumerators named PREFIX... of every enum of TEXT, but not SKIP...."""
    text = re.sub(r"^[ \t]*#.*$", "", strip_comments(text), flags=re.M)
    names = []
    for body in re.findall(r"\benum\b[^{;]*\{(.*?)\}", text, re.S):
        names += [n for n in enum_names(body) if n.startswith(prefix)]
    return [n for n in names if not n.startswith(skip)]


def named(text, prefix, skip):
    """Every enumerator and object-like macro named PREFIX..., not SKIP...."""
    names = all_enumerators(text, prefix, skip)
    names += [n for n in defines(text, prefix) if not n.startswith(skip)]
    return list(dict.fromkeys(names))


def attr_members(text):
    """Names of the members of perf_event_attr that are not bitfields."""
    body = block(text, "struct perf_event_attr {")
    return re.findall(r"^\s*(?:__[us](?:8|16|32|64)|__aligned_u64)\s+(\w+)\s*(?:\[[^\]]*\])?\s*;",
                      body, re.M)


def attr_flag_names(text):
    """Names of the bitfields of the flag word that follows read_format."""
    body = block(text, "struct perf_event_attr {")
    word = body[body.index("read_format"):]
    word = word[word.index(";") + 1:]
    word = word[:word.index(";")]
    return re.findall(r"(\w+)\s*:\s*\d+", word)


def run_c(includes, prologue, lines):
    """Build and run a program that prints 'key value' lines; its output."""
    with tempfile.TemporaryDirectory() as tmp:
        for path, text in includes.items():
            os.makedirs(os.path.join(tmp, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(tmp, path), "w") as f:
                f.write(text)
        src = os.path.join(tmp, "abi.c")
        with open(src, "w") as f:
            f.write("#include <stdio.h>\n#include <stddef.h>\n#include <string.h>\n")
            f.write(prologue)
            f.write("int main(void)\n{\n")
            f.writelines("\t" + line + "\n" for line in lines)
            f.write("\treturn 0;\n}\n")
        exe = os.path.join(tmp, "abi")
        cc = subprocess.run(["cc", "-w", "-I", tmp, "-o", exe, src],
                            capture_output=True, text=True)
        if cc.returncode:
            sys.exit(f"abi-check: cannot build the value printer:\n{cc.stderr}")
        out = {}
        for line in subprocess.run([exe], check=True, capture_output=True,
                                   text=True).stdout.splitlines():
            key, lo, hi = line.split()
            out[key] = (int(lo), int(hi))
        return out


def value_lines(names, signed=False):
    fmt, cast = ("%lld", "long long") if signed else ("%llu", "unsigned long long")
    return [f'printf("{n} {fmt} {fmt}\\n", ({cast})({n}), ({cast})({n}));' for n in names]


def header_numbers(pe, pr):
    """space -> {name: (low, high)} of one perf_event.h and prctl.h."""
    includes = {"linux/perf_event.h": pe, "linux/prctl.h": pr}
    prologue = "#include <linux/perf_event.h>\n#include <linux/prctl.h>\n"
    spaces = {
        "sample-bit": named(pe, "PERF_SAMPLE_", ("PERF_SAMPLE_BRANCH_", "PERF_SAMPLE_REGS_ABI_")),
        "record-type": named(pe, "PERF_RECORD_", ("PERF_RECORD_MISC_", "PERF_RECORD_KSYMBOL_")),
        "callchain-context": named(pe, "PERF_CONTEXT_", ()),
        "attr-size": defines(pe, "PERF_ATTR_"),
        "prctl": defines(pr, "PR_"),
        # Every other number of the headers, for the tools copy check.
        "define": list(dict.fromkeys(defines(pe, "") + defines(pr, ""))),
    }
    guards = {"_UAPI_LINUX_PERF_EVENT_H", "_LINUX_PRCTL_H"}
    spaces["define"] = [n for n in spaces["define"] if n not in guards]
    lines = []
    for space, names in spaces.items():
        lines += [line.replace('"', f'"{space}:', 1)
                  for line in value_lines(names, space == "callchain-context")]
    for n in attr_members(pe):
        lines.append(f'printf("attr-bytes:{n} %zu %zu\\n", offsetof(struct perf_event_attr, {n}), '
                     f'offsetof(struct perf_event_attr, {n}) + '
                     f'sizeof(((struct perf_event_attr *)0)->{n}) - 1);')
    lines.append('printf("attr-bytes:sizeof 0 %zu\\n", sizeof(struct perf_event_attr) - 1);')
    # A bitfield's bits: set all of them in a zeroed attr, read the word.
    for n in attr_flag_names(pe):
        lines.append("{ struct perf_event_attr a; unsigned long long w; int lo, hi;")
        lines.append(f"  memset(&a, 0, sizeof(a)); a.{n} = ~0ULL;")
        lines.append("  memcpy(&w, (char *)&a + offsetof(struct perf_event_attr, read_format) + 8, 8);")
        lines.append("  lo = w ? __builtin_ctzll(w) : -1; hi = w ? 63 - __builtin_clzll(w) : -1;")
        lines.append(f'  if (w != (hi == 63 ? ~0ULL << lo : ((1ULL << (hi + 1)) - 1) & ~0ULL << lo)) lo = hi = -2;')
        lines.append(f'  printf("attr-flag:{n} %d %d\\n", lo, hi); }}')
    out = {}
    for key, v in run_c(includes, prologue, lines).items():
        space, name = key.split(":", 1)
        out.setdefault(space, {})[name] = v
    # Sample types as the bits they span (one bit each, but for masks).
    bits = {}
    for name, (v, _) in out.get("sample-bit", {}).items():
        if not v:
            sys.exit(f"abi-check: {name} is 0")
        bits[name] = ((v & -v).bit_length() - 1, v.bit_length() - 1)
    out["sample-bit"] = bits
    for name, (lo, hi) in out.get("attr-flag", {}).items():
        if lo < 0:
            sys.exit(f"abi-check: attr flag {name} is not a run of bits of the flag word")
    covered = sum(hi - lo + 1 for lo, hi in out.get("attr-flag", {}).values())
    if covered != 64:
        sys.exit(f"abi-check: the attr flag word has {covered} bits, not 64")
    for space in spaces:
        out.setdefault(space, {})
    # Not a size: the offset of the series' own attr fields.
    ext = out["attr-size"].pop("PERF_ATTR_EXT_OFFSET", None)
    check_attr_layout(out["attr-bytes"], out["attr-size"], ext)
    if ext:
        out["attr-bytes"]["PERF_ATTR_EXT_OFFSET"] = ext
    return out


def check_attr_layout(members, sizes, ext):
    """Every byte of the attr belongs to a member that was read, the attr is
    as large as its largest size, and the fields at PERF_ATTR_EXT_OFFSET
    start there: a member this check cannot read shows as a hole."""
    size = members.pop("sizeof")[1] + 1
    covered = set(range(40, 48))            # the flag word
    for lo, hi in members.values():
        covered |= set(range(lo, hi + 1))
    holes = sorted(set(range(size)) - covered)
    if holes:
        sys.exit(f"abi-check: attr bytes {holes[0]}-{holes[-1]} belong to no member "
                 "declared as '__u<N> name;' or '__u<N> name[N];'")
    largest = max(v[0] for n, v in sizes.items() if n.startswith("PERF_ATTR_SIZE_"))
    if size != largest:
        sys.exit(f"abi-check: sizeof(struct perf_event_attr) is {size}, "
                 f"its largest PERF_ATTR_SIZE_* is {largest}")
    if ext and min((lo for lo, _ in members.values() if lo >= ext[0]), default=None) != ext[0]:
        sys.exit(f"abi-check: no attr member starts at PERF_ATTR_EXT_OFFSET ({ext[0]})")


def auxtrace_numbers(text):
    i = text.index("enum auxtrace_type {")
    body = text[i:text.index("\n};", i) + 3] + "\n"
    names = enumerators(text, "enum auxtrace_type {")
    out = run_c({}, body, [line.replace('"', '"x:', 1) for line in value_lines(names)])
    return {k[2:]: v for k, v in out.items()}


def numbers(tree, rev):
    """({copy: {space: {name: (lo, hi)}}}, {auxtrace name: (v, v)})."""
    per_copy = {}
    for incdir, what in HEADERS:
        per_copy[what] = header_numbers(git_show(tree, rev, f"{incdir}/linux/perf_event.h"),
                                        git_show(tree, rev, f"{incdir}/linux/prctl.h"))
    return per_copy, auxtrace_numbers(git_show(tree, rev, AUXTRACE_H))


NON_ABI = re.compile(r"^(PERF_SAMPLE_MAX|PERF_RECORD_MAX|PERF_CONTEXT_MAX)$|^sizeof$")


def redefinitions(tree, names):
    """Added '#define NAME' lines of the series, outside the headers, for NAMES."""
    own = {f"{d}/linux/{h}" for d, _ in HEADERS for h in ("perf_event.h", "prctl.h")}
    diff = subprocess.run(["git", "-C", tree, "diff", "-U0", "base", "--"],
                          check=True, capture_output=True, text=True).stdout
    out, path = [], None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else None
            continue
        m = re.match(r"^\+\s*#\s*define\s+(\w+)\b", line)
        if m and path not in own and m.group(1) in names:
            out.append(f"{path} defines {m.group(1)} again: include the uapi header instead")
    return out


def fmt(space, lo, hi):
    if space in ("prctl", "auxtrace-type") and lo > 4096:
        return hex(lo)
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def main():
    tree, facts_path = sys.argv[1], sys.argv[2]
    facts = []
    with open(facts_path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            space, name, value, status, source = line.rstrip("\n").split("\t")
            m = re.fullmatch(r"(-?\w+)-(-?\w+)", value)
            lo, hi = (m.group(1), m.group(2)) if m else (value, value)
            facts.append((space, name, (int(lo, 0), int(hi, 0)), status, source))

    base, base_aux = numbers(tree, "base")
    ours, ours_aux = numbers(tree, None)
    base_k, k, t = base["kernel uapi"], ours["kernel uapi"], ours["tools copy"]
    k["auxtrace-type"], base_k["auxtrace-type"] = ours_aux, base_aux
    failures = []

    # The tools copy must say what the kernel header says, where the base's
    # two copies agree (Debian's 6.12 backports aux_action to the kernel
    # header only).
    base_t = base["tools copy"]
    for space in t:
        for name in sorted(set(k[space]) | set(t[space])):
            if base_k[space].get(name) != base_t[space].get(name):
                continue
            if k[space].get(name) != t[space].get(name):
                failures.append(f"{space} {name}: kernel uapi {k[space].get(name)}, "
                                f"tools copy {t[space].get(name)}")

    # Names of the base keep their values; reserved space may only shrink.
    for space, d in base_k.items():
        for name, v in d.items():
            if NON_ABI.search(name):
                continue
            if name not in k[space]:
                failures.append(f"{space} {name}: the base has it, the series removed it")
            elif k[space][name] != v and not (
                    name.startswith("__reserved") and v[0] <= k[space][name][0]
                    and k[space][name][1] <= v[1]):
                failures.append(f"{space} {name}: moved from {fmt(space, *v)} "
                                f"to {fmt(space, *k[space][name])}")

    added = [(space, name, v) for space, d in k.items() for name, v in d.items()
             if name not in base_k[space] and not NON_ABI.search(name) and space != "define"]

    print(f"{'space':18} {'name':32} {'ours':>22}  verdict")
    for space, name, (lo, hi) in added:
        ours_s = fmt(space, lo, hi)
        same = [fa for fa in facts if fa[0] == space and fa[1] == name]
        reserved = name.startswith("__reserved")
        verdict = ("ours: reserved, none of upstream's taken numbers" if reserved
                   else "ours: no upstream number in the way")
        if same:
            fa = same[0]
            if fa[2] != (lo, hi):
                failures.append(f"{space} {name}: ours {ours_s}, upstream {fmt(space, *fa[2])} ({fa[4]})")
                verdict = "FAIL: not upstream's value"
            else:
                verdict = f"upstream's own ({fa[3]})"
        else:
            for fa in facts:
                if fa[0] != space or fa[3] == "free":
                    continue
                if reserved and fa[3] in ("next", "proposed"):
                    continue
                flo, fhi = fa[2]
                if lo <= fhi and flo <= hi:
                    failures.append(f"{space} {name} = {ours_s} collides with upstream "
                                    f"{fa[1]} = {fmt(space, flo, fhi)} ({fa[3]}: {fa[4]})")
                    verdict = f"FAIL: collides with {fa[1]} ({fa[3]})"
        print(f"{space:18} {name:32} {ours_s:>22}  {verdict}")

    names = {n for space, d in k.items() if space != "attr-bytes" for n in d}
    failures += redefinitions(tree, names)

    if failures:
        print("\nupstream-collision: FAIL")
        for f in failures:
            print("  " + f)
        return 1
    print("\nupstream-collision: pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
