#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the test VM: run the KUnit suites by loading their module,
# and the interop cases against rdma-core's programs, over Soft-RoCE and
# then over Soft-iWARP, scan for leaks, power off.
. /ndk/guest.sh
guest_setup

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
# insmod waits in D state while a suite runs: report only tasks stuck
# longer than any case may take.
echo 240 >/proc/sys/kernel/hung_task_timeout_secs

# Each interop case clears the kernel log before wait_log(), and the
# trace (see trace_begin()).
# Report interop case $2 over transport $1: ok when the user-space
# program exited with $3 = 0 and ndk_rping logged PASS. On failure the
# reason, the program's output and the case's trace follow.
interop_result() {
	res=$(dmesg | grep -Eo 'ndk_rping: [a-z]+ [a-z]+: (PASS|FAIL).*')
	case "$res" in
	*PASS*) [ "$3" = 0 ] && echo "NDK-INTEROP: ok $1 $2" && return ;;
	"") res="ndk_rping reported nothing" ;;
	esac
	echo "NDK-INTEROP: not ok $1 $2 (user-space exit $3; $res)"
	sed 's/^/NDK-INTEROP-LOG: /' /tmp/interop.log
	trace_dump "the trace of interop case $2 over $1"
}

# Case $2 over transport $1: ndk_rping as the server (module arguments
# $3), then the user-space client "$@" after shift 3, at most 60 s.
interop_ndk_server() {
	t=$1 name=$2 args=$3
	shift 3
	dmesg -c >/dev/null
	trace_begin
	insmod /ndk/ndk_rping.ko mode=server addr=10.0.2.15 $args ||
		echo "NDK-CHECK: insmod ndk_rping failed"
	rc=none
	if wait_log 'ndk_rping: .*(listening|FAIL)' 30; then
		timeout 60 "$@" >/tmp/interop.log 2>&1
		rc=$?
	fi
	wait_log 'ndk_rping: .*(PASS|FAIL)' 60
	rmmod ndk_rping || echo "NDK-CHECK: rmmod ndk_rping failed"
	interop_result $t $name $rc
}

# Case $2 over transport $1: the user-space server "$@" after shift 4
# listening on port $4, then ndk_rping as the client (arguments $3).
interop_ndk_client() {
	t=$1 name=$2 args=$3 port=$4
	shift 4
	dmesg -c >/dev/null
	trace_begin
	timeout 60 "$@" >/tmp/interop.log 2>&1 &
	pid=$!
	# Connect only once the server listens: a request before that is
	# refused.
	i=0
	while ! rdma resource show cm_id | grep -q "LISTEN.*:$port "; do
		[ $i -ge 100 ] && break
		sleep 0.1
		i=$((i + 1))
	done
	insmod /ndk/ndk_rping.ko mode=client addr=10.0.2.15 $args ||
		echo "NDK-CHECK: insmod ndk_rping failed"
	wait_log 'ndk_rping: .*(PASS|FAIL)' 60
	wait $pid
	rc=$?
	rmmod ndk_rping || echo "NDK-CHECK: rmmod ndk_rping failed"
	interop_result $t $name $rc
}

# ndk against rdma-core's own programs, which ndk's authors did not
# write: rping's RDMA read/write ping loop and rdma_server/rdma_client's
# send/receive, each with ndk on either side.
interop() {
	interop_ndk_server $1 rping-user-client-ndk-server "count=10 size=64" \
		rping -c -a 10.0.2.15 -p 7174 -C 10 -S 64 -V
	interop_ndk_client $1 rping-ndk-client-user-server "count=10 size=64" \
		7174 rping -s -a 10.0.2.15 -p 7174 -C 10 -S 64 -V
	interop_ndk_server $1 rdmacm-user-client-ndk-server proto=rdmacm \
		rdma_client -s 10.0.2.15 -p 7471
	interop_ndk_client $1 rdmacm-ndk-client-user-server proto=rdmacm \
		7471 rdma_server -p 7471
}

# A consumer module unloaded right after ndk_close_adapter() returns,
# while the close callback that let it close the adapter still runs:
# ndk must wait for that callback, or it returns into freed text.
unload_case() {
	dmesg -c >/dev/null
	if insmod /ndk/ndk_unload.ko && rmmod ndk_unload; then
		order=$(dmesg | grep -Eo 'ndk_unload: [a-z]+' | tr '\n' ' ')
		if [ "$order" = "ndk_unload: close ndk_unload: adapter " ]; then
			echo "NDK-INTEROP: ok $1 consumer-unload"
			return
		fi
		echo "NDK-INTEROP: not ok $1 consumer-unload (order: $order)"
		return
	fi
	echo "NDK-INTEROP: not ok $1 consumer-unload (insmod or rmmod failed)"
}

