#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the demo VM: bring up Soft-RoCE, load ndk and the sample
# consumer, which runs its round trip while loading; while its
# connection is up, show it with ndkstat and rdma(8), then a few of
# ndk's trace events; power off.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing
. /ndk/guest.sh
guest_preempt

ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
modprobe rdma_rxe
rdma link add rxe0 type rxe netdev eth0
echo "NDK-DEMO: $(rdma link show)"
insmod /ndk/ndk.ko
# Every ndk event, from here on.
echo 1 >/sys/kernel/tracing/events/ndk/enable

# The sample holds its connection for a while; look at it meanwhile.
insmod /ndk/ndk_demo.ko hold_ms=4000 &
i=0
while [ $i -lt 300 ] &&
	! grep -q ESTABLISHED /sys/kernel/debug/ndk/rxe0/connections; do
	sleep 0.1
	i=$((i + 1))
done
ndkstat | sed 's/^/NDK-STAT: /'
for r in pd cq qp mr cm_id; do
	rdma resource show $r | grep -w ndk | sed "s/^/NDK-RES: $r /"
done
wait

echo 0 >/sys/kernel/tracing/events/ndk/enable
# The connection's life in short: connector calls, rdma_cm events, callbacks.
grep -E 'ndk_(listen|connect|accept|complete_connect|disconnect|cm_event):' \
	/sys/kernel/tracing/trace | head -n 16 |
	sed 's/^.* \([0-9.]*\): ndk_/\1 ndk_/; s/^/NDK-TRACE: /'
rmmod ndk_demo
rmmod ndk
echo "NDK-DEMO: end"
reboot -f
