#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge the two consoles of `make distro-check`.

Each VM ran ndk_selftest in loopback and then one side of a run between
the two VMs (distro-init.sh). A run passes when insmod succeeded and its
last line reads "ndk_selftest: N passed, 0 failed, N skipped" with at
least the minimum number of passes. With --nvmeof (the kernel has
nvmet-rdma), the case nvmeof-ndk-host counts as one more check: the
client's ndk_nvmeof loaded with a PASS, and the server found each of the
markers (at least two) it logged on its device. Each of these counts as
one more failure: a kernel splat after setup, an error line of the guest
script, a missing end marker, a timeout, fewer CPUs than QEMU was given,
a taint flag other than O (out-of-tree module) and E (unsigned module:
DKMS signs with a key of the machine's own, which Debian's kernel does
not trust unless it is enrolled), and any kernel line of level err or
worse that the runs caused, except while a session that provokes a
refused access (its name ends in "_refused") is under way: the device
logs the access error it reports, and that is the check passing. The
last line is "N passed, N failed, N skipped".
"""
import argparse
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from splats import pair_args, pair_consoles, pair_problems  # noqa: E402

# Distinct checks a run must pass; the passive side of the pair runs the
# local checks and the server's own.
MIN_PASSED = {"loopback": 40, "pair-client": 40, "pair-server": 20}
TAINT_ALLOWED = {12: "O", 13: "E"}
TAINT_LETTERS = "PFSRMBUDAWCIOELKXTN"
SUMMARY = re.compile(r"ndk_selftest: (\d+) passed, (\d+) failed, (\d+) skipped")
KMSG = re.compile(r"DISTRO-KMSG (\S+): <(\d+)>(.*)")
RESULT = re.compile(r"^(?:\[[ \d.]+\] )?(not ok|ok) \d+ (\S+)")
SESSION = re.compile(r"# session (end )?(\S+)")
RUN = re.compile(r"DISTRO: run (\S+) rc=(\d+)")
MARKER = re.compile(r"ndk_nvmeof: marker q\d+ at byte \d+: ")
MARKERS_CHECKED = re.compile(r"DISTRO: nvmeof markers (ok (\d+)|not ok .*)")


def kmsg_problems(role, kmsg):
    """Error-level kernel lines outside the refused-access sessions."""
    problems, refused = [], set()
    for run, level, text in kmsg:
        session = SESSION.search(text)
        result = RESULT.search(text)
        if session:
            name = session.group(2)
            if session.group(1):
                refused.discard(name)
            elif name.endswith("_refused"):
                refused.add(name)
        elif result:
            refused.discard(result.group(2))
        elif level <= 3 and not refused:
            problems.append(f"{role}: {run}: kernel error line: {text.strip()}")
    return problems


def judge_console(role, lines):
    """The runs of one console, and its problems other than the common
    ones."""
    runs, problems, kmsg = {}, [], []
    for line in lines:
        m = RUN.search(line)
        if m:
            runs.setdefault(m.group(1), {})["rc"] = int(m.group(2))
        m = KMSG.search(line)
        if m:
            n = int(m.group(2))
            # Facility 0 is the kernel's own; its level is the low bits.
            if n < 8:
                kmsg.append((m.group(1), n, m.group(3)))
        m = MARKERS_CHECKED.search(line)
        if m:
            runs["nvmeof-target"] = {"markers": m.group(1)}
        m = re.search(r"DISTRO: tainted (\d+)", line)
        if m:
            bad = [TAINT_LETTERS[b] for b in range(len(TAINT_LETTERS))
                   if int(m.group(1)) >> b & 1 and b not in TAINT_ALLOWED]
            if bad:
                problems.append(f"{role}: kernel tainted {''.join(bad)} "
                                f"({m.group(1)})")
    if not any("DISTRO: tainted" in l for l in lines):
        problems.append(f"{role}: no taint report")

    # Each run's summary and failed cases, from its own kernel log.
    for run, level, text in kmsg:
        if run == "nvmeof":
            r = runs.setdefault("nvmeof", {})
            r["pass"] = r.get("pass") or "ndk_nvmeof: PASS" in text
            r["markers"] = r.get("markers", 0) + bool(MARKER.search(text))
            continue
        name = "loopback" if run == "loopback" else f"pair-{role}"
        if run not in ("loopback", "pair"):
            continue
        r = runs.setdefault(name, {})
        m = SUMMARY.search(text)
        if m:
            r["summary"] = tuple(int(x) for x in m.groups())
        m = RESULT.search(text)
        if m and m.group(1) == "not ok":
            r.setdefault("failed", []).append(m.group(2))
    problems += kmsg_problems(role, kmsg)
    return runs, problems


def nvmeof_problem(client, server):
    """Why the case nvmeof-ndk-host failed, from the runs of the client's
    and the server's console, or None."""
    run = client.get("nvmeof")
    if run is None:
        return "the client did not run ndk_nvmeof"
    if run.get("rc") != 0 or not run.get("pass"):
        return f"ndk_nvmeof: insmod exited with {run.get('rc')}, " + \
            ("PASS" if run.get("pass") else "no PASS")
    checked = server.get("nvmeof-target", {}).get("markers")
    if checked is None:
        return "the server did not check the markers"
    if checked != f"ok {run['markers']}":
        return f"the client logged {run['markers']} markers; the " \
            f"server's check: {checked}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nvmeof", action="store_true",
                    help="the kernel has nvmet-rdma: judge nvmeof-ndk-host")
    args = pair_args(ap)

    passed = failed = skipped = 0
    problems = []
    consoles = {}
    for role, lines, rc in pair_consoles(args):
        problems += pair_problems(role, lines, rc, "DISTRO")
        runs, found = judge_console(role, lines)
        consoles[role] = runs
        problems += found
        for name in ("loopback", f"pair-{role}"):
            r = runs.get(name, {})
            if "summary" not in r:
                problems.append(f"{role}: {name}: no summary line")
                continue
            p, f_, s = r["summary"]
            print(f"distro-check: {role} {name}: {p} passed, {f_} failed, "
                  f"{s} skipped")
            passed += p
            failed += f_
            skipped += s
            for case in r.get("failed", []):
                print(f"distro-check: {role} {name}: not ok {case}")
            if r.get("rc") != 0:
                problems.append(f"{role}: {name}: insmod exited with "
                                f"{r.get('rc')}")
            if p < MIN_PASSED[name]:
                problems.append(f"{role}: {name}: only {p} checks passed")

    if args.nvmeof:
        why = nvmeof_problem(consoles["client"], consoles["server"])
        if why:
            print(f"distro-check: not ok nvmeof-ndk-host ({why})")
            failed += 1
        else:
            print("distro-check: ok nvmeof-ndk-host")
            passed += 1
    else:
        print("distro-check: skipped nvmeof-ndk-host (the kernel has no "
              "nvmet-rdma)")
        skipped += 1

    for p in problems:
        print("distro-check: " + p)
    failed += len(problems)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
