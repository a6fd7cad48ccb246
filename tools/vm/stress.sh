#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make stress`: build the test kernel (cached) and ndk with
# tests/stress against it, boot QEMU, churn NDK objects and
# connections for NDK_STRESS_SECONDS per transport under KASAN, lockdep,
# DEBUG_ATOMIC_SLEEP and kmemleak, and judge the console log. Ends with
# "stress: <ops> operations, <splats> splats, <leaks> leaks".
#
# Environment: NDK_STRESS_SECONDS (600), NDK_STRESS_TRANSPORTS (rxe;
# rxe,siw adds a Soft-iWARP pass), NDK_STRESS_THREADS (threads per CPU,
# 2), NDK_STRESS_SEED (random), NDK_STRESS_CLOSE_UNPOLLED=0 (never close
# QPs whose completions are not polled yet; on by default),
# NDK_STRESS_TIMEOUT (seconds before the VM is killed; by default the
# passes plus 15 minutes), NDK_QEMU_ACCEL.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

outdir=$NDK_TOP/build/stress
mkdir -p "$outdir"
seconds=${NDK_STRESS_SECONDS:-600}
transports=${NDK_STRESS_TRANSPORTS:-rxe}
passes=$(echo "$transports" | tr , '\n' | grep -c .)

ktree=$(build_for_vm "$outdir")

"$NDK_VM_DIR/mkinitramfs.sh" "$ktree" "$outdir/initramfs.cpio.gz" \
	"$NDK_VM_DIR/stress-init.sh" "$NDK_TOP/ndk/ndk.ko" \
	"$NDK_TOP/tests/stress/ndk_stress.ko"

append="console=ttyS0 panic=-1 kasan.fault=report"
append+=" ndk_stress.seconds=$seconds ndk_stress.transports=$transports"
[ -n "${NDK_STRESS_SEED:-}" ] && append+=" ndk_stress.seed=$NDK_STRESS_SEED"
[ -n "${NDK_STRESS_THREADS:-}" ] &&
	append+=" ndk_stress.threads=$NDK_STRESS_THREADS"
[ -n "${NDK_STRESS_CLOSE_UNPOLLED:-}" ] &&
	append+=" ndk_stress.close_unpolled=$NDK_STRESS_CLOSE_UNPOLLED"
# Booting, the last cycles, unloading and the leak scans take minutes
# on an emulated CPU with every checker on.
limit=${NDK_STRESS_TIMEOUT:-$((passes * (seconds + 300) + 600))}

log "booting the stress VM (${NDK_QEMU_ACCEL:-tcg}): $seconds s over $transports, at most $limit s"
rc=0
boot_vm "$ktree" "$outdir" "$append" "$limit" 2G || rc=$?
[ "$rc" = 124 ] && log "the VM timed out"

exec python3 "$NDK_VM_DIR/stress-judge.py" --qemu-rc "$rc" "$outdir/console.log"
