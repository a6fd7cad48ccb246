#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Shell helpers of the VMs' /init scripts (make check, check-cross,
# selftest-loop, stress, distro-check and demo), packed as /ndk/guest.sh
# by mkinitramfs.sh and distro.sh and sourced.

# kmod's insmod and rmmod, which the VM's packer added, in place of
# busybox's: busybox's insmod loads a module whose init failed a second
# time another way, so a failed run of a test module would be followed by
# a second run whose success the judge would take.
guest_kmod() {
	mkdir -p /ndk/bin
	ln -s "$(command -v kmod)" /ndk/bin/insmod
	ln -s "$(command -v kmod)" /ndk/bin/rmmod
	insmod() { /ndk/bin/insmod "$@"; }
	rmmod() { /ndk/bin/rmmod "$@"; }
}

# The filesystems every run needs, and what kmemleak reports of the boot
# cleared, so that the final scans report only what the run left. That
# scan and its clear go on in the background while the run starts (many
# seconds under TCG): a scan reports only objects allocated at least 5 s
# before it began, so none of the run's own is cleared. report_leaks
# waits for it.
guest_setup() {
	export PATH=/bin:/sbin:/usr/bin:/usr/sbin
	mount -t proc proc /proc
	mount -t sysfs sys /sys
	mount -t devtmpfs dev /dev 2>/dev/null
	mount -t debugfs debugfs /sys/kernel/debug
	mount -t tmpfs tmp /tmp
	guest_preempt
	[ -e /sys/kernel/debug/kmemleak ] || return 0
	{
		echo scan >/sys/kernel/debug/kmemleak
		echo clear >/sys/kernel/debug/kmemleak
	} &
	boot_scan=$!
}

# Switch to the preemption model a kernel booted without because of a
# boot hang (lib.sh's boot_quirks), and print the one in force.
guest_preempt() {
	model=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^ndk_preempt=//p')
	[ -z "$model" ] && return
	echo "$model" >/sys/kernel/debug/sched/preempt
	echo "preemption: $(cat /sys/kernel/debug/sched/preempt)"
}

# Wait up to $2 seconds for a kernel log line matching extended regular
# expression $1.
wait_log() {
	i=0
	while ! dmesg | grep -Eq "$1"; do
		[ $i -ge $(($2 * 10)) ] && return 1
		sleep 0.1
		i=$((i + 1))
	done
}

# The kernel stacks of the tasks blocked in D state, to show where a
# hang sits (the test kernels have no magic SysRq).
dump_blocked() {
	for d in /proc/[0-9]*; do
		grep -q '^State:.*(disk sleep)' $d/status 2>/dev/null || continue
		echo "NDK-BLOCKED: $(cat $d/comm) ${d#/proc/}"
		sed 's/^/NDK-BLOCKED:   /' $d/stack 2>/dev/null
	done
}

# Wait up to $2 seconds for process $1 to end. Returns 1, after showing
# the blocked tasks, if it still runs.
wait_within() {
	local i=0
	while kill -0 $1 2>/dev/null && [ $i -lt $(($2 * 5)) ]; do
		sleep 0.2
		i=$((i + 1))
	done
	kill -0 $1 2>/dev/null || return 0
	dump_blocked
	return 1
}

# Delete device $1 (rxe or siw) within $2 seconds: removal waits for
# every device reference, and one left behind would stall the VM until
# its timeout. Returns 0, 1 when the deletion failed, 2 when it hung.
delete_device() {
	rdma link delete ${1}0 &
	del=$!
	wait_within $del $2 || return 2
	wait $del || return 1
}

