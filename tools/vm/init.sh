#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the test VM: run the KUnit suites by loading their module,
# and the interop cases against rdma-core's programs, over Soft-RoCE and
# then over Soft-iWARP, scan for leaks, power off.
. /ndk/guest.sh
guest_setup
# kmod's, which check.sh packs.
guest_kmod

arg() { tr ' ' '\n' </proc/cmdline | sed -n "s/^ndk_check\.$1=//p"; }
kunit_args=
provoke=$(arg provoke)
[ -n "$provoke" ] && kunit_args="provoke=$provoke"
transports=$(arg transports | tr , ' ')
[ -n "$transports" ] || transports="rxe siw"
nvmeof_ios=$(nvmeof_ios)

echo "NDK-CHECK: setup"
ip link set lo up
# Jumbo frames, as RoCE fabrics run: Soft-RoCE's path MTU follows
# eth0's, 4096 instead of 1024, so a large transfer takes a quarter of
# the packets (the NVMe over Fabrics cases' 128 KiB commands). rxe's
# traffic never leaves the VM; siw's goes through lo.
ip link set eth0 mtu 9000 up
ip addr add 10.0.2.15/24 dev eth0
# No duplicate detection: the address must be usable at once.
echo 0 >/proc/sys/net/ipv6/conf/eth0/accept_dad
ip -6 addr add fd00::15/64 dev eth0
# insmod waits in D state while a suite runs: report only tasks stuck
# longer than any case may take.
echo 240 >/proc/sys/kernel/hung_task_timeout_secs

# What the VM holds for the connection on port $1: its TCP sockets, ndk's
# view of its devices and the QPs.
case_state() {
	head -n 1 /proc/net/tcp
	tcp_sockets "$1"
	for f in /sys/kernel/debug/ndk/*/connections \
		 /sys/kernel/debug/ndk/*/stats; do
		echo "$f:"
		cat "$f"
	done
	rdma resource show qp
}

# Wait up to 90 s for ndk_rping's verdict on the case served on port $1,
# while unread_watch() looks at the accepting socket; unread is set to
# what it found. siw's unread first message settles the try at once:
# neither side gets a message any more, and ndk_rping would only report
# its timeout, 30 s later. /tmp/interop.state keeps the state 5 s in, or
# at that message, for a failed case.
watch_case() {
	echo "no state: the case ended within 5 s" >/tmp/interop.state
	touch /tmp/unread_watch.on
	unread_watch "$1" 2 &
	watcher=$! i=0
	# In steps of 0.2 s: a case ends within one, not within a second.
	while ! dmesg | grep -Eq 'ndk_rping: .*(PASS|FAIL)'; do
		[ $i -ge 450 ] && break
		if [ -s /tmp/unread ]; then
			{ echo "at the unread first message:"; case_state "$1"; } \
				>/tmp/interop.state 2>&1
			break
		fi
		sleep 0.2
		i=$((i + 1))
		[ $i = 25 ] && { echo "after 5 s:"; case_state "$1"; } \
			>/tmp/interop.state 2>&1
	done
	rm -f /tmp/unread_watch.on
	wait $watcher
	unread=$(cat /tmp/unread)
}

# ndk_rping as the server (module arguments $1) on port $2, then the
# user-space client "$@" after shift 2, at most 60 s. Sets rc to the
# client's exit status, and unread (see watch_case()).
interop_ndk_server() {
	args=$1 port=$2
	shift 2
	rc=none unread=''
	insmod /ndk/ndk_rping.ko mode=server addr=10.0.2.15 $args ||
		echo "NDK-CHECK: insmod ndk_rping failed"
	if wait_log 'ndk_rping: .*(listening|FAIL)' 30; then
		timeout 60 "$@" >/tmp/interop.log 2>&1 &
		pid=$!
		watch_case $port
		[ -z "$unread" ] || kill $pid 2>/dev/null
		wait $pid
		rc=$?
	fi
	rmmod ndk_rping || echo "NDK-CHECK: rmmod ndk_rping failed"
}

