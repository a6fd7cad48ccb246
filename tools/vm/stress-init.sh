#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the stress VM: for each transport (Soft-RoCE, optionally
# Soft-iWARP) create the device on eth0, run ndk_stress for the given
# time, unload it and print ndk's counters; then unload ndk, scan for
# leaks and power off.
. /ndk/guest.sh
guest_setup

arg() { tr ' ' '\n' </proc/cmdline | sed -n "s/^ndk_stress\.$1=//p"; }
seconds=$(arg seconds)
[ -n "$seconds" ] || seconds=600
transports=$(arg transports | tr , ' ')
[ -n "$transports" ] || transports=rxe
params="seconds=$seconds addr6=fd00::15"
[ -n "$(arg seed)" ] && params="$params seed=$(arg seed)"
[ -n "$(arg threads)" ] && params="$params threads_per_cpu=$(arg threads)"
[ -n "$(arg close_unpolled)" ] &&
	params="$params close_unpolled=$(arg close_unpolled)"

echo "NDK-STRESS: setup"
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
# No duplicate detection: the address must be usable at once.
echo 0 >/proc/sys/net/ipv6/conf/eth0/accept_dad
ip -6 addr add fd00::15/64 dev eth0
# ndk_stress bounds each of its waits by 30 s; anything blocked far
# longer than that is stuck.
echo 240 >/proc/sys/kernel/hung_task_timeout_secs

insmod /ndk/ndk.ko || echo "NDK-STRESS: insmod ndk failed"
for t in $transports; do
	mod=siw
	[ $t = rxe ] && mod=rdma_rxe
	modprobe $mod || echo "NDK-STRESS: modprobe $mod failed"
	rdma link add ${t}0 type $t netdev eth0 ||
		echo "NDK-STRESS: $t link failed"
	echo "NDK-STRESS: begin $t"
	insmod /ndk/ndk_stress.ko $params ||
		echo "NDK-STRESS: insmod ndk_stress failed"
	# The threads stop on their own; a stuck one gives up after its
	# bounded waits, so the summary comes well within this.
	i=0
	while ! dmesg | grep -q 'ndk_stress: done:'; do
		if [ $i -ge $((seconds + 300)) ]; then
			echo "NDK-STRESS: $t: no summary from ndk_stress: failed"
			break
		fi
		sleep 5
		i=$((i + 5))
	done
	rmmod ndk_stress || echo "NDK-STRESS: rmmod ndk_stress failed"
	dmesg -c >/dev/null
	# Every adapter is closed now: no object may be left.
	sed "s/^/NDK-STAT: $t /" /sys/kernel/debug/ndk/${t}0/stats
	echo "NDK-STRESS: end $t"
	delete_device $t 30
	case $? in
	1) echo "NDK-STRESS: $t link delete failed" ;;
	2) echo "NDK-STRESS: $t link delete hung: failed"; break ;;
	esac
done
rmmod ndk || echo "NDK-STRESS: rmmod ndk failed"

guest_finish "NDK-STRESS: done"