# Report what leaked so far and forget it, so that the next report holds
# only newer leaks. The KCSAN kernel has no kmemleak. kmemleak reports
# an object only when a scan finds it unreferenced and unchanged since
# the scan before, and it was more than 5 s old when that second scan
# began: the first scan starts at once and notes every object, the
# second starts 6 s after it, or when it ends if it took longer (6 to 7
# s under TCG).
report_leaks() {
	[ -e /sys/kernel/debug/kmemleak ] || return 0
	[ -z "${boot_scan:-}" ] || wait $boot_scan
	boot_scan=
	t0=$(cut -d ' ' -f 1 /proc/uptime)
	echo scan >/sys/kernel/debug/kmemleak
	sleep "$(awk -v t0="$t0" \
		'{ w = t0 + 6 - $1; printf "%.2f", (w > 0 ? w : 0) }' /proc/uptime)"
	echo scan >/sys/kernel/debug/kmemleak
	cat /sys/kernel/debug/kmemleak
	echo clear >/sys/kernel/debug/kmemleak
}

# Report leaks, print end marker $1 and power off.
guest_finish() {
	report_leaks
	echo "$1"
	reboot -f
}

# The two VMs of check-cross and distro-check (lib.sh's boot_pair): read
# this VM's role from the command line's $1.role and set role, server_ip,
# client_ip and me (this VM's address); barriers wait up to $2 seconds.
pair_setup() {
	role=$(tr ' ' '\n' </proc/cmdline | sed -n "s/^$1\.role=//p")
	server_ip=192.168.77.1
	client_ip=192.168.77.2
	me=$server_ip
	[ "$role" = client ] && me=$client_ip
	sync_limit=$2
	peer_lost=
}

# Give eth0, the wire between the two VMs, this VM's address, and jumbo
# frames: a sixth of the packets for siw's TCP and a quarter for
# Soft-RoCE (path MTU 4096), whose per-packet cost under TCG is what
# the NVMe over Fabrics case across the wire spends its time on.
pair_net() {
	ip link set lo up
	ip link set eth0 mtu 9000 up || error "no eth0"
	ip addr add $me/24 dev eth0
}

# Send file $3 to TCP port $2 of the other VM ($1), trying every half
# second for up to sync_limit seconds: it may not listen yet.
pair_send() {
	i=0
	until nc -w 2 $1 $2 <"$3" >/dev/null 2>&1; do
		[ $i -ge $((sync_limit * 2)) ] && return 1
		sleep 0.5
		i=$((i + 1))
	done
}

# What came to TCP port 7000 within sync_limit seconds. With busy set to
# a command, the wait goes on as long as that command's output changed
# within the last sync_limit seconds: the other VM's work that this VM
# can watch progress (a target's completed commands) may take many
# times the limit over a slow link, while a stall still ends the wait.
barrier_listen() {
	[ -n "${busy:-}" ] || { timeout $sync_limit nc -l -p 7000 </dev/null; return; }
	nc -l -p 7000 </dev/null >/tmp/barrier.in &
	lpid=$! still=0 last=$($busy)
	while kill -0 $lpid 2>/dev/null; do
		sleep 5
		now=$($busy)
		still=$((still + 5))
		[ "$now" = "$last" ] || still=0 last=$now
		[ $still -lt $sync_limit ] || kill $lpid 2>/dev/null
	done
	wait $lpid
	cat /tmp/barrier.in
}

# Meet the other VM at barrier $1 on TCP port 7000 of the wire: the
# server listens, the client connects and sends the barrier's name, which
# both must agree on. A VM that did not come within sync_limit seconds is
# lost for the rest of the run: every later barrier fails at once. With
# file $2, the client sends its lines after the name and the server
# writes what came after the name to its own $2: a result of the client
# for the server to check. The guest script defines error().
barrier() {
	[ -n "$peer_lost" ] && return 1
	got=
	if [ "$role" = server ]; then
		msg=$(barrier_listen)
		got=$(printf '%s\n' "$msg" | head -n 1)
		[ -z "$2" ] || printf '%s\n' "$msg" | tail -n +2 >"$2"
	else
		# From a file: nc stops at the server's end of the
		# connection, which can come before a pipe's writer wrote.
		{ echo "$1"; [ -z "$2" ] || cat "$2"; } >/tmp/barrier.msg
		pair_send $server_ip 7000 /tmp/barrier.msg && got=$1
	fi
	[ "$got" = "$1" ] && return 0
	error "barrier $1: the other VM did not come (got '$got')"
	peer_lost=1
	return 1
}

