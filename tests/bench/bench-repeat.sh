#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench-repeat`: run `make bench` twice on the same build, into
# build/bench/run1 and run2, and put the two runs' figures side by side:
# per-call figures must agree within 0.5 %, latencies and rates within
# 3 % (tests/bench/report.py --compare). Counted in instructions (the
# default clock), the same binary gives the same figures on any host load.
set -euo pipefail
. "$(dirname "$0")/../../tools/vm/lib.sh"

out=$NDK_TOP/build/bench
for run in run1 run2; do
	NDK_BENCH_OUT=$out/$run "$NDK_TOP/tests/bench/bench.sh"
done
python3 "$NDK_TOP/tests/bench/report.py" --compare \
	"$out/run1/results.csv" "$out/run2/results.csv" | tee "$out/repeat.txt"
