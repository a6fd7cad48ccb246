#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check the seams between the files of ndk/.

Reads `nm` of every ndk/*.o (a built tree) and draws the file-level
graph: file A points at file B when A's object leaves undefined a
symbol B's object defines.  Fails on:

  - a cycle of files (A -> B -> ... -> A): arrows point one way;
  - the lifetime core and module code (object.c, main.c) naming a
    symbol of an object file: they reach objects through struct
    ndk_obj_ops only;
  - an ndk/*.c over the line limit.

usage: tools/seams.py [--graph] [BUILT_NDK_DIR]   (default: ndk)
"""

import glob
import os
import subprocess
import sys

MAX_LINES = 1000
CORE = ("object", "main")
# The object files: each NDK object type's, and the parts some are split in.
OBJECTS = ("adapter", "pd", "cq", "qp", "qp_create", "srq", "mr", "mw",
           "connector", "handshake", "listener", "endpoint")
# Not source files of their own: the link of the module and its version.
SKIP = ("ndk", "ndk.mod")


def symbols(obj):
    """Global symbols @obj defines, and those it leaves undefined."""
    out = subprocess.run(["nm", obj], check=True, capture_output=True,
                         text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1].isupper() and parts[1] not in "UVW":
            defined.add(parts[2])
    return defined, undefined


def graph(objs):
    defs, undefs, owner = {}, {}, {}
    for name, path in objs.items():
        defs[name], undefs[name] = symbols(path)
        for sym in defs[name]:
            owner[sym] = name
    edges = {name: {} for name in objs}
    for name in objs:
        for sym in undefs[name]:
            to = owner.get(sym)
            if to and to != name:
                edges[name].setdefault(to, []).append(sym)
    return edges


def cycles(edges):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, sccs = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(sorted(scc))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sccs


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    show = "--graph" in sys.argv
    top = args[0] if args else "ndk"
    objs = {}
    for path in sorted(glob.glob(os.path.join(top, "*.o"))):
        name = os.path.basename(path)[:-2]
        if name not in SKIP:
            objs[name] = path
    if not objs:
        sys.exit(f"seams: no objects in {top}/: build first")
    edges = graph(objs)
    bad = 0
    if show:
        for a in sorted(edges):
            print(f"{a}.c -> " + " ".join(f"{b}.c" for b in sorted(edges[a])))
    for scc in cycles(edges):
        bad += 1
        print("seams: files in a circle: " + ", ".join(f"{f}.c" for f in scc))
        for a in scc:
            for b in sorted(edges[a]):
                if b in scc:
                    print(f"  {a}.c -> {b}.c: "
                          + " ".join(sorted(edges[a][b])))
    for a in CORE:
        for b in sorted(edges.get(a, {})):
            if b in OBJECTS:
                bad += 1
                print(f"seams: {a}.c names {b}.c's "
                      + " ".join(sorted(edges[a][b]))
                      + ": reach objects through struct ndk_obj_ops")
    for src in sorted(glob.glob(os.path.join(top, "*.c"))):
        if os.path.basename(src)[:-2] in SKIP:
            continue
        with open(src, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > MAX_LINES:
            bad += 1
            print(f"seams: {src} has {n} lines, over {MAX_LINES}")
    if bad:
        sys.exit(f"seams: {bad} problem(s)")
    print(f"seams: {len(objs)} files, no circle, object.c and main.c name no "
          f"object file, none over {MAX_LINES} lines")


if __name__ == "__main__":
    main()
