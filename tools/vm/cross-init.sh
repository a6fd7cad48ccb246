#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the two VMs of `make check-cross`, joined by a QEMU socket
# network on eth0: the server VM (192.168.77.1) and the client VM
# (192.168.77.2) run the same cases in the same order over Soft-RoCE and
# then Soft-iWARP, meeting at a barrier before each client starts, and
# each reports every case as "NDK-CROSS: ok|not ok <transport> <case>".
. /ndk/guest.sh
guest_setup
# kmod's, which cross.sh packs.
guest_kmod

arg() { tr ' ' '\n' </proc/cmdline | sed -n "s/^ndk_cross\.$1=//p"; }
# A case may take sync_limit seconds on the far side when it fails by its
# timeouts; the RDMA cases use port 7174.
pair_setup ndk_cross 150
transports=$(arg transports | tr , ' ')
[ -n "$transports" ] || transports="rxe siw"
nvmeof_ios=$(nvmeof_ios "$(arg thorough)" cross)

error() { echo "NDK-CROSS: error: $*"; }
echo "NDK-CROSS: setup $role"
pair_net
echo 240 >/proc/sys/kernel/hung_task_timeout_secs

# Each case clears the kernel log before wait_log().

# Report case $2 over transport $1 with this VM's outcome $3 ("ok" or a
# reason), and the kernel log of the case when it failed.
report() {
	if [ "$3" = ok ]; then
		echo "NDK-CROSS: ok $1 $2"
		return
	fi
	echo "NDK-CROSS: not ok $1 $2 ($role: $3)"
	dmesg | grep 'ndk_rping' | sed 's/^/NDK-CROSS-LOG: /'
	[ -s /tmp/prog.log ] && sed 's/^/NDK-CROSS-LOG: /' /tmp/prog.log
}

# Start case $2 over transport $1 with a clean log; once the peer is
# lost, report the case without running it.
case_begin() {
	dmesg -c >/dev/null
	: >/tmp/prog.log
	[ -z "$peer_lost" ] && return 0
	report $1 $2 "peer lost"
	return 1
}

# ndk_rping's result line, "ok" for PASS.
ndk_outcome() {
	if ! wait_log 'ndk_rping: .*(PASS|FAIL)' "$1"; then
		echo "ndk_rping reported nothing in $1 s"
		return
	fi
	res=$(dmesg | grep -Eo 'ndk_rping: [a-z]+ [a-z]+: (PASS|FAIL).*')
	case "$res" in
	*PASS*) echo ok ;;
	*) echo "$res" ;;
	esac
}

# Delete the device of transport $1 (see delete_device); only a hung
# deletion stops the caller.
remove_device() {
	delete_device $1 60
	case $? in
	1) error "$1 link delete failed" ;;
	2) error "$1 link delete hung"; return 1 ;;
	esac
	return 0
}

# ndk_rping on both VMs (proto=ndk); $3 and $4 are the hangup of the
# server and of the client. "removal" makes that VM remove its device
# once the data exchange is done.
case_ndk() {
	t=$1 name=$2 hangup=$4 mode=client args="addr=$server_ip src=$client_ip"
	if [ "$role" = server ]; then
		hangup=$3 mode=server args="addr=$server_ip"
	fi
	if [ $mode = client ] && ! barrier $t-$name; then
		out="peer lost"
		return
	fi
	insmod /ndk/ndk_rping.ko proto=ndk mode=$mode hangup=$hangup \
		count=10 size=200 $args || error "insmod ndk_rping failed"
	if [ $mode = server ]; then
		wait_log 'ndk_rping: .*(listening|FAIL)' 30
		barrier $t-$name
	fi
	if [ $hangup = removal ] &&
	   wait_log "ndk_rping: .*(removal|FAIL)" 90 &&
	   remove_device $t; then
		rdma link add ${t}0 type $t netdev eth0 ||
			error "$t link add failed"
	fi
	out=$(ndk_outcome 90)
	rmmod ndk_rping || error "rmmod ndk_rping failed"
}

