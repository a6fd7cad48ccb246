#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check-cross`: two VMs on the test kernel, joined by a QEMU socket
# network on the loopback interface, run ndk against ndk and against
# rdma-core's rping across that wire (tools/vm/cross-init.sh), over
# Soft-RoCE and Soft-iWARP. Judges both consoles; the last line is
# "N passed, N failed".
#
# Environment: NDK_QEMU_ACCEL (tcg), NDK_CROSS_TIMEOUT (seconds per VM,
# 600), NDK_CROSS_TRANSPORTS=rxe,siw (the default).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

outdir=$NDK_TOP/build/check-cross
mkdir -p "$outdir"
rm -f "$outdir"/{server,client}.log

ktree=$(build_for_vm "$outdir")

"$NDK_VM_DIR/mkinitramfs.sh" "$ktree" "$outdir/initramfs.cpio.gz" \
	"$NDK_VM_DIR/cross-init.sh" "$NDK_TOP/ndk/ndk.ko" \
	"$NDK_TOP/tests/rping/ndk_rping.ko"

append="console=ttyS0 panic=-1 kasan.fault=report"
[ -n "${NDK_CROSS_TRANSPORTS:-}" ] &&
	append+=" ndk_cross.transports=$NDK_CROSS_TRANSPORTS"
limit=${NDK_CROSS_TIMEOUT:-600}

# The server VM's QEMU listens on the wire, the client VM's connects.
# 1 GiB is plenty, and kmemleak's scans, which take most of a run's
# time under TCG, grow with the memory.
vm() {
	local role=$1 mac=$2 sock=$3
	run_vm "$outdir/$role.log" "$ktree" "$outdir/initramfs.cpio.gz" \
		"$append ndk_cross.role=$role" "$limit" 1G \
		-netdev "socket,id=n0,$sock=127.0.0.1:$port" \
		-device "virtio-net-pci,netdev=n0,mac=$mac"
}

# Connecting to probe would make the probe the wire's other end: look.
listening() { ss -Hltn "sport = :$port" | grep -q .; }

# On an early exit: end our VMs, through the timeout(1) each one runs
# under, which passes the signal on to QEMU.
server_pid='' client_pid=''
stop() {
	local pid
	for pid in $server_pid $client_pid; do
		pkill -TERM -P "$pid" 2>/dev/null || true
	done
}
trap stop EXIT

# A free port, taken by the server VM's QEMU a moment later; should
# someone else take it first, that QEMU fails and we try another.
for attempt in 1 2 3; do
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	log "booting the server VM (${NDK_QEMU_ACCEL:-tcg}), wire on port $port"
	vm server 52:54:00:77:00:01 listen &
	server_pid=$!
	for _ in $(seq 100); do
		listening && break
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	listening && break
	stop
	wait "$server_pid" || true
	server_pid=''
	log "the server VM's QEMU does not listen on port $port (attempt $attempt)"
done
[ -n "$server_pid" ] || die "cannot start the server VM; see $outdir/server.log"
log "booting the client VM"
vm client 52:54:00:77:00:02 connect &
client_pid=$!

server_rc=0 client_rc=0
wait "$server_pid" || server_rc=$?
wait "$client_pid" || client_rc=$?
server_pid='' client_pid=''
[ "$server_rc" = 124 ] && log "the server VM timed out"
[ "$client_rc" = 124 ] && log "the client VM timed out"

exec python3 "$NDK_VM_DIR/judge-cross.py" \
	--server-rc "$server_rc" --client-rc "$client_rc" \
	--transports "${NDK_CROSS_TRANSPORTS:-rxe,siw}" \
	"$outdir/server.log" "$outdir/client.log"