# The user-space server "$@" after shift 2 listening on port $2, then
# ndk_rping as the client (arguments $1). Sets rc and unread as
# interop_ndk_server().
interop_ndk_client() {
	args=$1 port=$2
	shift 2
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
	watch_case $port
	[ -z "$unread" ] || kill $pid 2>/dev/null
	wait $pid
	rc=$?
	rmmod ndk_rping || echo "NDK-CHECK: rmmod ndk_rping failed"
}

# Interop case $2 over transport $1, run by $3 (interop_ndk_server or
# interop_ndk_client) with the arguments after shift 3. Each try clears
# the kernel log, for wait_log(), and the trace (see trace_begin()). It
# is ok when the user-space program exited 0 and ndk_rping logged PASS.
# Over siw a try that failed on siw's unread first message is reported
# as a device defect and run again: one of three tries must pass. Any
# other failure ends the case: its reason, the program's output, the
# state 5 s in and the case's trace follow.
interop_case() {
	t=$1 name=$2 run=$3
	shift 3
	try=1
	while :; do
		dmesg -c >/dev/null
		trace_begin
		$run "$@"
		res=$(dmesg | grep -Eo 'ndk_rping: [a-z]+ [a-z]+: (PASS|FAIL).*')
		case "$res" in
		*PASS*) if [ "$rc" = 0 ]; then
				echo "NDK-INTEROP: ok $t $name"
				return
			fi ;;
		"") res="ndk_rping reported nothing" ;;
		esac
		[ $t = siw ] && [ -n "$unread" ] || break
		echo "NDK-INTEROP-DEFECT: $t $name: try $try: $res; the peer's first message stayed unread in the accepting socket (receive queue 0x$unread)"
		if [ $try = 3 ]; then
			res="$res; siw left the first message unread in 3 of 3 tries"
			break
		fi
		try=$((try + 1))
	done
	echo "NDK-INTEROP: not ok $t $name (user-space exit $rc; $res)"
	sed 's/^/NDK-INTEROP-LOG: /' /tmp/interop.log /tmp/interop.state
	trace_dump "the trace of interop case $name over $t"
}

