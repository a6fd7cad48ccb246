#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge the two consoles of `make check-cross`.

Each case of cross-init.sh passes when both VMs reported "NDK-CROSS: ok"
for it. Each problem of a console (splats.py's pair_problems: a splat, an
error line, missing CPUs, a timeout, a missing end marker) counts as one
more failure. A try over siw that met siw's unread first message, which
the VMs ran again, is printed as a note. The last line is "N passed, N
failed".
"""
import argparse
import os
import re
import sys

# The shared patterns, without leaving bytecode in the tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from splats import pair_args, pair_consoles, pair_problems  # noqa: E402

TRANSPORTS = ["rxe", "siw"]
CASES = [
    "ndk-client-hangup",
    "ndk-server-hangup",
    "rping-user-client-ndk-server",
    "rping-ndk-client-user-server",
    "ndk-server-removal",
    "ndk-client-removal",
    "nvmeof-ndk-host",
]
RESULT = re.compile(r"NDK-CROSS: (ok|not ok) (\w+) (\S+)(.*)")
DEFECT = re.compile(r"NDK-CROSS-DEFECT: (.*)")


def results(lines):
    """The result of each (transport, case) one console reported."""
    found = {}
    for line in lines:
        match = RESULT.search(line)
        if match:
            found[(match.group(2), match.group(3))] = (
                match.group(1), match.group(4).strip())
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--transports", default="rxe,siw")
    args = pair_args(ap)

    consoles = {}
    problems = []
    for role, lines, rc in pair_consoles(args):
        consoles[role] = results(lines)
        problems += pair_problems(role, lines, rc, "NDK-CROSS")
        for line in lines:
            match = DEFECT.search(line)
            if match:
                print("check-cross: note: device defect: " + match.group(1))

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
