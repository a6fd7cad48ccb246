#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Print a test VM's progress while it runs, as kunit.py does.

Usage: follow.py CONSOLE.LOG DONE-FILE

Reads the console log as QEMU writes it, until DONE-FILE exists and the
log has no more to give, and prints: each suite's verdict with its
cases' counts and guest seconds, and running counts per transport; a
failed case at once; the interop cases; the harness's own markers; a
splat's first line. The verdict is judge.py's, after the run; this only
shows where the guest is, so that a hang shows where it sits.
"""
import os
import sys
import time

from ktap_times import Reader
from splats import SPLAT_RE

MARKERS = ("NDK-CHECK:", "NDK-INTEROP:", "NDK-INTEROP-DEFECT:")


def say(text):
    print(time.strftime("[%H:%M:%S] ") + text, flush=True)


class Progress:
    def __init__(self):
        self.reader = Reader()
        self.counts = {}
        # Leaf results of the suite that is running: passed, failed, skipped.
        self.suite = [0, 0, 0]

    def line(self, line):
        text = line.rstrip("\r\n")
        for marker in MARKERS:
            at = text.find(marker)
            if at >= 0:
                say(text[at:])
        if SPLAT_RE.search(text):
            say("splat: " + text.strip())
        ev = self.reader.feed(text)
        if not ev:
            return
        t = ev.transport
        c = self.counts.setdefault(t, [0, 0, 0])
        if len(ev.path) == 1:
            p, f, s = self.suite
            self.suite = [0, 0, 0]
            verdict = "ok" if ev.ok else "not ok"
            say(f"{t}: {verdict} {ev.path[0]}: {p} passed, {f} failed, "
                f"{s} skipped, {ev.seconds:.1f} s; {t} so far: "
                f"{c[0]} passed, {c[1]} failed, {c[2]} skipped")
            return
        # A case with parameters is counted by its parameters.
        if ev.parent:
            return
        i = 2 if ev.skipped else (0 if ev.ok else 1)
        c[i] += 1
        self.suite[i] += 1
        if i == 1:
            say(f"{t}: not ok {ev.name}")


def main():
    log, done = sys.argv[1], sys.argv[2]
    progress = Progress()
    while not os.path.exists(log):
        if os.path.exists(done):
            return 0
        time.sleep(1)
    with open(log, errors="replace") as f:
        pending = ""
        while True:
            chunk = f.readline()
            if chunk:
                pending += chunk
                if pending.endswith("\n"):
                    progress.line(pending)
                    pending = ""
                continue
            if os.path.exists(done):
                break
            time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