# ndk against rdma-core's own programs, which ndk's authors did not
# write: rping's RDMA read/write ping loop and rdma_server/rdma_client's
# send/receive, each with ndk on either side.
interop() {
	interop_case $1 rping-user-client-ndk-server interop_ndk_server \
		"count=10 size=64" 7174 rping -c -a 10.0.2.15 -p 7174 -C 10 \
		-S 64 -V
	interop_case $1 rping-ndk-client-user-server interop_ndk_client \
		"count=10 size=64" 7174 rping -s -a 10.0.2.15 -p 7174 -C 10 \
		-S 64 -V
	interop_case $1 rdmacm-user-client-ndk-server interop_ndk_server \
		proto=rdmacm 7471 rdma_client -s 10.0.2.15 -p 7471
	interop_case $1 rdmacm-ndk-client-user-server interop_ndk_client \
		proto=rdmacm 7471 rdma_server -p 7471
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

# Linux's own host (nvme-cli, nvme-rdma) against the same target: if it
# fails, the target's setup is broken, not ndk. A MiB written with
# O_DIRECT, read back, and found on the target's device.
nvmeof_linux_host() {
	dd if=/dev/urandom of=/tmp/nvme.pat bs=64k count=16 2>/dev/null
	linux_host_connect || { res="nvme connect failed"; return 1; }
	res=
	if ! dd if=/tmp/nvme.pat of=/dev/nvme0n1 bs=64k oflag=direct 2>>/tmp/nvme.log; then
		res="write failed"
	elif ! dd if=/dev/nvme0n1 of=/tmp/nvme.back bs=64k count=16 iflag=direct 2>>/tmp/nvme.log ||
	     ! cmp -s /tmp/nvme.pat /tmp/nvme.back; then
		res="read back differs"
	elif ! dd if=/dev/nullb0 of=/tmp/nvme.tgt bs=64k count=16 iflag=direct 2>>/tmp/nvme.log ||
	     ! cmp -s /tmp/nvme.pat /tmp/nvme.tgt; then
		res="the target's device differs"
	fi
	nvme disconnect -n $NQN >>/tmp/nvme.log 2>&1 || res="${res:-nvme disconnect failed}"
	[ -z "$res" ]
}

# ndk_nvmeof with module arguments "$@" after the address: insmod's
# status in rc, the sample's log in /tmp/nvme.log.
nvmeof_ndk() {
	dmesg -c >/dev/null
	insmod /ndk/ndk_nvmeof.ko traddr=10.0.2.15 "$@"
	rc=$?
	dmesg | grep ndk_nvmeof >/tmp/nvme.log
}

# Whether nvmeof_ndk's run passed: insmod succeeded, the sample logged
# PASS and no line at error level, and it unloaded; res says why not.
nvmeof_ndk_passed() {
	[ $rc = 0 ] && grep -q 'ndk_nvmeof: PASS' /tmp/nvme.log &&
		rmmod ndk_nvmeof || { res=$(nvmeof_no_pass $rc); return 1; }
	err=$(nvmeof_error_line)
	[ -z "$err" ] || { res="error line in a run that passed: $err"; return 1; }
}

# Case $2 over transport $1: ok when "$3" (a command) succeeds and no ndk
# object is left open afterwards.
nvmeof_case() {
	t=$1 name=$2
	shift 2
	res=
	if "$@"; then
		left=$(open_objects)
		if [ -z "$left" ]; then
			echo "NDK-INTEROP: ok $t $name"
			return
		fi
		res="ndk objects left open: $left"
	fi
	echo "NDK-INTEROP: not ok $t $name (${res:-see the log})"
	sed 's/^/NDK-INTEROP-LOG: /' /tmp/nvme.log
}

# The sample's full run: PASS, and each queue's marker on the target.
nvmeof_ndk_host() {
	# What the queues' regions hold before the run (three at 4 MiB
	# each, after the first 4 MiB), into the device's page cache: a
	# marker check that read through that cache would fail, not pass on
	# a cache that happened to be cold.
	dd if=/dev/nullb0 of=/dev/null bs=1M count=16 2>/dev/null
	nvmeof_ndk subnqn=$NQN ios=$nvmeof_ios
	nvmeof_ndk_passed || return 1
	# Two queues of $nvmeof_ios commands at least, each checked byte for
	# byte.
	n=$(sed -n 's/.*ndk_nvmeof: \([0-9]*\) commands, .*/\1/p' /tmp/nvme.log)
	[ "${n:-0}" -ge $((2 * nvmeof_ios)) ] ||
		{ res="${n:-no} commands, not $((2 * nvmeof_ios))"; return 1; }
	grep -o 'marker q[0-9]* at byte [0-9]*: .*' /tmp/nvme.log >/tmp/nvme.markers
	nvmet_markers /tmp/nvme.markers
}

# A subsystem the target does not have: refused at Fabrics Connect.
nvmeof_wrong_nqn() {
	nvmeof_ndk subnqn=nqn.2026-11.io.ndk:nothing
	[ $rc != 0 ] &&
		grep -q 'the target has no subsystem nqn.2026-11.io.ndk:nothing' /tmp/nvme.log ||
		{ res="insmod $rc, no 'no subsystem' message"; return 1; }
}

# A port nothing listens on: the connection itself is refused.
nvmeof_refused() {
	nvmeof_ndk subnqn=$NQN trsvcid=4421
	[ $rc != 0 ] && grep -q 'refused the connection' /tmp/nvme.log ||
		{ res="insmod $rc, no 'refused' message"; return 1; }
}

# The target goes away in the middle of I/O: its port drops the
# subsystem, which ends the controller's connections. Every command in
# flight must end once, with an error, and the module unload. Over siw
# the writes are of 4 KiB at most, carried in the command capsule, so
# that the target reads no data from the host: an RDMA Read of siw's
# still unanswered when the target disconnects is never completed, and
# Linux's target then waits for it for good (deviations.rst).
nvmeof_target_gone() {
	dmesg -c >/dev/null
	max=
	[ "$t" != siw ] || max=max_size=4096
	insmod /ndk/ndk_nvmeof.ko traddr=10.0.2.15 subnqn=$NQN soak=1 $max &
	pid=$!
	if ! wait_log 'ndk_nvmeof: (I/O running|FAIL)' 120; then
		res="no I/O within 120 s"
	fi
	rm $NVMET/ports/1/subsystems/$NQN
	wait_within $pid 120 ||
		res="the sample did not finish within 120 s of the port's removal"
	wait $pid
	rc=$?
	dmesg | grep ndk_nvmeof >/tmp/nvme.log
	[ -z "$res" ] && [ $rc = 0 ] &&
		grep -q 'ndk_nvmeof: PASS' /tmp/nvme.log && rmmod ndk_nvmeof ||
		{ res=${res:-$(nvmeof_no_pass $rc)}; return 1; }
}

# A target that answers every command, but too slowly for a whole queue
# of them to end within the host's timeout: namespace 2 on a null_blk
# device that takes one command at a time and 50 ms for each, so a queue
# of 32 ends after 1.6 s, with an answer every 50 ms. ndk_nvmeof, one
# queue of 512-byte commands whose timeout is 1 s from its last answer,
# must pass. The device is nullb1 by its index (6.1) and by its
# configfs name (later series).
NULLB_SLOW=/sys/kernel/config/nullb/nullb1
nvmeof_slow_target() {
	ns=$NVMET/subsystems/$NQN/namespaces/2
	if mkdir $NULLB_SLOW && echo 64 >$NULLB_SLOW/size &&
	   echo 1 >$NULLB_SLOW/memory_backed && echo 1 >$NULLB_SLOW/index &&
	   echo 1 >$NULLB_SLOW/hw_queue_depth && echo 2 >$NULLB_SLOW/irqmode &&
	   echo 50000000 >$NULLB_SLOW/completion_nsec &&
	   echo 1 >$NULLB_SLOW/power && mkdir $ns &&
	   echo /dev/nullb1 >$ns/device_path && echo 1 >$ns/enable; then
		nvmeof_ndk subnqn=$NQN nsid=2 queues=1 ios=1 max_size=512 \
			io_timeout_ms=1000
		nvmeof_ndk_passed
	else
		res="the slow namespace could not be set up"
	fi
	[ -d $ns ] && { echo 0 >$ns/enable; rmdir $ns; }
	[ -d $NULLB_SLOW ] && { echo 0 >$NULLB_SLOW/power; rmdir $NULLB_SLOW; }
	[ -z "$res" ]
}

# NVMe over Fabrics against Linux's own target on eth0's address (see
# nvmet_up), with Linux's host, nvme-rdma, beside ndk_nvmeof. The first
# 4 MiB of the namespace are Linux's host's, the rest ndk_nvmeof's.
nvmeof() {
	if ! nvmet_up 10.0.2.15 || ! modprobe nvme-rdma; then
		echo "NDK-CHECK: NVMe over Fabrics could not be set up over $1"
		return
	fi
	nvmeof_case $1 nvmeof-linux-host nvmeof_linux_host
	nvmeof_case $1 nvmeof-ndk-host nvmeof_ndk_host
	nvmeof_case $1 nvmeof-wrong-nqn nvmeof_wrong_nqn
	nvmeof_case $1 nvmeof-refused nvmeof_refused
	nvmeof_case $1 nvmeof-slow-target nvmeof_slow_target
	nvmeof_case $1 nvmeof-target-gone nvmeof_target_gone
	nvmet_down && return
	echo "NDK-CHECK: Linux's NVMe over Fabrics target did not come down within 60 s over $1: failed"
	wedged=1
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

# make coverage (ndk_check.coverage=1): ndk's gcov counters, which the
# kernel keeps after rmmod (gcov_persist), out through the console, the
# VM's only way out: a gzipped tar in base64 between marker lines. debugfs
# gives these files a size of 0, which tar would take, hence the copies;
# kernel messages are held back so that none breaks into the data.
coverage_dump() {
	[ "$(arg coverage)" = 1 ] || return 0
	g=/sys/kernel/debug/gcov
	mkdir -p /tmp/gcov
	(cd $g && find . -name '*.gcda') | while read -r f; do
		mkdir -p /tmp/gcov/${f%/*}
		cat $g/$f >/tmp/gcov/$f
	done
	level=$(cut -f1 /proc/sys/kernel/printk)
	echo 1 >/proc/sys/kernel/printk
	echo "NDK-GCOV: begin"
	tar -C /tmp/gcov -cf - . | gzip | base64
	echo "NDK-GCOV: end"
	echo $level >/proc/sys/kernel/printk
}

# One full run per transport: Soft-RoCE (RoCEv2), then Soft-iWARP. Each
# device alone sits on eth0 so that addresses resolve to it. ndk stays
# loaded across both, so the switch also exercises device removal and
# arrival under a loaded provider.
kept= wedged=
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
	nvmeof $t
	# A target that keeps the device would stall the suites' removal of it.
	[ -z "$wedged" ] || break
	# make coverage: every event of ndk traced over siw and counted by
	# perf over rxe (tpcount.c), so that both sides of the events' code
	# run.
	tp=
	if [ "$(arg coverage)" = 1 ]; then
		v=0
		[ $t = siw ] && v=1
		echo $v >$T/events/ndk/enable
		echo 1 >$T/events/ndk/ndk_cm_event/enable
		# Its words would break into the suites' lines on the
		# console: they go there after the suites.
		if [ $t = rxe ]; then
			/ndk/tpcount $(cat $T/events/ndk/*/id) >/tmp/tpcount.log 2>&1 &
			tp=$!
		fi
	fi
	trace_begin
	echo "NDK-CHECK: tests begin $t"
	insmod /ndk/ndk_kunit.ko $kunit_args ||
		echo "NDK-CHECK: insmod ndk_kunit failed"
	# Objects a failed case left open still call back into the test
	# module: unloaded, a later step would run freed text.
	left=$(open_objects)
	if [ -n "$tp" ]; then
		kill $tp
		wait $tp
	fi
	if [ -n "$left" ]; then
		echo "NDK-CHECK: tests end $t"
		echo "NDK-CHECK: ndk objects left open after the suites over $t ($left): ndk_kunit kept loaded, the run stops: failed"
		trace_end $t
		kept=1
		break
	fi
	rmmod ndk_kunit || echo "NDK-CHECK: rmmod ndk_kunit failed"
	echo "NDK-CHECK: tests end $t"
	[ -z "$tp" ] || sed 's/^/NDK-COVERAGE: /' /tmp/tpcount.log
	trace_end $t
	[ -e /sys/class/infiniband/${t}0 ] || continue
	delete_device $t 30
	case $? in
	1) echo "NDK-CHECK: $t link delete failed" ;;
	2) echo "NDK-CHECK: $t link delete hung: failed"; break ;;
	esac
done
if [ -z "$kept" ]; then
	rmmod ndk_wdk || echo "NDK-CHECK: rmmod ndk_wdk failed"
	rmmod ndk || echo "NDK-CHECK: rmmod ndk failed"
fi

coverage_dump
guest_finish "NDK-CHECK: done"