# The server's word $1 to the client, on TCP port 7001 of the wire, the
# way barrier() goes the other way: the client listens and sets verdict
# to what came, the server connects and sends $1. Fails, and the peer is
# lost, as barrier() does.
verdict() {
	[ -n "$peer_lost" ] && return 1
	if [ "$role" = client ]; then
		verdict=$(timeout $sync_limit nc -l -p 7001 </dev/null)
		[ -n "$verdict" ] && return 0
	else
		echo "$1" >/tmp/verdict.msg
		pair_send $client_ip 7001 /tmp/verdict.msg && return 0
	fi
	error "verdict $1: the other VM did not come"
	peer_lost=1
	return 1
}

# The ndk objects open on any device, as "open_qps 2 ..." from ndk's
# debugfs stats; empty when none is.
open_objects() {
	cat /sys/kernel/debug/ndk/*/stats 2>/dev/null |
		awk '/^open_/ && $2 > 0 { printf "%s%s %s", sep, $1, $2; sep = ", " }'
}

# Commands per queue of ndk_nvmeof's full run: after each queue's size
# rounds (512 B to 128 KiB), small ones up to the count, each checked
# byte for byte. In one VM (make check) the sample's 5000, so that both
# queues check 10 000 commands per transport. Across check-cross's wire
# ($2 = cross) 256, eight turns of the 32 entries after the size rounds,
# and 1000 when $1, the run's thorough argument, is 1 (make matrix): over
# siw there 5000 would take most of an hour (testing.rst's Times).
nvmeof_ios() {
	if [ "${2:-}" != cross ]; then
		echo 5000
	elif [ "$1" = 1 ]; then
		echo 1000
	else
		echo 256
	fi
}

# Linux's own NVMe over Fabrics target, nvmet-rdma, for ndk_nvmeof (make
# check and check-cross): a memory-backed null_blk device as namespace 1
# of subsystem $NQN on RDMA port 4420 of address $1, set up through
# configfs alone; once per transport, nvmet_down after each.
NQN=nqn.2026-11.io.ndk:check
NVMET=/sys/kernel/config/nvmet
nvmet_up() {
	[ -d $NVMET ] || {
		mount -t configfs none /sys/kernel/config
		modprobe null_blk nr_devices=1 memory_backed=1 gb=1 &&
			modprobe nvmet && modprobe nvmet-rdma
	} || return 1
	s=$NVMET/subsystems/$NQN p=$NVMET/ports/1 k=$NVMET/subsystems/$NQN-keep
	# A port disables when its last subsystem goes, and nvmet then
	# destroys its listener under nvmet_config_sem, which lockdep
	# reports against nvmet's own connect path (Linux 6.12): an empty
	# subsystem keeps the port up while its listener lives. The
	# listener goes with the device (the last transport's), and only
	# enabling the port again makes a new one: then there is none to
	# destroy.
	if [ -d $p ]; then
		rm $p/subsystems/$NQN-keep || return 1
	else
		mkdir $k $p &&
		echo rdma >$p/addr_trtype &&
		echo ipv4 >$p/addr_adrfam &&
		echo $1 >$p/addr_traddr &&
		echo 4420 >$p/addr_trsvcid || return 1
	fi
	ln -s $k $p/subsystems/$NQN-keep || return 1
	mkdir -p $s/namespaces/1 &&
	echo 1 >$s/attr_allow_any_host &&
	echo /dev/nullb0 >$s/namespaces/1/device_path &&
	echo 1 >$s/namespaces/1/enable &&
	ln -s $s $p/subsystems/$NQN || return 1
	i=0
	while ! rdma resource show cm_id | grep -q "LISTEN.*:4420 "; do
		[ $i -ge 300 ] && return 1
		sleep 0.1
		i=$((i + 1))
	done
}
# Disabling the namespace waits for every command the target still
# holds: one it never completes would stall the VM until its timeout.
# Within 60 s, or returns 2 after showing where it hangs.
nvmet_down() {
	(
		rm -f $NVMET/ports/1/subsystems/$NQN
		echo 0 >$NVMET/subsystems/$NQN/namespaces/1/enable
		rmdir $NVMET/subsystems/$NQN/namespaces/1 $NVMET/subsystems/$NQN
	) &
	down=$!
	if ! wait_within $down 60; then
		rdma resource show qp 2>&1 | sed 's/^/NDK-BLOCKED: /'
		return 2
	fi
	wait $down
}

# Trace every command nvmet_up's target takes and completes (nvmet's
# nvmet_req_init and nvmet_req_complete events) in a ring large enough
# for a whole NVMe over Fabrics case, for nvmet_unanswered(). Once nvmet
# is loaded.
NVMET_TRACE=/sys/kernel/tracing
nvmet_trace_on() {
	[ -d $NVMET_TRACE/events ] ||
		mount -t tracefs nodev $NVMET_TRACE || return 1
	echo 0 >$NVMET_TRACE/tracing_on
	echo 8192 >$NVMET_TRACE/buffer_size_kb
	echo >$NVMET_TRACE/trace
	for e in nvmet_req_init nvmet_req_complete; do
		echo 1 >$NVMET_TRACE/events/nvmet/$e/enable || return 1
	done
	echo 1 >$NVMET_TRACE/tracing_on
}

# The commands the target's device (nullb0) completed so far, reads and
# writes: barrier()'s measure of a target still at work (busy).
nullb_done() {
	awk '{ print $1 + $5 }' /sys/block/nullb0/stat 2>/dev/null
}

# What the target did with the commands of a stalled case: those of the
# I/O queues it took and never completed, from nvmet_trace_on()'s trace
# (at most 20, oldest first), how many it completed, the last events of
# the oldest one's queue, and the requests the namespace's device still
# has in flight (reads, writes).
nvmet_unanswered() {
	echo 0 >$NVMET_TRACE/tracing_on
	awk 'match($0, /qid=[0-9]+, cmdid=[0-9]+/) {
		k = substr($0, RSTART, RLENGTH)
		if (/nvmet_req_init:/) { open[k] = NR; line[NR] = $0 }
		else if (/nvmet_req_complete:/) { delete open[k]; done++ } }
	     END { for (k in open)
			if (k !~ /^qid=0,/) print open[k] "\t" line[open[k]]
		   print "0\tnvmet: " done + 0 " commands completed in the trace, " \
			 "these of the I/O queues not:" }' $NVMET_TRACE/trace |
		sort -n | head -n 21 | cut -f 2- | sed 's/^ *//' >/tmp/nvmet.open
	cat /tmp/nvmet.open
	# The last events of the oldest such command's queue, for what came
	# around it (a command answered in between, a Flush behind it).
	q=$(sed -n 's/.*nvmet_req_init: .* \(qid=[0-9]*\),.*/\1/p' \
		/tmp/nvmet.open | head -n 1)
	if [ -n "$q" ]; then
		echo "nvmet: the last events of $q:"
		grep "$q," $NVMET_TRACE/trace | tail -n 16 | sed 's/^ *//'
	fi
	echo "nullb0 in flight (reads writes): $(cat /sys/block/nullb0/inflight)"
	for e in nvmet_req_init nvmet_req_complete; do
		echo 0 >$NVMET_TRACE/events/nvmet/$e/enable
	done
}

