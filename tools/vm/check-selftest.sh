#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check-selftest`: prove that `make check` turns red on a kernel
# splat even when every KUnit case passes. Each provocation must make the
# run fail and be reported as a splat; "open", an adapter the test module
# keeps open, as objects left open, with ndk_kunit kept loaded.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

passed=0 failed=0
# check.sh makes build/check itself, but each run's log is opened first.
mkdir -p "$NDK_TOP/build/check" || exit 1
for p in warn leak sleep open; do
	report='^check: kernel splat'
	[ "$p" = open ] && report='^check: setup: NDK-CHECK: ndk objects left open'
	out=$NDK_TOP/build/check/selftest-$p.log
	# The provocation happens at module load: one transport shows it.
	NDK_CHECK_PROVOKE=$p NDK_CHECK_TRANSPORTS=rxe \
		"$NDK_VM_DIR/check.sh" >"$out" 2>&1
	rc=$?
	# The next run's console replaces this one's: each is kept.
	[ ! -f "$NDK_TOP/build/check/console.log" ] ||
		cp "$NDK_TOP/build/check/console.log" "${out%.log}.console.log"
	if [ "$rc" = 0 ]; then
		log "selftest $p: make check stayed green"
		failed=$((failed + 1))
	elif ! grep -q "$report" "$out" ||
	     ! grep -q ' 0 failed\| [1-9][0-9]* failed' "$out"; then
		log "selftest $p: failed without reporting it ($report)"
		failed=$((failed + 1))
	else
		log "selftest $p: detected"
		passed=$((passed + 1))
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
