#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the test VM: run the KUnit suites by loading their module,
# over Soft-RoCE and then over Soft-iWARP, scan for leaks, power off.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmp /tmp

arg() { tr ' ' '\n' </proc/cmdline | sed -n "s/^ndk_check\.$1=//p"; }
kunit_args=
provoke=$(arg provoke)
[ -n "$provoke" ] && kunit_args="provoke=$provoke"
transports=$(arg transports | tr , ' ')
[ -n "$transports" ] || transports="rxe siw"

echo "NDK-CHECK: setup"
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
# No duplicate detection: the address must be usable at once.
echo 0 >/proc/sys/net/ipv6/conf/eth0/accept_dad
ip -6 addr add fd00::15/64 dev eth0
# insmod waits in D state while a suite runs; the CM timeout cases take
# over 100 s, so report only tasks stuck longer than any case may take.
echo 240 >/proc/sys/kernel/hung_task_timeout_secs

# Forget whatever the boot itself leaked; only ndk's leaks matter here.
echo scan >/sys/kernel/debug/kmemleak
echo clear >/sys/kernel/debug/kmemleak

# One full run per transport: Soft-RoCE (RoCEv2), then Soft-iWARP. Each
# device alone sits on eth0 so that addresses resolve to it. ndk stays
# loaded across both, so the switch also exercises device removal and
# arrival under a loaded provider.
insmod /ndk/ndk.ko || echo "NDK-CHECK: insmod ndk failed"
for t in $transports; do
	mod=siw
	[ $t = rxe ] && mod=rdma_rxe
	modprobe $mod || echo "NDK-CHECK: modprobe $mod failed"
	rdma link add ${t}0 type $t netdev eth0 ||
		echo "NDK-CHECK: $t link failed"
	rdma link show
	echo "NDK-CHECK: tests begin $t"
	insmod /ndk/ndk_kunit.ko $kunit_args ||
		echo "NDK-CHECK: insmod ndk_kunit failed"
	rmmod ndk_kunit || echo "NDK-CHECK: rmmod ndk_kunit failed"
	echo "NDK-CHECK: tests end $t"
	# Removal waits for every device reference; one left behind by a
	# failed case would stall the VM until its timeout.
	rdma link delete ${t}0 &
	del=$!
	i=0
	while kill -0 $del 2>/dev/null && [ $i -lt 30 ]; do
		sleep 1
		i=$((i + 1))
	done
	if kill -0 $del 2>/dev/null; then
		echo "NDK-CHECK: $t link delete hung: failed"
		break
	fi
	wait $del || echo "NDK-CHECK: $t link delete failed"
done
rmmod ndk || echo "NDK-CHECK: rmmod ndk failed"

# kmemleak reports objects only once they are older than 5 s.
sleep 6
echo scan >/sys/kernel/debug/kmemleak
echo scan >/sys/kernel/debug/kmemleak
cat /sys/kernel/debug/kmemleak
echo "NDK-CHECK: done"
reboot -f
