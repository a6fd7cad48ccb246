#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make demo`: install what is missing, build the kernel the tests use
# (cached), build ndk and the sample consumer samples/ndk_demo, boot QEMU
# with Soft-RoCE and show what the consumer does.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

outdir=$NDK_TOP/build/demo
mkdir -p "$outdir"

ktree=$(build_for_vm "$outdir")

"$NDK_VM_DIR/mkinitramfs.sh" "$ktree" "$outdir/initramfs.cpio.gz" \
	"$NDK_VM_DIR/demo-init.sh" "$NDK_TOP/ndk/ndk.ko" \
	"$NDK_TOP/samples/ndk_demo/ndk_demo.ko"

log "booting the demo VM (${NDK_QEMU_ACCEL:-tcg}); the kernel's checkers make it slow"
boot_vm "$ktree" "$outdir" "console=ttyS0 panic=-1 quiet loglevel=7" \
	"${NDK_DEMO_TIMEOUT:-300}" 2G || true

# The consumer's own lines, without the kernel's timestamps, then what
# ndkstat, rdma(8) and the trace showed while its connection was up.
sed -n 's/^\[ *[0-9.]*\] ndk_demo: /  /p; s/^NDK-DEMO: link /  link /p' \
	"$outdir/console.log"
for tag in STAT RES TRACE; do
	case $tag in
	STAT) echo "ndkstat during the connection:" ;;
	RES) echo "rdma resource show, ndk's objects:" ;;
	TRACE) echo "trace events (events/ndk), the first few:" ;;
	esac
	sed -n "s/^NDK-$tag: /  /p" "$outdir/console.log"
done
grep -q 'ndk_demo: demo done' "$outdir/console.log" ||
	die "the demo did not finish; see $outdir/console.log"
python3 -B "$NDK_VM_DIR/splats.py" cpus "$outdir/console.log" ||
	die "see $outdir/console.log"
log "full console log: $outdir/console.log"
