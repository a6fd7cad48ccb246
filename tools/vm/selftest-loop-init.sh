#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the VM of `make selftest-loop`: create the device of one
# transport on eth0 and load ndk_selftest.ko in loopback again and again,
# each run between its own markers and followed by its own leak scan, so
# that the judge can tell which run failed; then power off.
. /ndk/guest.sh
guest_setup
# kmod's, which selftest-loop.sh packs.
guest_kmod

arg() { tr ' ' '\n' </proc/cmdline | sed -n "s/^ndk_loop\.$1=//p"; }
t=$(arg transport)
loops=$(arg loops)

echo "NDK-LOOP: setup"
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
# insmod waits in D state while the self-test runs: report only tasks
# stuck longer than any check may take.
echo 240 >/proc/sys/kernel/hung_task_timeout_secs

insmod /ndk/ndk.ko || echo "NDK-LOOP: insmod ndk failed"
mod=siw
[ $t = rxe ] && mod=rdma_rxe
modprobe $mod || echo "NDK-LOOP: modprobe $mod failed"
rdma link add ${t}0 type $t netdev eth0 || echo "NDK-LOOP: $t link failed"
# The port is usable once the link is: the NIC comes up asynchronously.
i=0
until rdma link show ${t}0/1 | grep -q 'state ACTIVE'; do
	[ $i -ge 300 ] && echo "NDK-LOOP: ${t}0 never became active: failed" &&
		break
	sleep 0.1
	i=$((i + 1))
done
rdma link show
report_leaks

# The connection manager's trace of each run, kept for a run that fails or
# reports a device defect: ndk's rdma_cm events and the TCP sockets' state
# changes, whose context (softirq, or the task that held the socket) tells
# how a segment was processed.
T=/sys/kernel/tracing
mount -t tracefs tracefs $T || echo "NDK-LOOP: mount tracefs failed"
echo 8192 >$T/buffer_size_kb
echo 'protocol == 6' >$T/events/sock/inet_sock_set_state/filter
echo 1 >$T/events/sock/inet_sock_set_state/enable
echo 1 >$T/events/ndk/ndk_cm_event/enable
echo "NDK-LOOP: tracing $(tr '\n' ' ' <$T/set_event)"
cm_trace() {
	grep -E 'ndk_cm_event|inet_sock_set_state' $T/trace |
		sed 's/^/NDK-TRACE: /'
}

n=1
while [ $n -le $loops ]; do
	echo "NDK-LOOP: run $n begin"
	dmesg -c >/dev/null
	echo >$T/trace
	insmod /ndk/ndk_selftest.ko ifname=eth0
	rc=$?
	if [ $rc != 0 ] || dmesg | grep -q '# .*: device defect: '; then
		cm_trace
	fi
	# A run whose requests did not complete keeps the module loaded
	# for their callbacks: no further run can load it.
	if dmesg | grep -q 'ndk_selftest: .*staying loaded'; then
		echo "NDK-LOOP: run $n end rc=$rc"
		echo "NDK-LOOP: ndk_selftest stays loaded: no further run"
		guest_finish "NDK-LOOP: done"
	fi
	if grep -q '^ndk_selftest ' /proc/modules; then
		rmmod ndk_selftest ||
			echo "NDK-LOOP: run $n: rmmod ndk_selftest failed"
	fi
	report_leaks
	echo "NDK-LOOP: run $n end rc=$rc"
	n=$((n + 1))
done

delete_device $t 30
case $? in
1) echo "NDK-LOOP: $t link delete failed" ;;
2) echo "NDK-LOOP: $t link delete hung: failed" ;;
esac
rmmod ndk || echo "NDK-LOOP: rmmod ndk failed"

guest_finish "NDK-LOOP: done"
