#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge the console log of `make stress`.

For each transport the VM ran, ndk_stress's summary line must say
result=PASS (every started operation completed, was cancelled or failed
where the cycle provoked it; no data mismatch, nothing stuck), and ndk's
counters read after the module's unload must show no object left open
and as many completions polled as requests posted. Any splat or leak on
the console, a VM timeout or a missing end marker fails the run too.

The last line is always "stress: <ops> operations, <splats> splats,
<leaks> leaks"; the exit status is non-zero on any problem.
"""
import argparse
import re
import sys

from splats import LEAK_RE, SPLAT_RE, cpu_problem, end_problems, read_console

BEGIN = re.compile(r"NDK-STRESS: begin (\w+)")
SUMMARY = re.compile(r"ndk_stress: done: (.*)$")
STAT = re.compile(r"NDK-STAT: (\w+) (\w+) (\d+)")
COMPLAINT = re.compile(r"ndk_stress: thread .*")


def sections(lines):
    """(transport, lines) of each pass, from its begin marker on."""
    starts = [(i, m.group(1)) for i, line in enumerate(lines)
              for m in [BEGIN.search(line)] if m]
    ends = [i for i, _ in starts[1:]] + [len(lines)]
    return [(name, lines[i:end]) for (i, name), end in zip(starts, ends)]


def judge_pass(name, body):
    """Operations of one pass and its problems."""
    problems = []
    summary = next((m.group(1) for m in map(SUMMARY.search, body) if m),
                   None)
    if summary is None:
        return 0, [f"{name}: ndk_stress printed no summary"]
    fields = dict(kv.split("=", 1) for kv in summary.split())
    ops = int(fields.get("ops", 0))
    print(f"stress: {name}: {fields.get('cycles')} cycles in "
          f"{fields.get('seconds')} s over {fields.get('threads')} threads, "
          f"{ops} operations ({fields.get('ops_per_s')}/s): "
          f"{fields.get('completed')} completed, "
          f"{fields.get('cancelled')} cancelled, "
          f"{fields.get('failed')} failed as provoked; "
          f"{fields.get('callback_closes')} closes from callbacks, "
          f"{fields.get('verified')} transfers verified; "
          f"{fields.get('unpolled_closes')} QPs closed unpolled with "
          f"{fields.get('closed_outstanding')} requests outstanding")
    if fields.get("result") != "PASS":
        problems.append(
            f"{name}: result {fields.get('result')}: "
            f"{fields.get('bad')} bad statuses, "
            f"{fields.get('unaccounted')} operations unaccounted, "
            f"{fields.get('problems')} problems")
        complaints = [m.group(0) for m in map(COMPLAINT.search, body) if m]
        problems += [f"{name}: {c}" for c in complaints[:20]]
    stats = {m.group(2): int(m.group(3)) for m in map(STAT.search, body)
             if m and m.group(1) == name}
    if not stats:
        problems.append(f"{name}: no counters from ndk's debugfs")
    left = {k: v for k, v in stats.items()
            if (k.startswith("open_") or k == "established_connections")
            and v}
    if left:
        problems.append(f"{name}: left open after the unload: {left}")
    if stats.get("requests_posted") != stats.get("requests_completed"):
        problems.append(
            f"{name}: {stats.get('requests_posted')} requests posted but "
            f"{stats.get('requests_completed')} completions polled")
    return ops, problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qemu-rc", type=int, default=0)
    ap.add_argument("log")
    args = ap.parse_args()

    lines, setup = read_console(args.log, "NDK-STRESS: setup", "stress")
    run = lines[setup:]
    leaks = [line.strip() for line in run if LEAK_RE.search(line)]
    splats = [line.strip() for line in run
              if SPLAT_RE.search(line) and not LEAK_RE.search(line)]

    ops, problems = 0, []
    passes = sections(lines)
    if not passes:
        problems.append("no stress pass ran")
    for name, body in passes:
        n, found = judge_pass(name, body)
        ops += n
        problems += found
    if splats:
        problems.append("kernel splat:\n  " + "\n  ".join(splats[:20]))
    if leaks:
        problems.append("kmemleak:\n  " + "\n  ".join(leaks[:20]))
    problems += ["setup: " + line.strip() for line in run
                 if "NDK-STRESS:" in line and "failed" in line]
    cpus = cpu_problem(lines)
    if cpus:
        problems.append(cpus)
    problems += end_problems(lines, "NDK-STRESS: done", args.qemu_rc)

    for p in problems:
        print("stress: " + p)
    print(f"stress: {ops} operations, {len(splats)} splats, "
          f"{len(leaks)} leaks")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
