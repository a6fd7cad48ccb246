# SPDX-License-Identifier: GPL-2.0
"""What every VM console must be checked for, shared by the judges of
`make check` (judge.py), `make check-cross` (judge-cross.py), `make
distro-check` (judge-distro.py), `make stress` (stress-judge.py) and `make
selftest-loop` (judge-selftest-loop.py), and by `make bench` and `make
demo` through `splats.py cpus LOG`: lines that mean the kernel found a bug,
a guest that brought up fewer CPUs than QEMU gave it, a run that did not
end; and the core of the two judges of a pair of VMs (lib.sh's
boot_pair)."""
import argparse
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

# A KCSAN report (NDK_SANITIZER=kcsan) runs from its "BUG: KCSAN:" line
# to the next line of "=" (after the console's timestamp); it is ndk's if
# a stack in it names a function or a module of ndk.
KCSAN_RE = re.compile(r"\bBUG: KCSAN: (.*)")
KCSAN_END_RE = re.compile(r"^(?:\[[ \d.]+\] )?={20,}$")
NDK_CODE_RE = re.compile(r"\[ndk\w*\]|\bndk_\w+\+0x")


def kcsan_outside(lines):
    """The console's @lines without the "BUG:" lines of the KCSAN
    reports that name no code of ndk, and those reports' titles: a data
    race between other code (a driver, the RDMA core) is listed, not
    held against ndk.

    Each report is judged on its own stacks (6.12's workqueue race, then
    one in ndk):

    >>> bar = "[    2.000000] " + "=" * 66
    >>> console = [bar, "[    2.000001] BUG: KCSAN: data-race in a+0x1/0x2",
    ...     "[    2.000002]  process_scheduled_works+0x20a/0x878", bar,
    ...     "[    3.000000] ok 1 ndk_qp_test", bar,
    ...     "[    4.000001] BUG: KCSAN: data-race in b+0x1/0x2",
    ...     "[    4.000002]  worker_thread+0x1eb/0x2aa", bar,
    ...     bar, "[    5.000001] BUG: KCSAN: data-race in c+0x1/0x2",
    ...     "[    5.000002]  ndk_cq_poll+0x10/0x80 [ndk]", bar]
    >>> kept, outside = kcsan_outside(console)
    >>> outside
    ['data-race in a+0x1/0x2', 'data-race in b+0x1/0x2']
    >>> [line for line in kept if "BUG:" in line]
    ['[    5.000001] BUG: KCSAN: data-race in c+0x1/0x2']
    """
    kept, outside, i = [], [], 0
    while i < len(lines):
        match = KCSAN_RE.search(lines[i])
        if not match:
            kept.append(lines[i])
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not KCSAN_END_RE.match(lines[end].strip()):
            end += 1
        block = lines[i:end]
        if any(NDK_CODE_RE.search(line) for line in block):
            kept += block
        else:
            outside.append(match.group(1).strip())
            kept += block[1:]
        i = end
    return kept, outside


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


# What the kernel prints when a taint (a KASAN report, a bad page) makes
# lockdep's view unreliable and it stops checking.
LOCKDEP_OFF_RE = re.compile(r"Disabling lock debugging due to kernel taint")


def lockdep_problem(lines):
    """None unless the kernel turned lock debugging off during the run,
    else what is wrong: from then on no lock is checked, so a run that
    passes proves nothing about locking, whatever turned it off (a report
    while booting is only noted as a splat).

    >>> lockdep_problem(["[    0.005046] BUG: KASAN: wild-memory-access",
    ...                  "[    0.005046] Disabling lock debugging due to "
    ...                  "kernel taint"])
    'lock debugging was turned off at [    0.005046]: nothing after it was checked for locking'
    >>> lockdep_problem(["[    0.4] smp: Brought up 1 node, 2 CPUs"]) is None
    True
    """
    for line in lines:
        if LOCKDEP_OFF_RE.search(line):
            stamp = line[:line.index("]") + 1] if "]" in line else "a moment"
            return (f"lock debugging was turned off at {stamp}: nothing "
                    "after it was checked for locking")
    return None


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


def pair_args(ap=None):
    """The arguments of a pair's judge: each VM's QEMU status and its
    console log, after the judge's own arguments in @ap."""
    ap = ap or argparse.ArgumentParser()
    ap.add_argument("--server-rc", type=int, default=0)
    ap.add_argument("--client-rc", type=int, default=0)
    ap.add_argument("server_log")
    ap.add_argument("client_log")
    return ap.parse_args()


def pair_consoles(args):
    """(role, lines, QEMU status) of the server VM and the client VM;
    a console that was never written has no lines."""
    consoles = []
    for role, path, rc in (("server", args.server_log, args.server_rc),
                           ("client", args.client_log, args.client_rc)):
        try:
            with open(path, errors="replace") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            lines = []
        consoles.append((role, lines, rc))
    return consoles


def pair_problems(role, lines, qemu_rc, prefix):
    """What every console of a pair is failed for, each prefixed with
    @role: a splat after the guest script's "@prefix: setup" line (the
    script's "@prefix-..." lines copy the kernel log and are not read
    twice), its "@prefix: error:" lines, missing CPUs, and a run that did
    not reach "@prefix: done"."""
    problems = []
    setup = next((i for i, line in enumerate(lines)
                  if f"{prefix}: setup" in line), len(lines))
    splats = [line.strip() for line in lines[setup:]
              if SPLAT_RE.search(line) and f"{prefix}-" not in line]
    if splats:
        problems.append("kernel splat:\n  " + "\n  ".join(splats[:20]))
    problems += [line.strip() for line in lines
                 if f"{prefix}: error:" in line]
    cpus = cpu_problem(lines)
    if cpus:
        problems.append(cpus)
    lockdep = lockdep_problem(lines)
    if lockdep:
        problems.append(lockdep)
    problems += end_problems(lines, f"{prefix}: done", qemu_rc)
    return [f"{role}: {p}" for p in problems]


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "cpus":
        sys.exit("usage: splats.py cpus CONSOLE_LOG")
    with open(sys.argv[2], errors="replace") as f:
        problem = cpu_problem(f.read().splitlines())
    if problem:
        print(problem)
    sys.exit(1 if problem else 0)
