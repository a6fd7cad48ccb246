#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make coverage`: `make check` on the coverage kernel (the debug kernel
# with gcov) with ndk built with gcov counters (check.sh, NDK_COVERAGE=1),
# then the line and branch coverage of each file of ndk/ from the counters
# the guest dumped to its console, measured by the host's gcov (the
# compiler that built ndk) through gcovr: HTML under build/coverage/html/,
# the uncovered lines of each file in build/coverage/uncovered.txt, each
# with its reason from tools/vm/coverage-reasons, and the summary, printed
# last, in build/coverage/summary.txt. The coverage of a red run is
# reported too; the exit status is the run's, or 1 if it passed and some
# uncovered code has no reason.
#
# Environment: as check.sh's (NDK_KERNEL, NDK_CHECK_TRANSPORTS, ...).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

install_missing gcovr
out=$NDK_TOP/build/coverage
rc=0
NDK_COVERAGE=1 bash "$NDK_VM_DIR/check.sh" || rc=$?

# The guest's tar holds the counters under the path of ndk's objects on
# this host, as make saw it (gcc names them so); gcov wants them beside
# the notes (.gcno) that gcc wrote at build time, copied here so that the
# tree stays clean.
data=$out/data
rm -rf "$data" "$out/html"
mkdir -p "$data" "$out/html"
tr -d '\r' <"$out/console.log" |
	sed -n '/^NDK-GCOV: begin$/,/^NDK-GCOV: end$/{/^NDK-GCOV: /!p}' |
	base64 -d | tar -C "$data" -xzf - ||
	die "no intact gcov dump in $out/console.log (run's status $rc)"
obj=$(find "$data" -path '*/ndk/main.gcda' -printf '%h\n')
[ -n "$obj" ] ||
	die "the gcov dump in $out/console.log holds no counters of ndk"
cp "$NDK_TOP"/ndk/*.gcno "$obj/"
# gcov runs where gcc ran, in the kernel tree, for the kernel headers that
# ndk's objects name relative to it: gcovr drops an object whose sources
# it cannot all open. A directory of links to the tree's entries stands in
# for it, so that gcov's files are not written into the cached tree.
ktree=$(kernel_dir coverage)
wd=$out/wd
rm -rf "$wd"
mkdir -p "$wd"
ln -s "$ktree"/* "$wd/"

# Branches on lines without code are the compiler's, not ndk's.
cd "$NDK_TOP"
gcovr --root "$NDK_TOP" --filter ndk/ --exclude-unreachable-branches \
	--object-directory "$wd" \
	--html-details "$out/html/index.html" \
	--html-title "ndk coverage, Linux $NDK_KERNEL" \
	--json "$out/coverage.json" --json-summary "$out/summary.json" \
	"$obj" >"$out/gcovr.log" 2>&1 ||
	{ cat "$out/gcovr.log" >&2; die "gcovr failed"; }
# gcovr only warns when it leaves an object out, which would understate
# the coverage: anything it says fails the run.
if [ -s "$out/gcovr.log" ]; then
	cat "$out/gcovr.log" >&2
	die "gcovr reported problems ($out/gcovr.log)"
fi
reasons=0
python3 "$NDK_VM_DIR/coverage.py" "$out/coverage.json" "$out/summary.json" \
	"$out/uncovered.txt" "$NDK_VM_DIR/coverage-reasons" \
	>"$out/summary.txt" || reasons=$?
[ "$rc" = 0 ] ||
	log "the run failed (status $rc): this is the coverage of a red run"
log "HTML: $out/html/index.html; uncovered lines: $out/uncovered.txt"
cat "$out/summary.txt"
[ "$reasons" = 0 ] ||
	log "code no test reaches, without a reason in tools/vm/coverage-reasons"
[ "$rc" = 0 ] || exit "$rc"
exit "$reasons"
