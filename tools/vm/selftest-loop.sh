#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make selftest-loop`: build the test kernel (cached) and ndk against it,
# boot one QEMU VM and load tests/selftest in loopback NDK_LOOPS times over
# one transport, each run judged on its own: every check passed, the module
# unloaded, no splat and no leak while it ran. A flake shows as a count, not
# as luck. Ends with "selftest-loop: N of N runs passed".
#
# Environment: NDK_KERNEL (6.1, 6.12 or 7.3), NDK_TRANSPORT (rxe or siw; rxe),
# NDK_LOOPS (10), NDK_SELFTEST_LOOP_TIMEOUT (seconds before the VM is
# killed; by default 300 plus 240 per run), NDK_QEMU_ACCEL.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

transport=${NDK_TRANSPORT:-rxe}
case $transport in
rxe | siw) ;;
*) die "NDK_TRANSPORT=$transport: rxe or siw" ;;
esac
loops=${NDK_LOOPS:-10}
case $loops in
'' | *[!0-9]* | 0*) die "NDK_LOOPS=$loops: a positive number" ;;
esac

outdir=$NDK_TOP/build/selftest-loop
mkdir -p "$outdir"

ktree=$(build_for_vm "$outdir")

# kmod's insmod, not busybox's: busybox tries a failed load a second time
# another way, which would run a failing self-test twice in one run.
NDK_INITRAMFS_ELF=$(command -v kmod) \
	"$NDK_VM_DIR/mkinitramfs.sh" "$ktree" "$outdir/initramfs.cpio.gz" \
	"$NDK_VM_DIR/selftest-loop-init.sh" "$NDK_TOP/ndk/ndk.ko" \
	"$NDK_TOP/tests/selftest/ndk_selftest.ko"

append="console=ttyS0 panic=-1 kasan.fault=report"
append+=" ndk_loop.transport=$transport ndk_loop.loops=$loops"
limit=${NDK_SELFTEST_LOOP_TIMEOUT:-$((300 + 240 * loops))}

log "booting the test VM (${NDK_QEMU_ACCEL:-tcg}): $loops self-test runs over $transport, at most $limit s"
rc=0
boot_vm "$ktree" "$outdir" "$append" "$limit" "$test_vm_mem" || rc=$?
[ "$rc" = 124 ] && log "the VM timed out"

exec python3 "$NDK_VM_DIR/judge-selftest-loop.py" --loops "$loops" \
	--qemu-rc "$rc" "$outdir/console.log"
