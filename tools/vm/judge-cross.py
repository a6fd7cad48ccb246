#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge the two consoles of `make check-cross`.

Each case of cross-init.sh passes when both VMs reported "NDK-CROSS: ok"
for it. A splat in either console, an error line, a timeout or a missing
end marker counts as one failure each. The last line is
"N passed, N failed".
"""
import argparse
import os
import re
import sys

# The shared patterns, without leaving bytecode in the tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from splats import SPLAT_RE, cpu_problem, end_problems  # noqa: E402

TRANSPORTS = ["rxe", "siw"]
CASES = [
    "ndk-client-hangup",
    "ndk-server-hangup",
    "rping-user-client-ndk-server",
    "rping-ndk-client-user-server",
    "ndk-server-removal",
    "ndk-client-removal",
]
RESULT = re.compile(r"NDK-CROSS: (ok|not ok) (\w+) (\S+)(.*)")


def judge_console(role, lines, qemu_rc):
    """Results per (transport, case) and the problems of one console."""
    results, problems = {}, []
    for line in lines:
        match = RESULT.search(line)
        if match:
            results[(match.group(2), match.group(3))] = (
                match.group(1), match.group(4).strip())
    # Before the setup marker only the kernel itself has run.
    setup = next((i for i, l in enumerate(lines)
                  if "NDK-CROSS: setup" in l), len(lines))
    splats = [l.strip() for l in lines[setup:] if SPLAT_RE.search(l)]
    if splats:
        problems.append(f"{role}: kernel splat:\n  " +
                        "\n  ".join(splats[:20]))
    problems += [f"{role}: " + l.strip() for l in lines
                 if "NDK-CROSS: error:" in l]
    cpus = cpu_problem(lines)
    if cpus:
        problems.append(f"{role}: {cpus}")
    problems += [f"{role}: {p}"
                 for p in end_problems(lines, "NDK-CROSS: done", qemu_rc)]
    return results, problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server-rc", type=int, default=0)
    ap.add_argument("--client-rc", type=int, default=0)
    ap.add_argument("--transports", default="rxe,siw")
    ap.add_argument("server_log")
    ap.add_argument("client_log")
    args = ap.parse_args()

    consoles = {}
    problems = []
    for role, path, rc in (("server", args.server_log, args.server_rc),
                           ("client", args.client_log, args.client_rc)):
        try:
            with open(path, errors="replace") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            lines = []
        consoles[role], found = judge_console(role, lines, rc)
        problems += found

    passed = 0
    for t in args.transports.split(","):
        ok = 0
        for case in CASES:
            why = []
            for role in ("server", "client"):
                result, reason = consoles[role].get((t, case),
                                                    (None, ""))
                if result is None:
                    why.append(f"{role}: no result")
                elif result != "ok":
                    why.append(reason)
            if why:
                problems.append(f"{t} {case}: not ok " + "; ".join(why))
            else:
                ok += 1
        print(f"check-cross: {t}: {ok} passed, {len(CASES) - ok} failed")
        passed += ok

    for p in problems:
        print("check-cross: " + p)
    print(f"{passed} passed, {len(problems)} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
