#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge the console log of `make selftest-loop`.

selftest-loop-init.sh loads ndk_selftest.ko once per run, between
"NDK-LOOP: run <n> begin" and "NDK-LOOP: run <n> end rc=<rc>", and scans
for leaks before the end marker. A run passes when insmod returned 0, the
self-test's summary reads "ndk_selftest: N passed, 0 failed, N skipped",
and no splat of make check's list (splats.py, kmemleak's reports
included) and no "NDK-LOOP: ... failed" line came between its markers.
What goes wrong before the first run (setup) fails the first run, what
goes wrong after the last (device deletion, ndk's unload, the final leak
scan, a missing end marker) fails the last one; a run without its end
marker (the VM stopped or timed out) fails, and a guest with fewer CPUs
than QEMU gave it fails every run. A check that survived a known defect of
the device (deviations.rst) says "# <check>: device defect: ..."; such
lines are listed by run, and the guest dumps that run's connection
manager trace ("NDK-TRACE:" lines) with them, as it does for a failed run.

The last line is "selftest-loop: P of N runs passed"; the exit status is
non-zero unless P is N.
"""
import argparse
import re
import sys

from splats import (SPLAT_RE, cpu_problem, end_problems,
                    lockdep_problem, read_console)

BEGIN = re.compile(r"NDK-LOOP: run (\d+) begin")
END = re.compile(r"NDK-LOOP: run (\d+) end rc=(\d+)")
SUMMARY = re.compile(r"ndk_selftest: (\d+) passed, (\d+) failed, (\d+) skipped")
# A failed check of the self-test, then its reason (KTAP).
NOT_OK = re.compile(r"^(?:\[[ \d.]+\] )?(not ok \d+ (\S+).*)$")
REASON = re.compile(r"^(?:\[[ \d.]+\] )?(# (\S+): .*)$")
# A known defect of the device that a check survived (deviations.rst).
DEFECT = re.compile(r"# \S+: device defect: .*$")


def problems_in(lines):
    """Splats and failed steps of the guest script among @lines."""
    found = [f"kernel splat: {line.strip()}" for line in lines
             if SPLAT_RE.search(line)]
    found += [line.strip() for line in lines
              if "NDK-LOOP:" in line and "failed" in line]
    return found


def failed_checks(body):
    """The self-test's "not ok" lines, each with its reason."""
    out, failed = [], set()
    for line in body:
        m = NOT_OK.search(line)
        if m:
            failed.add(m.group(2))
            out.append(m.group(1))
            continue
        m = REASON.search(line)
        if m and m.group(2) in failed:
            out.append("  " + m.group(1))
    return out


def judge_run(body, rc):
    """Problems of one run: @body its lines, @rc insmod's status."""
    problems = []
    summaries = [m for m in map(SUMMARY.search, body) if m]
    if len(summaries) != 1:
        problems.append(f"{len(summaries)} summary lines of ndk_selftest")
    elif int(summaries[0].group(2)):
        problems.append(summaries[0].group(0))
        problems += failed_checks(body)
    if rc is None:
        problems.append("no end marker")
    elif rc:
        problems.append(f"insmod ndk_selftest returned {rc}")
    return problems + problems_in(body)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loops", type=int, required=True)
    ap.add_argument("--qemu-rc", type=int, default=0)
    ap.add_argument("log")
    args = ap.parse_args()

    lines, setup = read_console(args.log, "NDK-LOOP: setup",
                                "selftest-loop")

    begins, ends = {}, {}
    for i, line in enumerate(lines):
        m = BEGIN.search(line)
        if m:
            begins.setdefault(int(m.group(1)), i)
        m = END.search(line)
        if m:
            ends.setdefault(int(m.group(1)), (i, int(m.group(2))))

    runs = {}
    last_end = setup
    for n in range(1, args.loops + 1):
        if n not in begins:
            runs[n] = ["did not run"]
            continue
        start = begins[n]
        end, rc = ends.get(n, (len(lines), None))
        runs[n] = judge_run(lines[start + 1:end], rc)
        last_end = max(last_end, end + 1)
    first_begin = begins.get(1, len(lines))
    runs[1] += problems_in(lines[setup:first_begin])
    after = problems_in(lines[last_end:])
    after += end_problems(lines, "NDK-LOOP: done", args.qemu_rc)
    runs[args.loops] += [f"after the last run: {p}" for p in after]
    for whole in (cpu_problem(lines), lockdep_problem(lines)):
        if whole:
            for n in runs:
                runs[n].append(whole)

    passed = 0
    for n in sorted(runs):
        if not runs[n]:
            passed += 1
            continue
        print(f"selftest-loop: run {n} failed:\n  " +
              "\n  ".join(runs[n][:30]))
    for n in sorted(begins):
        end = ends.get(n, (len(lines), None))[0]
        for m in filter(None, map(DEFECT.search, lines[begins[n]:end])):
            print(f"selftest-loop: run {n}: {m.group(0)}")
    counts = [m.group(0) for m in map(SUMMARY.search, lines) if m]
    if counts and len(set(counts)) == 1:
        print(f"selftest-loop: every run said: {counts[0]}")
    print(f"selftest-loop: {passed} of {args.loops} runs passed")
    return 0 if passed == args.loops else 1


if __name__ == "__main__":
    sys.exit(main())