# rdma-core's rping client on the client VM against ndk_rping's server.
case_rping_user_client() {
	t=$1 name=$2
	if [ "$role" = server ]; then
		insmod /ndk/ndk_rping.ko mode=server addr=$server_ip \
			count=10 size=64 || error "insmod ndk_rping failed"
		wait_log 'ndk_rping: .*(listening|FAIL)' 30
		barrier $t-$name
		out=$(ndk_outcome 90)
		rmmod ndk_rping || error "rmmod ndk_rping failed"
	elif barrier $t-$name; then
		timeout 60 rping -c -a $server_ip -p 7174 -C 10 -S 64 -V \
			>/tmp/prog.log 2>&1
		rc=$?
		out=ok
		[ $rc = 0 ] || out="rping -c exited with $rc"
	else
		out="peer lost"
	fi
}

# ndk_rping's client on the client VM against rdma-core's rping server.
case_rping_user_server() {
	t=$1 name=$2
	if [ "$role" = server ]; then
		timeout 90 rping -s -a $server_ip -p 7174 -C 10 -S 64 -V \
			>/tmp/prog.log 2>&1 &
		pid=$!
		# The client connects only once the server listens.
		i=0
		while ! rdma resource show cm_id | grep -q "LISTEN.*:7174 "; do
			[ $i -ge 100 ] && break
			sleep 0.1
			i=$((i + 1))
		done
		barrier $t-$name
		wait $pid
		rc=$?
		out=ok
		[ $rc = 0 ] || out="rping -s exited with $rc"
	elif barrier $t-$name; then
		insmod /ndk/ndk_rping.ko mode=client addr=$server_ip \
			src=$client_ip count=10 size=64 ||
			error "insmod ndk_rping failed"
		out=$(ndk_outcome 90)
		rmmod ndk_rping || error "rmmod ndk_rping failed"
	else
		out="peer lost"
	fi
}

# Case $2 over transport $1 on port 7174, run on both VMs by $3 with
# the arguments after shift 3; it sets out, this VM's outcome. Over siw
# the server watches its accepting socket (unread_watch()) and, after
# each try, hears the client's outcome (barrier) and tells it whether
# to run the case again (verdict): when either VM failed while siw left
# the first message unread, the try is reported as a device defect, as
# make check's interop cases do, and one of three tries must pass; the
# defect lines of a case that failed tell why.
cross_case() {
	t=$1 name=$2 run=$3
	shift 3
	case_begin $t $name || return
	try=1
	while :; do
		if [ $t = siw ] && [ "$role" = server ]; then
			touch /tmp/unread_watch.on
			unread_watch 7174 1 &
			watcher=$!
		fi
		$run $t $name "$@"
		[ $t = siw ] || break
		if [ "$role" = client ]; then
			echo "$out" >/tmp/try.out
			barrier $t-$name-$try /tmp/try.out && verdict || break
			[ "$verdict" = again ] || break
		else
			rm -f /tmp/unread_watch.on
			wait $watcher
			unread=$(cat /tmp/unread)
			barrier $t-$name-$try /tmp/try.out || break
			peer=$(cat /tmp/try.out)
			next=done
			if [ -n "$unread" ] && [ "$out$peer" != okok ]; then
				echo "NDK-CROSS-DEFECT: $t $name: try $try: server: $out; client: $peer; the first message stayed unread in the accepting socket (receive queue 0x$unread)"
				[ $try = 3 ] || next=again
			fi
			verdict $next || break
			[ $next = again ] || break
		fi
		try=$((try + 1))
		dmesg -c >/dev/null
		: >/tmp/prog.log
	done
	report $t $name "$out"
}

