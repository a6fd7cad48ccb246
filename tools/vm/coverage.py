#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Summarize gcovr's reports of `make coverage` (tools/vm/coverage.sh).

Usage: coverage.py COVERAGE.JSON SUMMARY.JSON UNCOVERED.TXT REASONS

Prints the line and branch coverage of each file and of all together, and
writes UNCOVERED.TXT: for each file, the blocks of lines no test executed
(runs of uncovered lines, with the lines without code between them), each
with its function, the reason no test reaches it and its source, then the
lines where a branch was never taken, by function, with the reason.

REASONS (tools/vm/coverage-reasons) gives the reasons by file and function.
Each uncovered block and each function with a branch never taken needs
one; the exit status is 1 if any has none, and they are printed last.
"""
import json
import re
import sys

KINDS = ("device", "unreachable", "tracing", "timing", "lockdep", "test")


def pct(covered, total):
    return f"{100.0 * covered / total:5.1f}%" if total else "    -"


def summary(path):
    with open(path) as f:
        data = json.load(f)
    rows = [(f["filename"], f["line_covered"], f["line_total"],
             f["branch_covered"], f["branch_total"]) for f in data["files"]]
    rows.append(("total", data["line_covered"], data["line_total"],
                 data["branch_covered"], data["branch_total"]))
    width = max(len(r[0]) for r in rows)
    print(f"{'file':<{width}}  {'lines':>19}  {'branches':>19}")
    for name, lc, lt, bc, bt in rows:
        print(f"{name:<{width}}  {pct(lc, lt)} {f'{lc}/{lt}':>12}  "
              f"{pct(bc, bt)} {f'{bc}/{bt}':>12}")


def function_at(functions, line):
    """The function that starts last at or before line."""
    best = None
    for func in functions:
        if func["lineno"] <= line and (best is None
                                        or func["lineno"] > best["lineno"]):
            best = func
    return best["name"] if best else "*"


def load_reasons(path):
    """{(file, function): (kind, why)}; function "*" is the whole file."""
    reasons = {}
    with open(path) as f:
        for no, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = re.fullmatch(r"(\S+)\s+(\S+)\s+(\w+):\s*(.+)", line)
            if not m or m.group(3) not in KINDS:
                sys.exit(f"{path}:{no}: want FILE FUNCTION KIND: WHY, "
                         f"KIND one of {', '.join(KINDS)}")
            reasons[(m.group(1), m.group(2))] = (m.group(3), m.group(4))
    return reasons


def reason_of(reasons, file, func):
    return reasons.get((file, func)) or reasons.get((file, "*"))


def uncovered(path, out, reasons):
    """Write the list; return the count by kind and what has no reason."""
    with open(path) as f:
        data = json.load(f)
    kinds = dict.fromkeys(KINDS, 0)
    missing = []
    used = set()

    def why(file, func, what):
        r = reason_of(reasons, file, func)
        if not r:
            missing.append(f"{file} {func}(): {what}")
            return "NO REASON (tools/vm/coverage-reasons)"
        used.add((file, func) if (file, func) in reasons else (file, "*"))
        kinds[r[0]] += 1
        return f"{r[0]}: {r[1]}"

    out.write("# Lines of ndk/ that no test executed, by file: blocks of\n"
              "# uncovered lines with their function, the reason no test\n"
              "# reaches them and their source, then the functions with a\n"
              "# branch never taken, with the reason.\n")
    for entry in data["files"]:
        name = entry["file"]
        with open(name) as f:
            source = f.read().split("\n")
        code = [l for l in entry["lines"]
                if not l["gcovr/noncode"] and not l["gcovr/excluded"]]
        missed = [l["line_number"] for l in code if l["count"] == 0]
        blocks = []
        for no in missed:
            # Lines gcov does not count (blank, comments, braces) between
            # two uncovered ones do not split a block.
            if blocks and not any(blocks[-1][1] < l["line_number"] < no
                                  for l in code):
                blocks[-1][1] = no
            else:
                blocks.append([no, no])
        partial = {}
        for l in code:
            if l["count"] > 0 and any(b["count"] == 0
                                      for b in l["branches"]):
                func = function_at(entry["functions"], l["line_number"])
                partial.setdefault(func, []).append(l["line_number"])
        plural = "" if len(blocks) == 1 else "s"
        out.write(f"\n{name}: {len(missed)} of {len(code)} lines "
                  f"uncovered in {len(blocks)} block{plural}\n")
        for first, last in blocks:
            where = str(first) if first == last else f"{first}-{last}"
            func = function_at(entry["functions"], first)
            out.write(f"  {where} in {func}(): "
                      f"{why(name, func, 'lines ' + where)}\n")
            for no in range(first, last + 1):
                out.write(f"    {no:5} {source[no - 1]}\n")
        for func, lines in partial.items():
            where = " ".join(map(str, lines))
            out.write(f"  a branch never taken in {func}(), lines {where}: "
                      f"{why(name, func, 'branches on ' + where)}\n")
    stale = sorted(set(reasons) - used)
    return kinds, missing, stale


def main():
    reasons = load_reasons(sys.argv[4])
    with open(sys.argv[3], "w") as out:
        kinds, missing, stale = uncovered(sys.argv[1], out, reasons)
    summary(sys.argv[2])
    print("uncovered blocks and functions with a branch never taken, "
          "by reason: " + ", ".join(f"{k} {n}" for k, n in kinds.items()))
    for file, func in stale:
        print(f"a reason for what is covered now: {file} {func}")
    if missing:
        print(f"{len(missing)} without a reason:")
        for m in missing:
            print(f"  {m}")
        sys.exit(1)


if __name__ == "__main__":
    main()
