# SPDX-License-Identifier: GPL-2.0
"""What every VM console must be checked for, shared by the judges of
`make check` (judge.py), `make check-cross` (judge-cross.py), `make
stress` (stress-judge.py) and `make selftest-loop`
(judge-selftest-loop.py), and by `make bench` and `make demo` through
`splats.py cpus LOG`: lines that mean the kernel found a bug, and a guest
that brought up fewer CPUs than QEMU gave it."""
import os
import re
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

# kmemleak's report: one such line per leaked object.
LEAK_RE = re.compile(r"unreferenced object 0x")

# The line 6.1, 6.12 and 7.3 print once the secondary CPUs are up.
CPUS_RE = re.compile(r"smp: Brought up \d+ nodes?, (\d+) CPUs?")


def read_console(path, marker, name):
    """The console log's lines, and the index of the line with @marker,
    where ndk's part of the run begins; splats before it (the kernel's
    own boot) are printed as a note of @name, not judged."""
    with open(path, errors="replace") as f:
        lines = f.read().splitlines()
    setup = next((i for i, line in enumerate(lines) if marker in line),
                 len(lines))
    boot = [line.strip() for line in lines[:setup] if SPLAT_RE.search(line)]
    if boot:
        print(f"{name}: note: splat while booting, before ndk was "
              "loaded:\n  " + "\n  ".join(boot[:5]))
    return lines, setup


def cpu_problem(lines):
    """None if the guest brought up the NDK_VM_CPUS that lib.sh gave
    QEMU, else what is wrong: every concurrency claim needs them."""
    want = int(os.environ.get("NDK_VM_CPUS", "2"))
    for line in lines:
        match = CPUS_RE.search(line)
        if match:
            got = int(match.group(1))
            if got < want:
                return f"the guest brought up {got} of {want} CPUs"
            return None
    return f"the guest never said it brought up its {want} CPUs"


def end_problems(lines, marker, qemu_rc):
    """What is wrong with how the run ended: QEMU's timeout, or no
    @marker line, quoted with the console's last lines, where the guest
    stopped (a hang's only trace once the run's tree is gone)."""
    problems = []
    if qemu_rc == 124:
        problems.append("the VM timed out")
    if not any(marker in line for line in lines):
        last = [line.strip() for line in lines[-12:] if line.strip()]
        problems.append("the VM did not reach the end of the run; the "
                        "console ended with:\n  " + "\n  ".join(last))
    return problems


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "cpus":
        sys.exit("usage: splats.py cpus CONSOLE_LOG")
    with open(sys.argv[2], errors="replace") as f:
        problem = cpu_problem(f.read().splitlines())
    if problem:
        print(problem)
    sys.exit(1 if problem else 0)