# A Windows driver's sources on ndk's WDK layer (samples/wdk_rdma): its
# DriverEntry connects to itself through WskOpenNdkAdapter and checks the
# data of every transfer; its DriverUnload, at rmmod, closes the adapter.
wdk_case() {
	dmesg -c >/dev/null
	if insmod /ndk/wdk_rdma.ko && rmmod wdk_rdma; then
		res=$(dmesg | grep -Eo 'WdkSample: (PASS|FAIL|unloaded)' |
			tr '\n' ' ')
		if [ "$res" = "WdkSample: PASS WdkSample: unloaded " ]; then
			echo "NDK-INTEROP: ok $1 wdk-sample"
			return
		fi
	else
		res="insmod or rmmod failed"
	fi
	echo "NDK-INTEROP: not ok $1 wdk-sample ($res)"
	dmesg | grep WdkSample | sed 's/^/NDK-INTEROP-LOG: /'
}

# The conformance self-test a user runs (tests/selftest), in loopback,
# here with the debug kernel's checkers watching; its checks are counted
# by make distro-check on Debian's kernels, this is one case.
selftest_case() {
	dmesg -c >/dev/null
	# A self-test whose requests never completed stays loaded and says
	# so, with its insmod succeeding: only its "0 failed" line passes.
	if insmod /ndk/ndk_selftest.ko ifname=eth0 &&
	   dmesg | grep -Eq 'ndk_selftest: [0-9]+ passed, 0 failed' &&
	   ! dmesg | grep -q 'ndk_selftest: requests did not complete' &&
	   rmmod ndk_selftest; then
		echo "NDK-INTEROP: ok $1 selftest"
		return
	fi
	echo "NDK-INTEROP: not ok $1 selftest ($(dmesg | grep -Eo 'ndk_selftest: [0-9]+ passed.*'))"
	dmesg | grep -E '^(\[[ 0-9.]+\] )?(not ok|# )' | sed 's/^/NDK-INTEROP-LOG: /'
}

# The connection manager's trace during the suites: ndk's and rdma_cm's
# events, and the TCP sockets' state changes (siw's connections). The
# first failed case stops it (ndk_test_exit()); the end of what it holds
# then goes to the console, so that a failure that happens once can be
# read afterwards.
T=/sys/kernel/tracing
mount -t tracefs tracefs $T || echo "NDK-CHECK: mount tracefs failed"
echo 8192 >$T/buffer_size_kb
echo 'protocol == 6' >$T/events/sock/inet_sock_set_state/filter
echo 1 >$T/events/sock/inet_sock_set_state/enable
[ ! -d $T/events/rdma_cma ] || echo 1 >$T/events/rdma_cma/enable
trace_begin() {
	echo >$T/trace
	echo 1 >$T/tracing_on
}
# The last 4000 lines of the trace, after the heading $1.
trace_dump() {
	echo "NDK-TRACE: $1"
	grep -v '^#' $T/trace | tail -n 4000 | sed 's/^/NDK-TRACE: /'
}
trace_end() {
	[ "$(cat $T/tracing_on)" = 0 ] || return 0
	dump_blocked
	trace_dump "the trace up to the first failed case over $1, its last 4000 lines"
}

# One full run per transport: Soft-RoCE (RoCEv2), then Soft-iWARP. Each
# device alone sits on eth0 so that addresses resolve to it. ndk stays
# loaded across both, so the switch also exercises device removal and
# arrival under a loaded provider.
insmod /ndk/ndk.ko || echo "NDK-CHECK: insmod ndk failed"
insmod /ndk/ndk_wdk.ko || echo "NDK-CHECK: insmod ndk_wdk failed"
echo 1 >$T/events/ndk/ndk_cm_event/enable
for t in $transports; do
	mod=siw
	[ $t = rxe ] && mod=rdma_rxe
	modprobe $mod || echo "NDK-CHECK: modprobe $mod failed"
	rdma link add ${t}0 type $t netdev eth0 ||
		echo "NDK-CHECK: $t link failed"
	rdma link show
	# The interop cases come first: the last suite, ndk_main,
	# deletes the device under live objects.
	interop $t
	unload_case $t
	wdk_case $t
	selftest_case $t
	trace_begin
	echo "NDK-CHECK: tests begin $t"
	insmod /ndk/ndk_kunit.ko $kunit_args ||
		echo "NDK-CHECK: insmod ndk_kunit failed"
	rmmod ndk_kunit || echo "NDK-CHECK: rmmod ndk_kunit failed"
	echo "NDK-CHECK: tests end $t"
	trace_end $t
	[ -e /sys/class/infiniband/${t}0 ] || continue
	delete_device $t 30
	case $? in
	1) echo "NDK-CHECK: $t link delete failed" ;;
	2) echo "NDK-CHECK: $t link delete hung: failed"; break ;;
	esac
done
rmmod ndk_wdk || echo "NDK-CHECK: rmmod ndk_wdk failed"
rmmod ndk || echo "NDK-CHECK: rmmod ndk failed"

guest_finish "NDK-CHECK: done"
