#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the bench VM: bring up Soft-RoCE, load ndk, print ndk's
# per-object memory, run every workload of /ndk/bench.conf over NDK and
# over raw verbs, alternating in chunks inside each load (A B A B ...),
# for several rounds, then rdma-core's perftest over the same device;
# power off. ndkperf's records come through the kernel's console, this
# script's through the second serial port.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
# nvmet_up and $NQN, the target of the nvmeof workload.
. /ndk/guest.sh

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
# Our records go to a serial port of their own (bench.sh's records.log),
# the kernel's messages to the console. On one port, a message printed
# from the kernel's printer thread (7.3's 8250 console) lands inside a
# line written here; a record cut so may still read as a figure.
if ! : 2>/dev/null >/dev/ttyS1; then
	echo "NDK-BENCH: no second serial port (/dev/ttyS1) for the records"
	reboot -f
fi
exec >/dev/ttyS1 2>&1

# ROUNDS, SPECS and PERFTEST (below), and NIC: without a NIC (counting
# instructions) eth0 is a dummy device, which rxe serves as well for
# loopback to its own address and which the host never interrupts.
. /ndk/bench.conf

ip link set lo up
[ -n "$NIC" ] || ip link add eth0 type dummy
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
modprobe rdma_rxe
rdma link add rxe0 type rxe netdev eth0
insmod /ndk/ndk.ko
echo "NDK-BENCH: setup $(rdma link show)"

# SPECS: one "workload size iterations depth [param=value...]" per line,
# the optional parameters passed to ndkperf as they are, after the
# defaults, which they override (mode=all).

perf() {
	insmod /ndk/ndkperf.ko "$@" ||
		echo "NDK-BENCH: insmod ndkperf $* failed"
	# A profile's symbols of ndkperf, which is loaded only meanwhile.
	[ -z "$PROFILE" ] || grep -F '[ndkperf]' /proc/kallsyms |
		sed 's/^/NDK-KSYM: /'
	rmmod ndkperf
}

# nvmeof: $1 4 KiB reads and writes per figure (bench.c in
# samples/ndk_nvmeof, nvmeio.c here) through ndk_nvmeof (mode ndk) and
# through Linux's own NVMe/RDMA host on /dev/nvme0n1 (mode raw), against
# nvmet_up's target; one NDK-NVMEOF line per figure, of round $2.
nvmeof() {
	if [ "$MODE" != raw ]; then
		dmesg -c >/dev/null
		if insmod /ndk/ndk_nvmeof.ko traddr=10.0.2.15 subnqn="$NQN" \
			queues=1 bench="$1"; then
			# A profile's symbols of the sample, as perf()'s.
			[ -z "$PROFILE" ] || grep -F '[ndk_nvmeof]' /proc/kallsyms |
				sed 's/^/NDK-KSYM: /'
			rmmod ndk_nvmeof
		else
			echo "NDK-BENCH: ndk_nvmeof bench=$1 failed"
		fi
		dmesg | sed -n "s/.*ndk_nvmeof: bench /NDK-NVMEOF: round=$2 host=ndk /p"
	fi
	[ "$MODE" != ndk ] || return 0
	if ! linux_host_connect; then
		echo "NDK-BENCH: nvme connect failed: $(cat /tmp/nvme.log)"
		return
	fi
	# blk-mq gives a device of one hardware queue (one per CPU, and the
	# VM has one) mq-deadline; a host with more CPUs runs no scheduler.
	echo none >/sys/block/nvme0n1/queue/scheduler
	/ndk/nvmeio /dev/nvme0n1 "$1" >/tmp/nvmeio.log 2>&1 ||
		echo "NDK-BENCH: nvmeio failed: $(cat /tmp/nvmeio.log)"
	sed -n "s/^nvmeio: /NDK-NVMEOF: round=$2 host=linux /p" /tmp/nvmeio.log
	nvme disconnect -n "$NQN" >/dev/null 2>&1 ||
		echo "NDK-BENCH: nvme disconnect failed"
}

perf workload=send_lat mode=ndk iters=10 depth=16 sizes=1
if echo "$SPECS" | grep -q '^nvmeof '; then
	{ nvmet_up 10.0.2.15 && modprobe nvme-rdma; } ||
		echo "NDK-BENCH: the NVMe over Fabrics target could not be set up"
fi
r=1
while [ "$r" -le "$ROUNDS" ]; do
	echo "NDK-BENCH: round $r"
	echo "$SPECS" | while read -r w s n d extra; do
		[ -n "$w" ] || continue
		if [ "$w" = nvmeof ]; then
			nvmeof "$n" "$r"
			continue
		fi
		# shellcheck disable=SC2086 # $extra: zero or more words
		perf workload="$w" mode="$MODE" size="$s" iters="$n" \
			depth="$d" round="$r" $extra
	done
	r=$((r + 1))
done

# perftest: server in the background, client to the same address.
pt() {
	name=$1 prog=$2
	shift 2
	timeout 60 "$prog" -R -p 18800 "$@" </dev/null >/tmp/server.log 2>&1 &
	sleep 1
	if ! timeout 60 "$prog" -R -p 18800 "$@" 10.0.2.15 </dev/null \
		>/tmp/client.log 2>&1; then
		echo "NDK-BENCH: perftest $name failed"
		sed 's/^/NDK-PTLOG: client: /' /tmp/client.log
		sed 's/^/NDK-PTLOG: server: /' /tmp/server.log
	fi
	wait
	sed -n "s/^ *\([0-9][0-9]* .*\)/NDK-PERFTEST: $name \1/p" /tmp/client.log
}
echo "$PERFTEST" | while read -r name prog args; do
	[ -n "$name" ] || continue
	pt "$name" "$prog" $args
done

[ -z "$PROFILE" ] || grep -F '[' /proc/kallsyms | grep -vF '[ndkperf]' |
	sed 's/^/NDK-KSYM: /'
rmmod ndk
echo "NDK-BENCH: done"
# The last close of the port waits until its output has gone out.
exec >/dev/console 2>&1
reboot -f
