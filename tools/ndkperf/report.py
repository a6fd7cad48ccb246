#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the bench VM's console log into the table, results.csv and chart.

Usage: report.py <console.log> <outdir>

Reads the "ndkperf: result", "ndkperf: scale", "ndkperf: detail",
"ndkperf: size" and "NDK-PERFTEST:" lines. For each workload, size and metric it takes the
median over the rounds of the NDK and of the raw value, and the median,
minimum and maximum of the per-round ratio NDK/raw (each round runs NDK
and raw back to back, so the pair shares the machine's load). Where a
round ran mode=core too (notify_lat), a second table gives core against
raw and against NDK the same way.
"""

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
                    if r.get('notifies') else None, 'low')],
}
BW = [('rate_mpps', lambda r: r['iters'] / r['ns'] * 1e3, 'high'),
      ('bw_mibps', lambda r: r['iters'] * r['size'] / r['ns'] * 1e9 / 2**20,
       'high'),
      ('post_ns', lambda r: r['post_ns'] / r['iters'], 'low'),
      ('poll_ns', lambda r: r['poll_ns'] / r['polled'] if r.get('polled')
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

# (workload, size, metric, bound, sense, what): the table of issue 17.
TARGETS = [
    ('send_bw', 64, 'post_ns', 1.10, '<=', 'post call cost 64 B send'),
    ('write_bw', 64, 'post_ns', 1.10, '<=', 'post call cost 64 B write'),
    ('poll_empty', 8, 'ns_per_poll', 1.05, '<=', 'polling an empty CQ'),
    ('send_bw', 64, 'poll_ns', 1.03, '<=',
     'polling cost per completion, 64 B send'),
    ('send_bw', 64, 'rate_mpps', 0.99, '>=', 'message rate 64 B send'),
    ('write_bw', 64, 'rate_mpps', 0.99, '>=', 'message rate 64 B write'),
    ('send_lat', 8, 'lat_us', 1.02, '<=', 'ping-pong latency 8 B send'),
    ('write_lat', 8, 'lat_us', 1.02, '<=', 'ping-pong latency 8 B write'),
    ('conn', 8, 'conn_per_s', 1.00, '>=', 'connection setup rate'),
    ('notify_lat', 8, 'lat_us', 1.05, '<=',
     'notification-driven ping-pong latency 8 B'),
    ('send_bw_2cpu', 64, 'rate_mpps', 0.98, '>=',
     'aggregate rate, one 64 B send QP per CPU'),
    ('reg_mr', 65536, 'lat_us', 1.2, '<=', 'NdkRegisterMr latency'),
    ('conn_scale', 8, 'setup_ms', 1.0, '<=',
     'opening 1000 connections at once'),
    ('conn_scale', 8, 'mem_kib_per_conn', 1.1, '<=',
     'memory per open connection'),
]


def fields(text):
    out = {}
    for kv in text.split():
        k, _, v = kv.partition('=')
        out[k] = int(v) if re.fullmatch(r'-?[0-9]+', v) else v
    return out


def parse(path):
    results, details, sizes, perftest = [], {}, [], {}
    scale = {}
    with open(path, errors='replace') as f:
        for line in f:
            line = line.rstrip()
            if m := RESULT.search(line):
                d = fields(m.group(1))
                # Round 0 is bench-init.sh's warm-up load, not a round.
                if d.get('round', 0):
                    results.append(d)
            elif m := SCALE.search(line):
                d = fields(m.group(1))
                scale[(d['workload'], d['mode'], d['round'])] = d
            elif m := DETAIL.search(line):
                d = fields(m.group(1))
                keys = details.setdefault((d['workload'], d['mode']), {})
                for k, v in d.items():
                    if k.endswith('_ns'):
                        keys.setdefault(k, []).append(v)
            elif m := SIZE.search(line):
                sizes.append(fields(m.group(1)))
            elif m := PERFTEST.search(line):
                cols = m.group(2).split()
                if len(cols) >= 5:
                    perftest[m.group(1)] = cols
    # A scale line follows its result line: merge the two.
    for r in results:
        r.update(scale.get((r['workload'], r['mode'], r['round']), {}))
    return results, details, sizes, perftest


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


def write_csv(path, rows, details, sizes):
    with open(path, 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(['workload', 'size', 'metric', 'ndk', 'raw', 'ratio',
                    'perftest', 'core', 'core_raw', 'core_ndk'])
        for wl, size, metric, s in rows:
            w.writerow([wl, size, metric, fmt(med(s['ndk']), 5),
                        fmt(med(s['raw']), 5), fmt(med(s['ratio']), 5),
                        fmt(s['perftest'], 5)] +
                       [fmt(med(s[k]), 5) for k in CORE_KEYS])
            for agg in (min, max):
                w.writerow([wl, size, f'{metric}_{agg.__name__}'] +
                           [fmt(agg(s[k]), 5) if s[k] else ''
                            for k in ('ndk', 'raw', 'ratio')] + [''] +
                           [fmt(agg(s[k]), 5) if s[k] else ''
                            for k in CORE_KEYS])
        for (wl, mode), keys in details.items():
            for k, v in keys.items():
                w.writerow([wl, '', f'split_{k}',
                            fmt(med(v), 5) if mode == 'ndk' else '',
                            fmt(med(v), 5) if mode == 'raw' else '', '', ''])
        for s in sizes:
            for k, v in s.items():
                if k != 'object':
                    w.writerow(['memory', '', f"{s['object']}_{k}", v,
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


def targets(rows):
    lines = []
    by = {(wl, size, metric): s for wl, size, metric, s in rows}
    fast = [s for wl, size, metric, s in rows
            if wl in FAST_PATH and metric == 'ndk_allocs']
    if fast:
        n = sum(sum(s['ndk']) for s in fast)
        lines.append(f'  fast path: {n} allocations by ndk.ko over every '
                     f"round (target 0) {'holds' if not n else 'MISSED'}")
    for wl, size, metric, bound, sense, what in TARGETS:
        s = by.get((wl, size, metric))
        if not s or not s['ratio']:
            lines.append(f'  {what}: no data')
            continue
        r = med(s['ratio'])
        ok = r >= bound if sense == '>=' else r <= bound
        lines.append(f"  {what}: NDK/raw {r:.3f} (target {sense} {bound}) "
                     f"{'holds' if ok else 'MISSED'}")
    s = by.get(('send_bw_2cpu', 64, 'scale_vs_1qp'))
    if s and s['ndk']:
        n = med(s['ndk'])
        lines.append(f"  NDK two QPs on two CPUs: {n:.2f} times one QP's rate "
                     f"(target >= 1.6) {'holds' if n >= 1.6 else 'MISSED'}")
    s = by.get(('send_lat', 8, 'lat_us'))
    if s and s['perftest'] and s['ndk']:
        n = med(s['ndk'])
        ok = n <= s['perftest']
        lines.append(f"  NDK send latency {n:.2f} us vs perftest ib_send_lat "
                     f"{s['perftest']:.2f} us (target <=) "
                     f"{'holds' if ok else 'MISSED'}")
    return lines


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
    log, outdir = sys.argv[1], sys.argv[2]
    results, details, sizes, perftest = parse(log)
    if not results:
        sys.exit('bench: no ndkperf results in ' + log)
    rows = summarise(results, perftest)
    out = table(rows)
    core = core_table(rows)
    if core:
        out.append('')
        out.append('ndk\'s dispatch on the core CQ API (mode=core), '
                   'median of rounds (min-max):')
        out.extend(core)
    out.append('')
    out.append('where the time goes, ns per operation (median of rounds):')
    for (wl, mode), keys in details.items():
        out.append(f'  {wl} {mode}: ' + ' '.join(
            f'{k}={med(v):.0f}' for k, v in keys.items()))
    out.append('ndk memory per object, bytes (slots: entries):')
    for s in sizes:
        out.append('  ' + ' '.join(f'{k}={v}' for k, v in s.items()))
    out.append('targets:')
    out.extend(targets(rows))
    text = '\n'.join(out) + '\n'
    with open(os.path.join(outdir, 'table.txt'), 'w') as f:
        f.write(text)
    write_csv(os.path.join(outdir, 'results.csv'), rows, details, sizes)
    png = chart(outdir, rows)
    print(text, end='')
    print(f'bench: wrote {outdir}/results.csv, {outdir}/table.txt'
          + (f' and {png}' if png else ''))


if __name__ == '__main__':
    main()
