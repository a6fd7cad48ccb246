#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Summarize gcovr's reports of `make coverage` (tools/vm/coverage.sh).

Usage: coverage.py COVERAGE.JSON SUMMARY.JSON UNCOVERED.TXT

Prints the line and branch coverage of each file and of all together, and
writes UNCOVERED.TXT: for each file, the blocks of lines no test executed
(runs of uncovered lines, with the lines without code between them), each
with its function and source, then the lines where a branch was never
taken. Each uncovered block wants a test, or a reason why none can reach
it (device-only, unreachable).
"""
import json
import sys


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
    return best["name"] + "()" if best else "(no function)"


def uncovered(path, out):
    with open(path) as f:
        data = json.load(f)
    out.write("# Lines of ndk/ that no test executed, by file: blocks of\n"
              "# uncovered lines with their function and source, then the\n"
              "# lines with a branch never taken.\n")
    for entry in data["files"]:
        with open(entry["file"]) as f:
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
        partial = [l["line_number"] for l in code if l["count"] > 0 and
                   any(b["count"] == 0 for b in l["branches"])]
        plural = "" if len(blocks) == 1 else "s"
        out.write(f"\n{entry['file']}: {len(missed)} of {len(code)} lines "
                  f"uncovered in {len(blocks)} block{plural}\n")
        for first, last in blocks:
            where = str(first) if first == last else f"{first}-{last}"
            out.write(f"  {where} in "
                      f"{function_at(entry['functions'], first)}\n")
            for no in range(first, last + 1):
                out.write(f"    {no:5} {source[no - 1]}\n")
        if partial:
            out.write("  a branch never taken: "
                      + " ".join(map(str, partial)) + "\n")


def main():
    with open(sys.argv[3], "w") as out:
        uncovered(sys.argv[1], out)
    summary(sys.argv[2])


if __name__ == "__main__":
    main()
