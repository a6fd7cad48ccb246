# SPDX-License-Identifier: GPL-2.0
"""Where a test VM's guest time goes, read from its console log.

The test kernels stamp every console line with the guest's clock
(CONFIG_PRINTK_TIME). A KUnit case's time is the stamp of its result
line minus that of the line before it that began it: the suite's
header, or the result line of the case (or parameter) before it. A
suite's time runs from its "# Subtest:" header to its own result line.

Used by judge.py (the slowest cases and each suite's total at the end of
`make check`) and follow.py (the results as the guest prints them).
"""
import re

STAMP = re.compile(r"^\[\s*(\d+\.\d+)\] ")
SUBTEST = re.compile(r"^(\s*)# Subtest: (.+)$")
RESULT = re.compile(r"^(\s*)(ok|not ok) \d+ (?:- )?([^#]*?)\s*(?:# (\w+).*)?$")
BEGIN = re.compile(r"NDK-CHECK: tests begin (\w+)")


class Event:
    """A result line: a case, a parameter of one, or a suite."""

    def __init__(self, transport, path, result, directive, seconds,
                 parent=False):
        self.transport = transport
        # Suite, case and parameter names, outermost first.
        self.path = path
        self.ok = result == "ok"
        self.skipped = (directive or "").upper() == "SKIP"
        self.seconds = seconds
        # It closes a "# Subtest:" level: a suite, or a case whose
        # parameters were results of their own.
        self.parent = parent

    @property
    def name(self):
        return " / ".join(self.path)


class Reader:
    """Feed console lines in order; results come out as Events.

    Nesting is read from the indentation, as kunit.py reads it: a
    "# Subtest:" header opens a level, whose results share its
    indentation; the level's own result, one step out, closes it.
    """

    def __init__(self):
        self.transport = None
        self.stack = []     # [indent, name, start stamp, last stamp]

    def feed(self, line):
        """The Event a console line completes, or None."""
        line = line.rstrip("\r\n")
        # init.sh's own lines carry no stamp.
        begin = BEGIN.search(line)
        if begin:
            self.transport = begin.group(1)
            self.stack = []
            return None
        match = STAMP.match(line)
        if not match or self.transport is None:
            return None
        now = float(match.group(1))
        text = line[match.end():]
        match = SUBTEST.match(text)
        if match:
            indent = len(match.group(1))
            while self.stack and self.stack[-1][0] >= indent:
                self.stack.pop()
            self.stack.append([indent, match.group(2).strip(), now, now])
            return None
        match = RESULT.match(text)
        if not match:
            return None
        indent = len(match.group(1))
        name = match.group(3).strip()
        # KTAP indents a level's header and results one step (4 spaces)
        # deeper than the line giving the level's own result.
        if self.stack and self.stack[-1][0] > indent and \
                self.stack[-1][1] == name:
            _, _, start, _ = self.stack.pop()
            path = [s[1] for s in self.stack] + [name]
            if self.stack:
                self.stack[-1][3] = now
            return Event(self.transport, path, match.group(2),
                         match.group(4), now - start, parent=True)
        if not self.stack or self.stack[-1][0] != indent:
            return None
        parent = self.stack[-1]
        seconds = now - parent[3]
        parent[3] = now
        return Event(self.transport, [s[1] for s in self.stack] + [name],
                     match.group(2), match.group(4), seconds)


def events(lines):
    reader = Reader()
    for line in lines:
        event = reader.feed(line)
        if event:
            yield event


def report(lines, slowest=20):
    """Text: each suite's guest seconds per transport, then the slowest
    cases (parameters counted within their case)."""
    suites, cases = {}, []
    for ev in events(lines):
        if len(ev.path) == 1:
            key = ev.path[0]
            suites.setdefault(key, {})[ev.transport] = ev.seconds
        elif len(ev.path) == 2:
            cases.append(ev)
    if not suites:
        return ""
    transports = sorted({t for per in suites.values() for t in per})
    out = ["guest seconds per suite (" + ", ".join(transports) + "):"]
    total = {t: 0.0 for t in transports}
    for name, per in sorted(suites.items(), key=lambda kv: -sum(kv[1].values())):
        cols = []
        for t in transports:
            cols.append(f"{per[t]:7.1f}" if t in per else "      -")
            total[t] += per.get(t, 0.0)
        out.append("  " + " ".join(cols) + "  " + name)
    out.append("  " + " ".join(f"{total[t]:7.1f}" for t in transports) +
               "  all suites")
    out.append(f"the {min(slowest, len(cases))} slowest cases, guest seconds:")
    for ev in sorted(cases, key=lambda e: -e.seconds)[:slowest]:
        out.append(f"  {ev.seconds:7.1f}  {ev.transport}  {ev.name}")
    return "\n".join(out) + "\n"
