#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge a test VM console log: KUnit results, kernel splats, completion.

Prints kunit.py's summary, every problem found, and a last line
"N passed, N failed[, N skipped]". A splat, a timeout or a missing end
marker counts as one failure each, so the run turns red even when every
KUnit case passed.
"""
import argparse
import os
import re
import subprocess
import sys

SPLATS = [
    r"\bBUG:",
    r"\bWARNING:",
    r"\bOops\b",
    r"general protection fault",
    r"KASAN:",
    r"unreferenced object 0x",
    r"sleeping function called from invalid context",
    r"possible recursive locking detected",
    r"possible circular locking dependency",
    r"inconsistent lock state",
    r"INFO: task .* blocked for more than",
    r"Kernel panic",
    r"UBSAN:",
    r"refcount_t:",
]
SPLAT_RE = re.compile("|".join(SPLATS))


TS = r"^(?:\[[^\]]*\] )?"
SUITE_RESULT = re.compile(TS + r"(?:not )?ok \d+ ")


def ktap_of_module(lines, path):
    """The suites of the test module, under a top-level KTAP header.

    A module's suites are printed without the header that built-in suites
    get, which kunit.py needs; add it, counting the suites' result lines.
    """
    try:
        begin = next(i for i, l in enumerate(lines)
                     if "NDK-CHECK: tests begin" in l)
    except StopIteration:
        begin = len(lines)
    body = [re.sub(TS, "", line, count=1) for line in lines[begin + 1:]]
    suites = sum(1 for line in body if SUITE_RESULT.match(line))
    with open(path, "w") as f:
        f.write(f"KTAP version 1\n1..{suites}\n")
        f.write("\n".join(body) + "\n")


def kunit_counts(ktree, log):
    tool = f"{ktree}/tools/testing/kunit/kunit.py"
    proc = subprocess.run([sys.executable, tool, "parse", log],
                          capture_output=True, text=True, check=False)
    out = proc.stdout + proc.stderr
    print(out, end="")
    counts = {"passed": 0, "failed": 0, "skipped": 0, "crashed": 0,
              "errors": 0}
    match = re.search(r"Ran \d+ tests?: (.*)", out)
    if match:
        for key, val in re.findall(r"(\w+): (\d+)", match.group(1)):
            if key in counts:
                counts[key] = int(val)
    return counts, bool(match)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ktree", required=True)
    ap.add_argument("--qemu-rc", type=int, default=0)
    ap.add_argument("log")
    args = ap.parse_args()

    with open(args.log, errors="replace") as f:
        lines = f.read().splitlines()

    ktap = os.path.join(os.path.dirname(os.path.abspath(args.log)),
                        "kunit.log")
    ktap_of_module(lines, ktap)
    counts, parsed = kunit_counts(args.ktree, ktap)
    problems = []
    if not parsed:
        problems.append("no KUnit results in the console log")
    # Before the setup marker only the kernel itself has run: a splat
    # there (seen once: an early-boot KASAN report under TCG) is shown
    # but cannot be ndk's doing.
    setup = next((i for i, l in enumerate(lines)
                  if "NDK-CHECK: setup" in l), len(lines))
    boot = [line.strip() for line in lines[:setup] if SPLAT_RE.search(line)]
    if boot:
        print("check: note: splat while booting, before ndk was loaded:\n  "
              + "\n  ".join(boot[:5]))
    splats = [line.strip() for line in lines[setup:]
              if SPLAT_RE.search(line)]
    if splats:
        problems.append("kernel splat:\n  " + "\n  ".join(splats[:20]))
    problems += ["setup: " + line.strip() for line in lines
                 if "NDK-CHECK:" in line and "failed" in line]
    if args.qemu_rc == 124:
        problems.append("the VM timed out")
    if not any("NDK-CHECK: done" in line for line in lines):
        problems.append("the VM did not reach the end of the run")

    for p in problems:
        print("check: " + p)
    failed = counts["failed"] + counts["crashed"] + counts["errors"]
    failed += len(problems)
    summary = f"{counts['passed']} passed, {failed} failed"
    if counts["skipped"]:
        summary += f", {counts['skipped']} skipped"
    print(summary)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