# The wire of the NVMe/RDMA connections, for a failed case: every segment
# a socket of port 4420 took in (tcp_probe), in a trace instance of its
# own. Both VMs tracing tell a connection that went silent from one that
# kept moving too slowly for the host's timeout.
WIRE_TRACE=$NVMET_TRACE/instances/wire
wire_trace_on() {
	[ -d $NVMET_TRACE/events ] ||
		mount -t tracefs nodev $NVMET_TRACE || return 1
	mkdir -p $WIRE_TRACE || return 1
	echo 0 >$WIRE_TRACE/tracing_on
	echo 8192 >$WIRE_TRACE/buffer_size_kb
	echo >$WIRE_TRACE/trace
	echo 'sport == 4420 || dport == 4420' \
		>$WIRE_TRACE/events/tcp/tcp_probe/filter
	echo 1 >$WIRE_TRACE/events/tcp/tcp_probe/enable || return 1
	echo 1 >$WIRE_TRACE/tracing_on
}

# Per connection of wire_trace_on()'s trace: the bytes this VM took in
# over the trace and over its last 30 s, the time of the last segment
# and the longest silence between two segments.
wire_trace_report() {
	[ -d $WIRE_TRACE ] || return 0
	echo 0 >$WIRE_TRACE/tracing_on
	awk '/tcp_probe:/ {
		for (i = 1; i <= NF; i++)
			if ($i ~ /^[0-9]+\.[0-9]+:$/) t = $i + 0
		if (!match($0, /src=[^ ]* dest=[^ ]*/)) next
		k = substr($0, RSTART, RLENGTH)
		match($0, /data_len=[0-9]+/)
		n = substr($0, RSTART + 9, RLENGTH - 9) + 0
		if (k in last && t - last[k] > gap[k]) gap[k] = t - last[k]
		if (!(k in first)) first[k] = t
		last[k] = t; bytes[k] += n; end = t
		seg[k, ++ns[k]] = t; len[k, ns[k]] = n }
	END { for (k in last) {
		recent = 0
		for (i = ns[k]; i > 0 && seg[k, i] > end - 30; i--)
			recent += len[k, i]
		printf "wire: %s took in %d bytes from %.3f, %d in the " \
		       "last 30 s, last at %.3f, longest silence %.3f s\n",
		       k, bytes[k], first[k], recent, last[k], gap[k] } }' \
		$WIRE_TRACE/trace
	wire_trace_off
}

