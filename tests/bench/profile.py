#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Instructions per kernel function from NDK_BENCH_PROFILE=1 runs.

Each run directory holds profile.raw (tbprof.c: "address count" per
translation block) and records.log, whose "NDK-KSYM:" lines are the
module symbols the guest printed; the kernel's own come from its
System.map. A block counts for the function it starts in.

  profile.py SYSTEM_MAP RUN[:DIV] [RUN[:DIV]] [--phase P] [--top N]

With one run, its heaviest functions. With two, the functions whose
counts differ most, each divided by its run's DIV (say, its number of
connections), so that a run at 4096 connections can be held against one
at 1024, or NDK against raw. --phase 1, 2 or 3 counts only what ran in
that phase of the workload (perf_phase() in ndkperf.h; conn_scale's
setup, send and teardown) instead of the whole run.
"""
import argparse
import bisect
import collections
import os


def kernel_symbols(system_map):
    syms = []
    with open(system_map) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 3 and fields[1] in 'tTwW':
                syms.append((int(fields[0], 16), fields[2]))
    return syms


def module_symbols(records):
    syms = []
    with open(records, errors='replace') as f:
        for line in f:
            if 'NDK-KSYM: ' not in line:
                continue
            fields = line.split('NDK-KSYM: ', 1)[1].split()
            if len(fields) >= 4 and fields[1] in 'tT':
                syms.append((int(fields[0], 16), fields[2] + fields[3]))
    return syms


def profile(run, base, phase=0):
    """Instructions per function; of one phase only if phase > 0."""
    syms = sorted(base + module_symbols(os.path.join(run, 'records.log')))
    addrs = [a for a, _ in syms]
    counts = collections.Counter()
    with open(os.path.join(run, 'profile.raw')) as f:
        for line in f:
            fields = line.split()
            if phase >= len(fields) - 1:
                raise SystemExit(f'{run}: no phase {phase} in profile.raw')
            addr, n = int(fields[0], 16), fields[1 + phase]
            if addr < 16:
                name = {1: '<user space>', 2: '<blocks beyond the table>'}
                counts[name.get(addr, '?')] += int(n)
                continue
            i = bisect.bisect_right(addrs, addr) - 1
            counts[syms[i][1] if i >= 0 else '?'] += int(n)
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('system_map')
    ap.add_argument('runs', nargs='+', metavar='RUN[:DIV]')
    ap.add_argument('--top', type=int, default=40)
    ap.add_argument('--phase', type=int, choices=(1, 2, 3), default=0)
    args = ap.parse_args()
    if len(args.runs) > 2:
        ap.error('one or two runs')
    base = kernel_symbols(args.system_map)
    profs = []
    for spec in args.runs:
        run, _, div = spec.partition(':')
        div = float(div or 1)
        profs.append({k: v / div
                      for k, v in profile(run, base, args.phase).items()})
    for spec, p in zip(args.runs, profs):
        print(f'{spec}: {sum(p.values()):.0f} instructions')
    if len(profs) == 1:
        rows = sorted(profs[0].items(), key=lambda kv: -kv[1])
        for name, n in rows[:args.top]:
            print(f'{n:14.0f}  {name}')
        return
    a, b = profs
    names = set(a) | set(b)
    rows = sorted(names, key=lambda k: -abs(a.get(k, 0) - b.get(k, 0)))
    print(f'{"first":>12} {"second":>12} {"difference":>12}  function')
    for name in rows[:args.top]:
        x, y = a.get(name, 0), b.get(name, 0)
        print(f'{x:12.0f} {y:12.0f} {x - y:12.0f}  {name}')


if __name__ == '__main__':
    main()
