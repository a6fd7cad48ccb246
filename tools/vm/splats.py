# SPDX-License-Identifier: GPL-2.0
"""Console lines that mean the kernel found a bug: shared by the judges
of `make check` (judge.py) and `make stress` (stress-judge.py)."""
import re

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