wire_trace_off() {
	[ -d $WIRE_TRACE ] || return 0
	echo 0 >$WIRE_TRACE/tracing_on
	echo 0 >$WIRE_TRACE/events/enable
	echo >$WIRE_TRACE/trace
}

# Linux's own host (nvme-rdma, loaded) connected to nvmet_up's target on
# 10.0.2.15 with nvme-cli, its output in /tmp/nvme.log; returns once
# /dev/nvme0n1 has its size (the block device appears first), or fails.
linux_host_connect() {
	nvme connect -t rdma -a 10.0.2.15 -s 4420 -n "$NQN" \
		--hostnqn=nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-0000000000aa \
		--hostid=00000000-0000-4000-8000-0000000000aa >/tmp/nvme.log 2>&1 ||
		return 1
	i=0
	while [ "$(cat /sys/block/nvme0n1/size 2>/dev/null || echo 0)" = 0 ] &&
	      [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# $2 bytes of the target's namespace from byte $1, read below nvmet
# (direct, so no page cache of earlier reads answers). A whole page:
# busybox's dd aligns only buffers of a page or more, and reads through
# the page cache, silently, when the kernel refuses a direct read into
# an unaligned one.
target_bytes() {
	dd if=/dev/nullb0 bs=4096 skip=$(($1 / 4096)) count=1 iflag=direct \
		2>/dev/null | tail -c +$(($1 % 4096 + 1)) | head -c "$2"
}

# The connection manager's message counts of every port of an IB or
# RoCE device, the ones not 0, one line per port: for a failure's log,
# which side sent or got a disconnect or a reject.
cm_counts() {
	for p in /sys/class/infiniband_cm/*/[0-9]*; do
		[ -d "$p" ] || continue
		line=
		for f in "$p"/cm_tx_msgs/* "$p"/cm_rx_msgs/*; do
			n=$(cat "$f" 2>/dev/null)
			[ "${n:-0}" = 0 ] && continue
			dir=${f%/*}
			line="$line ${dir##*/cm_}/${f##*/}=$n"
		done
		echo "cm counts of ${p#/sys/class/infiniband_cm/}:${line:- none}"
	done
}

# The RDMA devices' nonzero hardware counters (rxe's packets, retries and
# sequence errors; siw has none), UDP's counts and eth0's packets and
# drops, for a failure's log.
rdma_counts() {
	for d in /sys/class/infiniband/*/ports/*/hw_counters; do
		[ -d "$d" ] || continue
		line=
		for f in "$d"/*; do
			n=$(cat "$f" 2>/dev/null)
			[ "${n:-0}" = 0 ] && continue
			line="$line ${f##*/}=$n"
		done
		dev=${d#/sys/class/infiniband/}
		echo "hw counters of ${dev%%/*}:${line:- none}"
	done
	grep '^Udp:' /proc/net/snmp
	line=
	for f in rx_packets rx_dropped rx_errors tx_packets tx_dropped tx_errors; do
		line="$line $f=$(cat /sys/class/net/eth0/statistics/$f)"
	done
	echo "eth0:$line"
}

# The TCP sockets with port $1 at either end, as /proc/net/tcp lists them.
tcp_sockets() {
	grep -E ":$(printf %04X "$1") " /proc/net/tcp
}

# The receive queue (hex, as /proc/net/tcp gives it) of the connection
# accepted on local port $1: bytes that came in and that nobody has read.
# Empty while no such connection is ESTABLISHED; rxe has none (UDP).
accepted_unread() {
	awk -v port=":$(printf %04X "$1")" '$4 == "01" &&
		substr($2, length($2) - 4) == port {
			split($5, q, ":"); print q[2] }' /proc/net/tcp
}

# Whether the connection's QPs are connected: at least $1 RC QPs (2 when
# both ends are in this VM), all in RTS. 6.1's siw reports no QP's state
# (siw_query_qp() leaves it out, so every QP shows RESET): there ndk's
# own view of its connection stands in.
qps_connected() {
	case $(rdma resource show qp | awk -v min="$1" '/ type RC / { n++
			if (/ state RTS /) r++
			if (/ state RESET /) z++ }
		END { print n < min ? "no" : r == n ? "rts" : z == n ? "unknown" : "no" }') in
	rts) return 0 ;;
	unknown) grep -q ' ESTABLISHED ' /sys/kernel/debug/ndk/*/connections ;;
	*) return 1 ;;
	esac
}

# While file /tmp/unread_watch.on exists, look every second at the
# connection accepted on local port $1, whose QPs number $2 in this VM
# (qps_connected()): when its socket held the same unread bytes for 3 s
# while the QPs were connected, write them to /tmp/unread. That is siw's
# unread first message (deviations.rst): nothing else leaves them there
# that long. Start it in the background; remove the file to stop it.
unread_watch() {
	: >/tmp/unread
	last='' same=0 n=0
	# A look every second, an end within 0.2 s of the case's.
	while [ -e /tmp/unread_watch.on ]; do
		sleep 0.2
		n=$((n + 1))
		[ $((n % 5)) = 0 ] || continue
		q=$(accepted_unread "$1")
		if [ -n "$q" ] && [ "$q" = "$last" ] &&
		   [ "$q" != 00000000 ]; then
			same=$((same + 1))
		else
			same=0
		fi
		last=$q
		[ $same -ge 3 ] && qps_connected "$2" && echo "$q" >/tmp/unread
	done
}

# While file /tmp/net_watch.on exists, append to /tmp/net_watch.log every
# 5 s the TCP sockets of NVMe/RDMA's port 4420 (iWARP's streams; columns
# tx_queue:rx_queue tell bytes not yet acked and not yet read) and the
# TCP counters: where a stalled command sits when an NVMe over Fabrics
# case fails. Start it in the background; remove the file to stop it.
net_watch() {
	: >/tmp/net_watch.log
	while [ -e /tmp/net_watch.on ]; do
		{
			echo "net at $(cut -d ' ' -f 1 /proc/uptime) s:"
			tcp_sockets 4420
			grep '^Tcp:' /proc/net/snmp | tail -n 1
			rdma resource show qp 2>/dev/null | grep -v ' lqpn 1 '
		} >>/tmp/net_watch.log
		sleep 5
	done
}

# Stop net_watch and print its snapshots in which some socket had bytes
# queued (unacked or unread), then its last four (the QPs' PSNs there
# tell a QP whose packets stopped from one whose results went unseen),
# at most 80 lines.
net_watch_report() {
	rm -f /tmp/net_watch.on
	awk '/^net at/ { n++ }
	     { snap[n] = snap[n] $0 "\n" }
	     $5 ~ /:/ && $5 != "00000000:00000000" { busy[n] = 1 }
	     END { for (i = 1; i <= n; i++)
			if (i > n - 4) printf "last %s", snap[i]
			else if (busy[i]) printf "%s", snap[i] }' \
		/tmp/net_watch.log 2>/dev/null | tail -n 80
}

# The first line ndk_nvmeof logged at error level since the kernel's log
# was last cleared, without its prefix; empty when there is none. A run
# that passed, its shutdown included, logs none.
nvmeof_error_line() {
	line=$(dmesg -r | grep -m 1 '^<[0-3]>.*ndk_nvmeof: ')
	[ -z "$line" ] || echo "${line#*ndk_nvmeof: }"
}

# ndk_nvmeof's run across a VM pair's wire over transport $1, with
# module arguments "${@:2}"; insmod's status in rc. Over rxe the host's
# QPs wait 4.3 s for an ACK (ndk.ko's ack_timeout 20) during the run:
# two TCG guests on two host cores can leave one unsent past rdma_cm's
# 0.5 s, and rxe then sends again and runs the host's fast registrations
# a second time, which fails the QP (deviations.rst).
# The host asks for a Keep Alive timeout of 30 s, the time it allows a
# queue without an answer (io_timeout_ms), instead of 5: the two busy
# guests, their link full of 128 KiB transfers, answer a Keep Alive late
# and run the host's Keep Alive work seconds late. Measured: over rxe
# round trips of up to 6.0 s (one sent again after 4.3 s) and two Keep
# Alives 7.8 s apart with 5 s (nvmet gave the controller up) and 12.5 s
# apart with 15 s; over siw on 7.3 a round trip of 14.5 s.
nvmeof_pair_run() {
	[ "$1" != rxe ] || echo 20 >/sys/module/ndk/parameters/ack_timeout
	shift
	insmod /ndk/ndk_nvmeof.ko "$@" kato_ms=30000
	rc=$?
	echo 0 >/sys/module/ndk/parameters/ack_timeout
}

# Why an ndk_nvmeof run whose insmod returned $1 did not pass: the
# status and, when there is one, the first error line, so a summary that
# shows no log still says what went wrong.
nvmeof_no_pass() {
	err=$(nvmeof_error_line)
	echo "insmod $1, no PASS${err:+: $err}"
}

# Whether the markers of file $1, ndk_nvmeof's "marker qN at byte B: TEXT"
# lines, one per I/O queue (2), are on the target's device; res says why
# not.
nvmet_markers() {
	n=0
	while read -r _ q _ _ byte text; do
		n=$((n + 1))
		byte=${byte%:}
		got=$(target_bytes "$byte" ${#text})
		[ "$got" = "$text" ] || {
			res="$q's marker at byte $byte is '$got' on the target, not '$text'"
			return 1
		}
	done <"$1"
	[ $n -ge 2 ] || { res="$n markers logged, not 2"; return 1; }
}