# ndk_nvmeof (samples/ndk_nvmeof) on the client VM against Linux's own
# NVMe over Fabrics target on the server VM (nvmet_up). The client sends
# its outcome and the markers it logged with the barrier after its run,
# and the server looks for them on its device. Both VMs watch their
# NVMe/RDMA sockets meanwhile (net_watch), and the server traces the
# target's commands: a failure's log shows what sat in the sockets and
# which commands the target took and never answered.
case_nvmeof() {
	t=$1 name=$2 res=
	case_begin $t $name || return
	touch /tmp/net_watch.on
	net_watch &
	wire_trace_on || error "wire trace not on"
	if [ "$role" = server ]; then
		up=1
		if ! nvmet_up $server_ip; then
			up='' res="the target could not be set up"
		fi
		[ -z "$up" ] || nvmet_trace_on || error "nvmet trace not on"
		barrier $t-$name
		# The client's I/O takes minutes under TCG (two over siw on
		# 6.12, ten on 7.3): the wait lasts while the target's
		# device completes commands.
		busy=nullb_done
		if ! barrier $t-$name-markers /tmp/nvme.markers; then
			res=${res:-peer lost}
		elif ! head -n 1 /tmp/nvme.markers | grep -qx 'client ok'; then
			res=${res:-the client failed}
		elif [ -n "$up" ]; then
			sed -i 1d /tmp/nvme.markers
			nvmet_markers /tmp/nvme.markers
		fi
		busy=
		dmesg | grep nvmet >/tmp/prog.log
		[ -z "$res" ] || [ -z "$up" ] || nvmet_unanswered >>/tmp/prog.log
		[ -z "$up" ] || nvmet_down || error "Linux's NVMe over Fabrics target did not come down within 60 s"
	elif barrier $t-$name; then
		nvmeof_pair_run $t traddr=$server_ip subnqn=$NQN ios=$nvmeof_ios
		dmesg | grep ndk_nvmeof >/tmp/prog.log
		if [ $rc != 0 ] || ! grep -q 'ndk_nvmeof: PASS' /tmp/prog.log ||
		   ! rmmod ndk_nvmeof; then
			res=$(nvmeof_no_pass $rc)
		else
			left=$(open_objects)
			[ -z "$left" ] || res="ndk objects left open: $left"
			err=$(nvmeof_error_line)
			[ -n "$res" ] || [ -z "$err" ] ||
				res="error line in a run that passed: $err"
		fi
		{
			outcome=ok
			[ -z "$res" ] || outcome=failed
			echo "client $outcome"
			grep -o 'marker q[0-9]* at byte [0-9]*: .*' /tmp/prog.log
		} >/tmp/nvme.markers
		barrier $t-$name-markers /tmp/nvme.markers ||
			res=${res:-peer lost}
	else
		res="peer lost"
	fi
	net=$(net_watch_report)
	if [ -n "$res" ]; then
		{ cm_counts; rdma_counts; echo "$net"; wire_trace_report; } >>/tmp/prog.log
	else
		wire_trace_off
	fi
	report $t $name "${res:-ok}"
}

insmod /ndk/ndk.ko || error "insmod ndk failed"
for t in $transports; do
	mod=siw
	[ $t = rxe ] && mod=rdma_rxe
	modprobe $mod || error "modprobe $mod failed"
	rdma link add ${t}0 type $t netdev eth0 || error "$t link add failed"
	rdma link show
	echo "NDK-CROSS: begin $t"
	cross_case $t ndk-client-hangup case_ndk peer self
	cross_case $t ndk-server-hangup case_ndk self peer
	cross_case $t rping-user-client-ndk-server case_rping_user_client
	cross_case $t rping-ndk-client-user-server case_rping_user_server
	cross_case $t ndk-server-removal case_ndk removal peer
	cross_case $t ndk-client-removal case_ndk peer removal
	case_nvmeof $t nvmeof-ndk-host
	# Both VMs finished the transport before either device goes.
	barrier $t-end
	remove_device $t || break
	echo "NDK-CROSS: end $t"
done
rmmod ndk || error "rmmod ndk failed"

guest_finish "NDK-CROSS: done"
