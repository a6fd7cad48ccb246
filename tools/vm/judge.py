#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge a test VM console log: KUnit results, interop cases, kernel
splats, completion.

Prints kunit.py's summary, every problem found, and a last line
"N passed, N failed[, N skipped]". Each interop case counts as one test.
A splat, a timeout or a missing end marker counts as one failure each,
so the run turns red even when every KUnit case passed.
"""
import argparse
import os
import re
import subprocess
import sys

from ktap_times import report
from splats import (SPLAT_RE, cpu_problem, end_problems, kcsan_outside,
                    lockdep_problem)

TS = r"^(?:\[[^\]]*\] )?"
SUITE_RESULT = re.compile(TS + r"(?:not )?ok \d+ ")


BEGIN = re.compile(r"NDK-CHECK: tests begin (\w+)")

# init.sh runs these before the suites of every transport: ndk_rping
# against rdma-core's rping, rdma_client and rdma_server, and a consumer
# module unloaded right after ndk_close_adapter() (tests/unload), and the
# Windows-style consumer on the WDK layer (samples/wdk_rdma).
INTEROP = re.compile(r"NDK-INTEROP: (ok|not ok) (\w+) (\S+)(.*)")
INTEROP_CASES = [
    "rping-user-client-ndk-server",
    "rping-ndk-client-user-server",
    "rdmacm-user-client-ndk-server",
    "rdmacm-ndk-client-user-server",
    "consumer-unload",
    "wdk-sample",
    "selftest",
    "nvmeof-linux-host",
    "nvmeof-ndk-host",
    "nvmeof-wrong-nqn",
    "nvmeof-refused",
    "nvmeof-slow-target",
    "nvmeof-target-gone",
]
# A try of an interop case that met a known defect of the device
# (deviations.rst); init.sh ran the case again.
DEFECT = re.compile(r"NDK-INTEROP-DEFECT: (.*)")


def runs_of(lines):
    """The transports the VM ran the suites over, with their lines.

    init.sh loads the test module once per transport between a begin and
    an end marker; a run without its end marker keeps everything after it.
    """
    runs = []
    for i, line in enumerate(lines):
        match = BEGIN.search(line)
        if not match:
            continue
        name = match.group(1)
        end = next((j for j in range(i + 1, len(lines))
                    if f"NDK-CHECK: tests end {name}" in lines[j]),
                   len(lines))
        runs.append((name, lines[i + 1:end]))
    return runs


def renumber_suites(body):
    """Number the suites' result lines 1, 2, ... in order.

    KUnit restarts its suite count whenever any module is unloaded (6.1's
    __kunit_test_suites_exit), and ndk_main unloads the RDMA driver:
    its own result line then says 1, which kunit.py takes for an error.
    """
    out, n = [], 0
    for line in body:
        match = SUITE_RESULT.match(line)
        if match:
            n += 1
            line = re.sub(r"^((?:not )?ok) \d+", rf"\g<1> {n}", line)
        out.append(line)
    return out


def ktap_of_module(body, path):
    """The suites of one load of the test module, as a KTAP document.

    6.1 prints a module's suites without the header that built-in suites
    get, which kunit.py needs; 6.12 prints one. Write exactly one, counting
    the suites' result lines.
    """
    body = [re.sub(TS, "", line, count=1) for line in body]
    # 6.12 prints the header itself (with the count of suites it loads).
    if any(line.startswith("KTAP version") for line in body[:3]):
        body = [line for line in body[:3]
                if not re.match(r"KTAP version|1\.\.\d+$", line)] + body[3:]
    body = renumber_suites(body)
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


COVERAGE = re.compile(r"coverage: (.*)$")


def write_coverage(runs, path):
    """The ndk_fault suite's report: failure points per path and run."""
    report = [f"{name}: {m.group(1).strip()}" for name, body in runs
              for m in map(COVERAGE.search, body) if m]
    if not report:
        return
    with open(path, "w") as f:
        f.write("\n".join(report) + "\n")
    print("check: failure injection coverage (" + path + "):\n  " +
          "\n  ".join(report))


def interop_results(lines, transport):
    """Passed count and problems of the interop cases over a transport.

    A case that reported nothing (the VM stopped, init.sh broke) fails
    like one that reported "not ok". A try that met a known defect of the
    device is printed as a note.
    """
    seen = {}
    for line in lines:
        match = INTEROP.search(line)
        if match and match.group(2) == transport:
            seen[match.group(3)] = (match.group(1), match.group(4).strip())
    for line in lines:
        match = DEFECT.search(line)
        if match and match.group(1).startswith(transport + " "):
            print("check: note: interop device defect: " + match.group(1))
    passed, problems = 0, []
    for case in INTEROP_CASES:
        result, why = seen.get(case, (None, ""))
        if result == "ok":
            passed += 1
        elif result is None:
            problems.append(f"interop over {transport}: {case}: no result")
        else:
            problems.append(f"interop over {transport}: {case}: not ok {why}")
    return passed, problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ktree", required=True)
    ap.add_argument("--qemu-rc", type=int, default=0)
    ap.add_argument("log")
    args = ap.parse_args()

    with open(args.log, errors="replace") as f:
        lines = f.read().splitlines()

    counts = {}
    problems = []
    runs = runs_of(lines)
    if not runs:
        problems.append("no KUnit results in the console log")
    for name, body in runs:
        ktap = os.path.join(os.path.dirname(os.path.abspath(args.log)),
                            f"kunit-{name}.log")
        ktap_of_module(body, ktap)
        print(f"check: suites over {name}")
        run, parsed = kunit_counts(args.ktree, ktap)
        if not parsed:
            problems.append(f"no KUnit results over {name}")
        for key, val in run.items():
            counts[key] = counts.get(key, 0) + val
        print(f"check: {name}: {run['passed']} passed, "
              f"{run['failed'] + run['crashed'] + run['errors']} failed")
        passed, failures = interop_results(lines, name)
        counts["passed"] = counts.get("passed", 0) + passed
        problems += failures
        print(f"check: interop over {name}: {passed} passed, "
              f"{len(failures)} failed")
    for key in ("passed", "failed", "skipped", "crashed", "errors"):
        counts.setdefault(key, 0)
    write_coverage(runs, os.path.join(os.path.dirname(
        os.path.abspath(args.log)), "fault-coverage.txt"))
    # Before the setup marker only the kernel itself has run: a splat
    # there (seen once: an early-boot KASAN report under TCG) is shown
    # but cannot be ndk's doing.
    setup = next((i for i, l in enumerate(lines)
                  if "NDK-CHECK: setup" in l), len(lines))
    boot = [line.strip() for line in lines[:setup] if SPLAT_RE.search(line)]
    if boot:
        print("check: note: splat while booting, before ndk was loaded:\n  "
              + "\n  ".join(boot[:5]))
    judged, races = kcsan_outside(lines[setup:])
    for race in sorted(set(races)):
        print(f"check: note: KCSAN data race outside ndk: {race}")
    splats = [line.strip() for line in judged if SPLAT_RE.search(line)]
    if splats:
        problems.append("kernel splat:\n  " + "\n  ".join(splats[:20]))
    problems += ["setup: " + line.strip() for line in lines
                 if "NDK-CHECK:" in line and "failed" in line]
    cpus = cpu_problem(lines)
    if cpus:
        problems.append(cpus)
    lockdep = lockdep_problem(lines)
    if lockdep:
        problems.append(lockdep)
    problems += end_problems(lines, "NDK-CHECK: done", args.qemu_rc)

    print(report(lines), end="")
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
