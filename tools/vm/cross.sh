#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check-cross`: two VMs on the test kernel, joined by a QEMU socket
# network on the loopback interface (lib.sh's boot_pair), run ndk against
# ndk and against rdma-core's rping across that wire, and ndk_nvmeof
# against Linux's NVMe over Fabrics target (tools/vm/cross-init.sh), over
# Soft-RoCE and Soft-iWARP. Judges both consoles; the last line is
# "N passed, N failed".
#
# Environment: NDK_QEMU_ACCEL (tcg), NDK_CROSS_TIMEOUT (seconds per VM,
# 1800: on 7.3 the NVMe over Fabrics case over siw alone takes about ten
# minutes with NDK_CHECK_THOROUGH=1), NDK_CROSS_TRANSPORTS=rxe,siw (the default),
# NDK_CHECK_THOROUGH=1 (make matrix) for 1000 commands per queue instead
# of 256 (guest.sh's nvmeof_ios).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

outdir=$NDK_TOP/build/check-cross
mkdir -p "$outdir"
rm -f "$outdir"/{server,client}.log

ktree=$(build_for_vm "$outdir")

NDK_INITRAMFS_ELF=$(command -v kmod) \
	"$NDK_VM_DIR/mkinitramfs.sh" "$ktree" "$outdir/initramfs.cpio.gz" \
	"$NDK_VM_DIR/cross-init.sh" "$NDK_TOP/ndk/ndk.ko" \
	"$NDK_TOP/tests/rping/ndk_rping.ko" \
	"$NDK_TOP/samples/ndk_nvmeof/ndk_nvmeof.ko"

append="console=ttyS0 panic=-1 kasan.fault=report"
[ -n "${NDK_CROSS_TRANSPORTS:-}" ] &&
	append+=" ndk_cross.transports=$NDK_CROSS_TRANSPORTS"
[ "${NDK_CHECK_THOROUGH:-0}" = 1 ] && append+=" ndk_cross.thorough=1"
limit=${NDK_CROSS_TIMEOUT:-1800}

trap stop_pair EXIT
boot_pair "$outdir" "$ktree" "$outdir/initramfs.cpio.gz" "$append" ndk_cross \
	"$limit"

exec python3 "$NDK_VM_DIR/judge-cross.py" \
	--server-rc "$pair_server_rc" --client-rc "$pair_client_rc" \
	--transports "${NDK_CROSS_TRANSPORTS:-rxe,siw}" \
	"$outdir/server.log" "$outdir/client.log"
