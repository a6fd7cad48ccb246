#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the bench VM's logs into the table, results.csv and chart.

Usage: report.py [--clock icount|wall] [--gate] [--kernel SERIES]
                 <console.log> <records.log> <outdir>
       report.py --compare <results.csv> <results.csv>

Reads the "ndkperf: result", "ndkperf: scale", "ndkperf: detail" and
"ndkperf: size" lines of the kernel's console and the "NDK-NVMEOF:" and
"NDK-PERFTEST:" lines bench-init.sh wrote, in whichever of the logs they
are. For each workload, size and metric it takes the median over the
rounds of the NDK and of the raw value, and the median, minimum and
maximum of the per-round ratio NDK/raw (each round runs NDK and raw back
to back, so the pair shares the machine's load). Where a round ran
mode=core too (notify_lat), a second table gives core against raw and
against NDK the same way.

Under --clock icount (the bench's default) one guest nanosecond is one
guest instruction, so the per-call table gives what ndk adds to each call
in instructions. --kernel (by default $NDK_KERNEL) names the kernel
series, whose connection setup rate has a bound of its own. --gate exits
3 when a bound the CI gate enforces is broken or its figure is missing.
A line that starts a record but is not whole (another write to the
console cut it) ends the report with status 1, as any other failure of
the report does. --compare puts two runs' figures side by side and exits
1 when they disagree by more than a run of unchanged code may (0.5 % per
call, 3 % for latencies and rates).
"""

import argparse

import csv
import math
import os
import re
import statistics
import subprocess
import sys

RESULT = re.compile(r'ndkperf: result (.*)$')
SCALE = re.compile(r'ndkperf: scale (.*)$')
DETAIL = re.compile(r'ndkperf: detail (.*)$')
SIZE = re.compile(r'ndkperf: size (.*)$')
PERFTEST = re.compile(r'NDK-PERFTEST: (\S+) (.*)$')
NVMEOF = re.compile(r'NDK-NVMEOF: (.*)$')

# metric: (unit, how to compute it from a result line, better when)
METRICS = {
    'send_lat': [('lat_us', lambda r: r['ns'] / r['iters'] / 2 / 1e3, 'low')],
    'write_lat': [('lat_us', lambda r: r['ns'] / r['iters'] / 2 / 1e3, 'low')],
    'reg_mr': [('lat_us', lambda r: r['ns'] / r['iters'] / 1e3, 'low')],
    'conn': [('conn_per_s', lambda r: r['iters'] / r['ns'] * 1e9, 'high')],
    'poll_empty': [('ns_per_poll', lambda r: r['ns'] / r['iters'], 'low')],
    # One-way latency, and of it the time from posting the send to the
    # receiver's notification callback (device, completion, dispatch).
    'notify_lat': [('lat_us', lambda r: r['ns'] / r['iters'] / 2 / 1e3, 'low'),
                   ('notify_us', lambda r: r['notify_ns'] / r['notifies'] / 1e3
                    if r.get('notifies') else None, 'low'),
                   ('arm_ns', lambda r: r['arm_ns'] / r['arms']
                    if r.get('arms') else None, 'low')],
}
BW = [('rate_mpps', lambda r: r['iters'] / r['ns'] * 1e3, 'high'),
      ('bw_mibps', lambda r: r['iters'] * r['size'] / r['ns'] * 1e9 / 2**20,
       'high'),
      ('post_ns', lambda r: r['post_ns'] / r['iters'], 'low'),
      ('poll_ns', lambda r: r['poll_ns'] / r['polled'] if r.get('polled')
       else None, 'low'),
      ('recv_ns', lambda r: r['recv_ns'] / r['recvs'] if r.get('recvs')
       else None, 'low')]
for wl in ('send_bw', 'write_bw', 'read_bw'):
    METRICS[wl] = BW
# One connection per CPU at once (iters messages each), and the
# aggregate rate over the rate of the first connection alone (ns1).
METRICS['send_bw_2cpu'] = [
    ('rate_mpps', lambda r: 2 * r['iters'] / r['ns'] * 1e3, 'high'),
    ('scale_vs_1qp', lambda r: 2 * r['ns1'] / r['ns'], 'high')]
# Slab allocations during the timed iterations, any context: per
# iteration (round trip, message, registration, connection, poll), and
# the total made by ndk.ko itself.
ALLOCS = [('allocs_per_op', lambda r: r['allocs'] / r['iters']
           if 'allocs' in r else None, 'low'),
          ('ndk_allocs', lambda r: r.get('ndk_allocs'), 'low')]
for wl in METRICS:
    METRICS[wl] = METRICS[wl] + ALLOCS


def per_cycle(key):
    """conn_scale: a phase's ms per cycle of `conns` connections."""
    return lambda r: r[key] / r['iters'] / 1e6 if key in r else None


def per_conn(key):
    """conn_scale: KiB per connection (both ends) in a cycle."""
    return lambda r: (r[key] / r['iters'] / r['conns'] if key in r
                      else None)


# conns connections at once: the time to open them all (setup), to send
# once on each and reap the completions, to tear them all down, and the
# whole; the memory in use with all open against before (all of the
# machine's pages, and of them slab) and what the teardown left; the
# slab allocations per connection, and ndk.ko's per cycle.
METRICS['conn_scale'] = [
    ('setup_ms', per_cycle('setup_ns'), 'low'),
    ('send_ms', per_cycle('send_ns'), 'low'),
    ('teardown_ms', per_cycle('teardown_ns'), 'low'),
    ('total_ms', lambda r: (r['setup_ns'] + r['send_ns'] + r['teardown_ns'])
     / r['iters'] / 1e6 if 'setup_ns' in r else None, 'low'),
    ('mem_kib_per_conn', per_conn('open_kib'), 'low'),
    ('slab_kib_per_conn', per_conn('slab_kib'), 'low'),
    ('left_kib_per_conn', per_conn('left_kib'), 'low'),
    ('allocs_per_conn', lambda r: r['allocs'] / r['iters'] / r['conns']
     if 'conns' in r else None, 'low'),
    ('ndk_allocs', lambda r: r.get('ndk_allocs'), 'low')]
# objects: a create and close of each kind, per cycle (details per kind).
METRICS['objects'] = [('us_per_cycle', lambda r: r['ns'] / r['iters'] / 1e3,
                       'low')] + ALLOCS
# nvmeof: a 4 KiB read or write at queue depth 1 or 32, in ns per I/O,
# through samples/ndk_nvmeof (the NDK column) and through Linux's own
# NVMe/RDMA host, nvme-rdma under the block layer (the raw column).
NVMEOF_DEPTHS = (1, 32)
for _d in NVMEOF_DEPTHS:
    METRICS[f'nvmeof_qd{_d}'] = [
        (f'{op}_ns', lambda r, op=op: r[f'{op}_ns'] / r[f'{op}s']
         if f'{op}_ns' in r else None, 'low') for op in ('read', 'write')]
# The workloads that only post and poll.
FAST_PATH = ('send_lat', 'write_lat', 'send_bw', 'write_bw', 'read_bw',
             'poll_empty', 'notify_lat', 'send_bw_2cpu')

# perftest program output columns: (workload, size, metric) -> column
PERFTEST_COLS = {
    'send_lat': {'lat_us': 5},
    'write_lat': {'lat_us': 5},
    'send_bw': {'rate_mpps': 4, 'bw_mibps': 3},
    'write_bw': {'rate_mpps': 4, 'bw_mibps': 3},
}

# (workload, size, metric, bound, sense, what, gate): each figure's bound,
# and where the CI gate (--gate) enforces a figure, its own bound.
# A gate bound that is looser than the keeps today's figure from
# getting worse (Documentation/ndk/performance.rst, "The gate"); the gate
# also wants the notification's core/NDK and no fast-path allocation.
TARGETS = [
    ('send_bw', 64, 'post_ns', 1.10, '<=', 'post, 64 B send', 1.29),
    ('write_bw', 64, 'post_ns', 1.10, '<=', 'post, 64 B write', 1.24),
    ('poll_empty', 8, 'ns_per_poll', 1.08, '<=', 'empty poll', 1.14),
    ('send_bw', 64, 'poll_ns', 1.05, '<=',
     'polling per completion, 64 B send', None),
    ('notify_lat', 8, 'lat_us', 1.03, '<=',
     'notification ping-pong 8 B', 1.08),
    ('send_bw', 64, 'rate_mpps', 0.98, '>=', 'message rate 64 B send', None),
    ('write_bw', 64, 'rate_mpps', 0.98, '>=', 'message rate 64 B write',
     None),
    ('send_lat', 8, 'lat_us', 1.02, '<=', 'ping-pong 8 B send', None),
    ('write_lat', 8, 'lat_us', 1.02, '<=', 'ping-pong 8 B write', None),
    ('conn', 8, 'conn_per_s', None, '>=', 'connection setup rate', 0.87),
    ('reg_mr', 65536, 'lat_us', 1.2, '<=', 'NdkRegisterMr latency', None),
    ('conn_scale', 4096, 'mem_kib_per_conn', 1.12, '<=',
     'memory per open connection, 4096', None),
]
# nvmeof: ndk's sample host at most as dear per I/O as Linux's own.
TARGETS += [(f'nvmeof_qd{d}', 4096, f'{op}_ns', 1.00, '<=',
             f'NVMe/RDMA 4 KiB {op}, depth {d}', None)
            for d in NVMEOF_DEPTHS for op in ('read', 'write')]
# From the detail lines: (workload, key, bound, sense, what, gate), the
# figure the median of NDK's over the median of raw's.
# The QP and the connector have no bound of their own (they count in the
# connection setup rate); the gate keeps them from getting worse.
DETAIL_TARGETS = [
    ('objects', 'pd_ns', 1.10, '<=', 'create and close a PD', 1.16),
    ('objects', 'cq_ns', 1.10, '<=', 'create and close a CQ', 1.14),
    ('objects', 'qp_ns', None, '<=', 'create and close a QP', 1.27),
    ('objects', 'connector_ns', None, '<=',
     'create and close a connector', 1.28),
    ('objects', 'listener_ns', 1.10, '<=',
     'create, listen, close a listener', 1.12),
]
# The connection setup rate's bound depends on the kernel series: 6.1's
# connection manager leaves NDK's extra callbacks less room.  A series
# not listed gets the strictest.
CONN_RATE = {'6.1': 0.92, '6.12': 1.00, '7.3': 1.00}
# conn_scale's growth: a figure per connection at 4096 connections over
# the same at 64, (metric, bound, relative, what).  What grows in raw is
# the kernel's, so a relative bound holds NDK's growth within that much
# of raw's; the others bound NDK's growth alone.
SCALE_CONNS = (64, 4096)
SCALE_TARGETS = [
    ('setup_ms', 0.05, True, 'setup per connection'),
    ('teardown_ms', 1.10, False, 'teardown per connection'),
    ('mem_kib_per_conn', 0.10, True, 'memory per connection'),
]
# The notification's core/NDK: the bound, and the gate's.
CORE_NDK = (1.00, 0.95)


# Per call, in the clock's ns (instructions under icount): (workload,
# size, metric, factor to ns, what). NDK minus raw is what ndk adds.
PER_CALL = [
    ('send_bw', 64, 'post_ns', 1, 'post, 64 B send'),
    ('write_bw', 64, 'post_ns', 1, 'post, 64 B write'),
    ('read_bw', 65536, 'post_ns', 1, 'post, 64 KiB read'),
    ('send_bw', 64, 'recv_ns', 1, 'post, receive'),
    ('poll_empty', 8, 'ns_per_poll', 1, 'empty poll'),
    ('send_bw', 64, 'poll_ns', 1, 'polling, per completion'),
    ('notify_lat', 8, 'arm_ns', 1, 'arm'),
    ('notify_lat', 8, 'notify_us', 1e3, 'send posted to notification'),
    ('notify_lat', 8, 'lat_us', 2e3, 'notification round trip'),
    ('send_lat', 8, 'lat_us', 2e3, 'ping-pong round trip, send'),
    ('write_lat', 8, 'lat_us', 2e3, 'ping-pong round trip, write'),
    ('reg_mr', 65536, 'lat_us', 1e3, 'register 64 KiB'),
]
# Per-call figures repeat within this under icount; latencies and rates,
# which depend on when interrupts and softirqs land, within REPEAT_RATE.
REPEAT_CALL = 0.005
REPEAT_RATE = 0.03
# --gate's status when a bound breaks; a failed report exits 1.
GATE_BROKEN = 3


# A record's words: key=number or key=name. A word of any other shape,
# or a key missing, means the line is not what ndkperf or bench-init.sh
# wrote; a cut number may still read as a number, so none is mended.
WORD = re.compile(r'([a-z][a-z0-9_]*)=(-?[0-9]+|[A-Za-z][A-Za-z0-9_]*)')
NUMBER = re.compile(r'-?([0-9]+(\.[0-9]*)?|inf|nan)')
REQUIRED = {
    'result': ('workload', 'mode', 'size', 'depth', 'iters', 'ns', 'round'),
    'scale': ('workload', 'mode', 'round', 'conns'),
    'detail': ('workload', 'mode'),
    'size': ('object',),
    'nvmeof': ('round', 'host', 'dir', 'depth', 'size', 'ios', 'ns'),
}


def fields(text, kind):
    """A record's key=value words, numbers as int.

    >>> fields('object=pd struct=8 alloc=-3', 'size')
    {'object': 'pd', 'struct': 8, 'alloc': -3}
    >>> fields('object=pd struct=8[', 'size')
    Traceback (most recent call last):
    ValueError: struct=8[
    >>> fields('struct=8', 'size')
    Traceback (most recent call last):
    ValueError: no object=
    """
    out = {}
    for word in text.split():
        m = WORD.fullmatch(word)
        if not m:
            raise ValueError(word)
        k, v = m.groups()
        out[k] = v if v[0].isalpha() else int(v)
    for k in REQUIRED[kind]:
        if k not in out:
            raise ValueError(f'no {k}=')
    return out


def nvmeof_result(results, d):
    """An NDK-NVMEOF line into its round's result of that host and depth."""
    wl = f"nvmeof_qd{d['depth']}"
    mode = 'ndk' if d['host'] == 'ndk' else 'raw'
    r = next((r for r in results if (r['workload'], r['mode'], r['round'])
              == (wl, mode, d['round'])), None)
    if r is None:
        r = {'workload': wl, 'mode': mode, 'round': d['round'],
             'size': d['size']}
        results.append(r)
    r[f"{d['dir']}_ns"] = d['ns']
    r[f"{d['dir']}s"] = d['ios']


def parse(lines, name):
    """The records of the lines of log name.

    A record cut by another write to the console is no record: the
    figures must not come from what is left of it.

    >>> results, *_ = parse(['[  9.1] ndkperf: result workload=conn '
    ...     'mode=ndk size=8 depth=16 iters=50 ns=1000 round=1'], 'log')
    >>> results[0]['ns'], results[0]['round']
    (1000, 1)
    >>> parse(['NDK-NVMEOF: round=2 host=ndk dir=read depth=1 size=4096 '
    ...     'ios=2000 ns=327479808[  124.717155] ndk_nvmeof: PASS: bench'],
    ...     'log')
    Traceback (most recent call last):
    SystemExit: bench: log:1 is not a whole record: NDK-NVMEOF: \
round=2 host=ndk dir=read depth=1 size=4096 ios=2000 ns=327479808[  124.717155] \
ndk_nvmeof: PASS: bench
    """
    results, details, sizes, perftest = [], {}, [], {}
    for n, line in enumerate(lines, 1):
        line = line.rstrip()
        try:
            record(line, results, details, sizes, perftest)
        except ValueError:
            raise SystemExit(f'bench: {name}:{n} is not a whole record: '
                             f'{line}') from None
    return results, details, sizes, perftest


def record(line, results, details, sizes, perftest):
    """Line's record, if it is one, into parse()'s collections."""
    if m := NVMEOF.search(line):
        nvmeof_result(results, fields(m.group(1), 'nvmeof'))
    elif m := RESULT.search(line):
        d = fields(m.group(1), 'result')
        # Round 0 is bench-init.sh's warm-up load, not a round.
        if d['round']:
            results.append(d)
    elif m := SCALE.search(line):
        # It follows its result line, whose size was the message
        # size: conn_scale's rows are told apart by connections.
        d = fields(m.group(1), 'scale')
        r = next((r for r in reversed(results)
                  if (r['workload'], r['mode'], r['round']) ==
                  (d['workload'], d['mode'], d['round'])), None)
        if r is not None:
            r.update(d)
            r['size'] = d['conns']
    elif m := DETAIL.search(line):
        d = fields(m.group(1), 'detail')
        keys = details.setdefault((d['workload'], d['mode']), {})
        for k, v in d.items():
            if k.endswith('_ns'):
                keys.setdefault(k, []).append(v)
    elif m := SIZE.search(line):
        sizes.append(fields(m.group(1), 'size'))
    elif m := PERFTEST.search(line):
        cols = m.group(2).split()
        for c in cols:
            if not NUMBER.fullmatch(c):
                raise ValueError(c)
        if len(cols) >= 5:
            perftest[m.group(1)] = cols


def perftest_value(perftest, wl, size, metric):
    cols = perftest.get(wl)
    col = PERFTEST_COLS.get(wl, {}).get(metric)
    if not cols or col is None or int(cols[0]) != size:
        return None
    # perftest prints inf or nan when its own clock calibration failed.
    v = float(cols[col])
    return v if math.isfinite(v) else None


def summarise(results, perftest):
    """Rows of (workload, size, metric, stats dict), in the run's order."""
    runs = {}
    for r in results:
        key = (r['workload'], r['size'])
        runs.setdefault(key, {}).setdefault(r['round'], {})[r['mode']] = r
    rows = []
    for (wl, size), rounds in runs.items():
        for metric, fn, _ in METRICS[wl]:
            ndk, raw, ratio, core, core_raw, core_ndk = [], [], [], [], [], []
            for pair in rounds.values():
                n, w, c = (fn(pair[m]) if m in pair else None
                           for m in ('ndk', 'raw', 'core'))
                if n is not None:
                    ndk.append(n)
                if w is not None:
                    raw.append(w)
                if c is not None:
                    core.append(c)
                if n is not None and w:
                    ratio.append(n / w)
                if c is not None and w:
                    core_raw.append(c / w)
                if c is not None and n:
                    core_ndk.append(c / n)
            if not ndk and not raw and not core:
                continue
            rows.append((wl, size, metric, {
                'ndk': ndk, 'raw': raw, 'ratio': ratio, 'core': core,
                'core_raw': core_raw, 'core_ndk': core_ndk,
                'perftest': perftest_value(perftest, wl, size, metric)}))
    return rows


def med(v):
    return statistics.median(v) if v else None


def fmt(v, digits=3):
    if v is None:
        return ''
    if abs(v) >= 1000:
        return f'{v:.0f}'
    return f'{v:.{digits}g}' if abs(v) < 1 else f'{v:.{digits + 1}g}'


def spread(v):
    return f'{fmt(med(v))} ({fmt(min(v))}-{fmt(max(v))})' if v else '-'


def write_csv(path, rows, details, sizes, clock):
    """One row per figure; clock says what its ns are (icount: instructions)."""
    with open(path, 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(['clock', 'workload', 'size', 'metric', 'ndk', 'raw',
                    'ratio', 'perftest', 'core', 'core_raw', 'core_ndk'])
        for wl, size, metric, s in rows:
            w.writerow([clock, wl, size, metric, fmt(med(s['ndk']), 5),
                        fmt(med(s['raw']), 5), fmt(med(s['ratio']), 5),
                        fmt(s['perftest'], 5)] +
                       [fmt(med(s[k]), 5) for k in CORE_KEYS])
            for agg in (min, max):
                w.writerow([clock, wl, size, f'{metric}_{agg.__name__}'] +
                           [fmt(agg(s[k]), 5) if s[k] else ''
                            for k in ('ndk', 'raw', 'ratio')] + [''] +
                           [fmt(agg(s[k]), 5) if s[k] else ''
                            for k in CORE_KEYS])
        for (wl, mode), keys in details.items():
            for k, v in keys.items():
                w.writerow([clock, wl, '', f'split_{k}',
                            fmt(med(v), 5) if mode == 'ndk' else '',
                            fmt(med(v), 5) if mode == 'raw' else '', '', ''])
        for s in sizes:
            for k, v in s.items():
                if k != 'object':
                    w.writerow([clock, 'memory', '', f"{s['object']}_{k}", v,
                                '', '', ''])


# mode=core: its value, and its per-round ratios to raw and to NDK.
CORE_KEYS = ('core', 'core_raw', 'core_ndk')


def core_table(rows):
    """notify_lat with ndk's dispatch on the core CQ API (mode=core)."""
    lines = []
    hdr = (f"{'workload':<10} {'size':>8} {'metric':<12} "
           f"{'core median (min-max)':<26} {'core/raw (min-max)':<24} "
           f"{'core/NDK (min-max)'}")
    for wl, size, metric, s in rows:
        if not s['core'] or metric == 'ndk_allocs':
            continue
        if not lines:
            lines += [hdr, '-' * len(hdr)]
        lines.append(f"{wl:<10} {size:>8} {metric:<12} "
                     f"{spread(s['core']):<26} {spread(s['core_raw']):<24} "
                     f"{spread(s['core_ndk'])}")
    return lines


def table(rows):
    lines = []
    hdr = (f"{'workload':<10} {'size':>8} {'metric':<12} "
           f"{'NDK median (min-max)':<26} {'raw median (min-max)':<26} "
           f"{'NDK/raw (min-max)':<24} {'perftest':>9}")
    lines.append(hdr)
    lines.append('-' * len(hdr))
    for wl, size, metric, s in rows:
        lines.append(f"{wl:<10} {size:>8} {metric:<12} {spread(s['ndk']):<26} "
                     f"{spread(s['raw']):<26} {spread(s['ratio']):<24} "
                     f"{fmt(s['perftest']) or '-':>9}")
    return lines


# From the detail lines, per call: (workload, ndk key, raw key, what).
PER_CALL_DETAIL = [
    ('objects', 'pd_ns', 'pd_ns', 'create and close a PD'),
    ('objects', 'cq_ns', 'cq_ns', 'create and close a CQ'),
    ('objects', 'qp_ns', 'qp_ns', 'create and close a QP (to INIT)'),
    ('objects', 'mr_ns', 'mr_ns', 'create and close an MR'),
    ('objects', 'connector_ns', 'connector_ns',
     'create and close a connector (id)'),
    ('objects', 'listener_ns', 'listener_ns',
     'create, listen, close a listener'),
    ('conn', 'connect_ns', 'connect_ns',
     'connect, accept, confirm (raw: with QPs)'),
    ('conn', 'qp_ns', None, 'conn: its two QPs (NDK)'),
    ('conn', 'disconnect_ns', 'disconnect_ns', 'disconnect'),
    ('conn', 'close_conn_ns', 'close_id_ns', 'close both connectors (ids)'),
    ('conn', 'close_qp_ns', 'close_qp_ns', 'close both QPs'),
]


def per_call(rows, details, clock):
    """What ndk adds to each call: NDK minus raw, medians."""
    unit = 'instructions' if clock == 'icount' else 'ns'
    by = {(wl, size, metric): s for wl, size, metric, s in rows}
    lines = [f"{'call':<32} {'NDK':>10} {'raw':>10} {'added':>9} "
             f"{'NDK/raw':>8}   ({unit})"]
    for wl, size, metric, factor, what in PER_CALL:
        s = by.get((wl, size, metric))
        if not s or not s['ndk'] or not s['raw']:
            continue
        n, w = med(s['ndk']) * factor, med(s['raw']) * factor
        lines.append(f'{what:<32} {n:>10.1f} {w:>10.1f} {n - w:>9.1f} '
                     f'{n / w:>8.3f}')
    for wl, nkey, rkey, what in PER_CALL_DETAIL:
        n = med(details.get((wl, 'ndk'), {}).get(nkey, []))
        w = med(details.get((wl, 'raw'), {}).get(rkey, [])) if rkey else None
        if n is None:
            continue
        if w:
            lines.append(f'{what:<32} {n:>10.0f} {w:>10.0f} {n - w:>9.0f} '
                         f'{n / w:>8.3f}')
        else:
            lines.append(f'{what:<32} {n:>10.0f} {"-":>10} {"-":>9} '
                         f'{"-":>8}')
    return lines


def nvmeof_table(rows, clock):
    """Per 4 KiB I/O: samples/ndk_nvmeof, Linux's nvme-rdma, their ratio."""
    unit = 'instructions' if clock == 'icount' else 'ns'
    by = {(wl, metric): s for wl, size, metric, s in rows}
    lines = []
    for d in NVMEOF_DEPTHS:
        for op in ('read', 'write'):
            s = by.get((f'nvmeof_qd{d}', f'{op}_ns'))
            if not s:
                continue
            n, w, r = med(s['ndk']), med(s['raw']), med(s['ratio'])
            lines.append(f"{f'{op}, depth {d}':<20} {fmt(n) or '-':>12} "
                         f"{fmt(w) or '-':>12} {fmt(r) or '-':>12}")
    if lines:
        lines.insert(0, f"{'4 KiB I/O':<20} {'ndk_nvmeof':>12} "
                     f"{'nvme-rdma':>12} {'ndk/Linux':>12}   ({unit})")
    return lines


def verdict(value, sense, bound):
    ok = value >= bound if sense == '>=' else value <= bound
    return ok, f"{sense} {bound} {'holds' if ok else 'BROKEN'}"


def detail_ratio(details, wl, key):
    n = med(details.get((wl, 'ndk'), {}).get(key, []))
    w = med(details.get((wl, 'raw'), {}).get(key, []))
    return n / w if n is not None and w else None


def scale_growth(rows, metric, mode):
    """A conn_scale figure per connection, at SCALE_CONNS[1] over [0]."""
    by = {(size, m): s for wl, size, m, s in rows if wl == 'conn_scale'}
    lo, hi = (by.get((n, metric)) for n in SCALE_CONNS)
    if not lo or not hi or not lo[mode] or not hi[mode]:
        return None
    # setup_ms and teardown_ms are per cycle of all the connections.
    per = 1 if metric.endswith('per_conn') else SCALE_CONNS[0] / SCALE_CONNS[1]
    return med(hi[mode]) / med(lo[mode]) * per


def conn_rate_bound(kernel):
    return CONN_RATE.get(kernel, max(CONN_RATE.values()))


def targets(rows, details, kernel=None):
    """Each bound: its figure, whether it holds; and the gate's breaks."""
    lines, broken = [], []
    by = {(wl, size, metric): s for wl, size, metric, s in rows}
    fast = [s for wl, size, metric, s in rows
            if wl in FAST_PATH and metric == 'ndk_allocs']
    if fast:
        n = sum(sum(s['ndk']) for s in fast)
        lines.append(f'  fast-path allocations by ndk.ko: {n} (bound 0 '
                     f"{'holds' if not n else 'BROKEN'}; gate 0)")
        if n:
            broken.append('fast-path allocations')
    for wl, size, metric, bound, sense, what, gate in TARGETS:
        s = by.get((wl, size, metric))
        if not s or not s['ratio']:
            lines.append(f'  {what}: no data')
            continue
        r = med(s['ratio'])
        if wl == 'conn':
            bound = conn_rate_bound(kernel)
        text = f'  {what}: NDK/raw {r:.3f} (bound {verdict(r, sense, bound)[1]}'
        if gate is not None:
            ok, v = verdict(r, sense, gate)
            text += f'; gate {v}'
            if not ok:
                broken.append(what)
        lines.append(text + ')')
    for wl, key, bound, sense, what, gate in DETAIL_TARGETS:
        r = detail_ratio(details, wl, key)
        if r is None:
            lines.append(f'  {what}: no data')
            continue
        ok, v = verdict(r, sense, gate)
        target = verdict(r, sense, bound)[1] if bound else 'none'
        lines.append(f'  {what}: NDK/raw {r:.3f} (bound {target}; gate {v})')
        if not ok:
            broken.append(what)
    for metric, bound, relative, what in SCALE_TARGETS:
        n, w = (scale_growth(rows, metric, m) for m in ('ndk', 'raw'))
        if n is None or (relative and w is None):
            lines.append(f'  {what}, {SCALE_CONNS[1]} over '
                         f'{SCALE_CONNS[0]} connections: no data')
            continue
        raw = f', raw {w:.3f}' if w is not None else ''
        if relative:
            v = verdict(n - w, '<=', bound)[1]
            lines.append(f'  {what}, {SCALE_CONNS[1]} over {SCALE_CONNS[0]} '
                         f'connections: NDK {n:.3f}{raw}, NDK minus raw '
                         f'{n - w:+.3f} (bound {v})')
        else:
            lines.append(f'  {what}, {SCALE_CONNS[1]} over {SCALE_CONNS[0]} '
                         f'connections: NDK {n:.3f} (bound '
                         f'{verdict(n, "<=", bound)[1]})' + raw)
    s = by.get(('notify_lat', 8, 'lat_us'))
    if s and s['core_ndk']:
        r = med(s['core_ndk'])
        ok, v = verdict(r, '>=', CORE_NDK[1])
        lines.append("  notification ping-pong, core API's path over NDK's: "
                     f"{r:.3f} (bound {verdict(r, '>=', CORE_NDK[0])[1]}; "
                     f'gate {v})')
        if not ok:
            broken.append('notification ping-pong, core/NDK')
    s = by.get(('send_bw_2cpu', 64, 'scale_vs_1qp'))
    if s and s['ndk']:
        lines.append(f"  NDK two QPs on two CPUs: {med(s['ndk']):.2f} times "
                     "one QP's rate (wall clock; no bound: TCG cannot show "
                     'scaling)')
    return lines, broken


def gate_figures(rows, details):
    """The gate's figures, which must all be there."""
    by = {(wl, size, metric) for wl, size, metric, s in rows if s['ratio']}
    return [what for wl, size, metric, _, _, what, gate in TARGETS
            if gate is not None and (wl, size, metric) not in by] + \
        [what for wl, key, _, _, what, _ in DETAIL_TARGETS
         if detail_ratio(details, wl, key) is None]


def read_csv(path):
    with open(path, newline='') as f:
        return {(r['workload'], r['size'], r['metric']): r
                for r in csv.DictReader(f)}


def compare(a_path, b_path):
    """Two runs side by side; exit status 1 if they disagree too much."""
    a, b = read_csv(a_path), read_csv(b_path)
    per_call = {(wl, str(size), metric) for wl, size, metric, _, _
                in PER_CALL}
    bad = 0
    print(f"{'workload':<12} {'size':>6} {'metric':<14} {'mode':<4} "
          f"{'run 1':>12} {'run 2':>12} {'diff':>8}  bound")
    for key, ra in a.items():
        wl, size, metric = key
        rb = b.get(key)
        if not rb or metric.endswith(('_min', '_max')) or \
                metric.startswith('split_') or wl == 'memory' or \
                metric in ('allocs_per_op', 'ndk_allocs', 'bw_mibps'):
            continue
        call = (key in per_call and metric.endswith('_ns')) or \
            metric == 'ns_per_poll'
        bound = REPEAT_CALL if call else REPEAT_RATE
        for mode in ('ndk', 'raw', 'core'):
            if not ra.get(mode) or not rb.get(mode):
                continue
            x, y = float(ra[mode]), float(rb[mode])
            d = abs(y - x) / x if x else 0.0
            ok = d <= bound
            bad += not ok
            print(f'{wl:<12} {size:>6} {metric:<14} {mode:<4} {x:>12.5g} '
                  f"{y:>12.5g} {100 * d:>7.2f}%  {100 * bound:.1f}% "
                  f"{'' if ok else 'DIFFERS'}")
    print(f'compare: {bad} figures differ by more than their bound')
    return 1 if bad else 0


def chart(outdir, rows):
    """Ratios with their spread, and the latencies, with gnuplot."""
    ratio_dat = os.path.join(outdir, 'ratios.dat')
    lat_dat = os.path.join(outdir, 'latency.dat')
    nratio = 0
    with open(ratio_dat, 'w') as f:
        for wl, size, metric, s in rows:
            if metric in ('post_ns', 'poll_ns', 'bw_mibps', 'allocs_per_op',
                          'ndk_allocs'):
                continue
            for key, label in (('ratio', ''), ('core_raw', ' core/raw')):
                v = s[key]
                if v:
                    nratio += 1
                    f.write(f'"{wl} {size} {metric}{label}" {med(v):.4f} '
                            f'{min(v):.4f} {max(v):.4f}\n')
    with open(lat_dat, 'w') as f:
        for wl, size, metric, s in rows:
            if metric == 'lat_us':
                f.write(f'"{wl} {size}" {med(s["ndk"]) or 0:.3f} '
                        f'{med(s["raw"]) or 0:.3f} {s["perftest"] or 0:.3f}\n')
    png = os.path.join(outdir, 'chart.png')
    script = f'''
set terminal pngcairo size 1400,560 font "sans,10" noenhanced
set output "{png}"
set multiplot layout 1,2
set title "NDK/raw (and core/raw), median of rounds (bars: min-max)"
set style data histogram
set style fill solid 0.6 border -1
set xtics rotate by -35 scale 0 font ",9"
set yrange [0:*]
set xrange [-0.6:{nratio - 0.4}]
set boxwidth 0.6
set grid ytics
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb "red"
plot "{ratio_dat}" using 0:2:xtic(1) with boxes lc rgb "#4477aa" notitle, \\
	"" using 0:2:3:4 with yerrorbars lc rgb "black" pt 0 notitle
unset arrow
set autoscale x
set boxwidth 0.9 relative
set title "latency, us, log scale (one-way ping-pong; reg_mr per registration)"
set logscale y
set yrange [1:*]
set style histogram clustered gap 1
set key top left
plot "{lat_dat}" using 2:xtic(1) title "NDK", "" using 3 title "raw", \\
	"" using 4 title "perftest"
unset multiplot
'''
    try:
        subprocess.run(['gnuplot'], input=script, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f'bench: no chart: {e}', file=sys.stderr)
        return None
    return png


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--clock', choices=('icount', 'wall'), default='wall')
    ap.add_argument('--gate', action='store_true')
    # The series picks the setup rate's bound; bench.sh's NDK_KERNEL.
    ap.add_argument('--kernel', default=os.environ.get('NDK_KERNEL'))
    ap.add_argument('--compare', action='store_true')
    ap.add_argument('files', nargs='+')
    args = ap.parse_args()
    if args.compare:
        if len(args.files) != 2:
            ap.error('--compare takes two results.csv')
        sys.exit(compare(*args.files))
    if len(args.files) < 2:
        ap.error('the logs and the output directory')
    *logs, outdir = args.files
    results, details, sizes, perftest = [], {}, [], {}
    for log in logs:
        with open(log, errors='replace') as f:
            r, d, s, p = parse(f, log)
        results += r
        details.update(d)
        sizes += s
        perftest.update(p)
    if not results:
        sys.exit('bench: no ndkperf results in ' + ', '.join(logs))
    rows = summarise(results, perftest)
    clock = args.clock
    what = ('clock: icount, one guest instruction per ns (figures in ns are '
            'instructions)' if clock == 'icount' else
            'clock: wall (TCG wall time, varies 10-30 % between runs)')
    out = [what, ''] + table(rows)
    core = core_table(rows)
    if core:
        out.append('')
        out.append('ndk\'s dispatch on the core CQ API (mode=core), '
                   'median of rounds (min-max):')
        out.extend(core)
    out.append('')
    out.append('per call, NDK minus raw (medians):')
    out.extend('  ' + line for line in per_call(rows, details, clock))
    nvmeof = nvmeof_table(rows, clock)
    if nvmeof:
        out.append('')
        out.append('NVMe over Fabrics, per I/O against nvmet-rdma on null_blk '
                   "(medians): ndk's sample host, Linux's own host")
        out.extend('  ' + line for line in nvmeof)
    out.append('')
    out.append('where the time goes, ns per operation (median of rounds):')
    for (wl, mode), keys in details.items():
        out.append(f'  {wl} {mode}: ' + ' '.join(
            f'{k}={med(v):.0f}' for k, v in keys.items()))
    out.append('ndk memory per object, bytes (slots: entries):')
    for s in sizes:
        out.append('  ' + ' '.join(f'{k}={v}' for k, v in s.items()))
    out.append(f'bounds ({clock}; the gate\'s are what .ci/run enforces):')
    lines, broken = targets(rows, details, args.kernel)
    out.extend(lines)
    text = '\n'.join(out) + '\n'
    with open(os.path.join(outdir, 'table.txt'), 'w') as f:
        f.write(text)
    write_csv(os.path.join(outdir, 'results.csv'), rows, details, sizes,
              clock)
    png = chart(outdir, rows)
    print(text, end='')
    print(f'bench: wrote {outdir}/results.csv, {outdir}/table.txt'
          + (f' and {png}' if png else ''))
    if args.gate:
        missing = gate_figures(rows, details)
        for m in missing:
            print(f'gate: no figure for {m}')
        if clock != 'icount':
            print('gate: the gate counts instructions (--clock icount)')
            missing.append('clock')
        gated = sum(g is not None for *_, g in TARGETS) + \
            len(DETAIL_TARGETS) + 2
        print(f'gate: {len(broken)} bounds broken, {len(missing)} missing, '
              f'of {gated}')
        sys.exit(GATE_BROKEN if broken or missing else 0)


if __name__ == '__main__':
    main()
