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

# The filesystems every run needs, and a log of the boot's own leaks
# forgotten, so that the final scan reports only what ndk left.
guest_setup() {
	export PATH=/bin:/sbin:/usr/bin:/usr/sbin
	mount -t proc proc /proc
	mount -t sysfs sys /sys
	mount -t devtmpfs dev /dev 2>/dev/null
	mount -t debugfs debugfs /sys/kernel/debug
	mount -t tmpfs tmp /tmp
	guest_preempt
	[ -e /sys/kernel/debug/kmemleak ] || return 0
	echo scan >/sys/kernel/debug/kmemleak
	echo clear >/sys/kernel/debug/kmemleak
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

# Delete device $1 (rxe or siw) within $2 seconds: removal waits for
# every device reference, and one left behind would stall the VM until
# its timeout. Returns 0, 1 when the deletion failed, 2 when it hung.
delete_device() {
	rdma link delete ${1}0 &
	del=$!
	i=0
	while kill -0 $del 2>/dev/null && [ $i -lt $2 ]; do
		sleep 1
		i=$((i + 1))
	done
	if kill -0 $del 2>/dev/null; then
		dump_blocked
		return 2
	fi
	wait $del || return 1
}

# Report what leaked so far and forget it, so that the next report holds
# only newer leaks. kmemleak reports objects only once they are older
# than 5 s. The KCSAN kernel has no kmemleak.
report_leaks() {
	[ -e /sys/kernel/debug/kmemleak ] || return 0
	sleep 6
	echo scan >/sys/kernel/debug/kmemleak
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

# Give eth0, the wire between the two VMs, this VM's address.
pair_net() {
	ip link set lo up
	ip link set eth0 up || error "no eth0"
	ip addr add $me/24 dev eth0
}

# Meet the other VM at barrier $1 on TCP port 7000 of the wire: the
# server listens, the client connects and sends the barrier's name, which
# both must agree on. A VM that did not come within sync_limit seconds is
# lost for the rest of the run: every later barrier fails at once. The
# guest script defines error().
barrier() {
	[ -n "$peer_lost" ] && return 1
	got=
	if [ "$role" = server ]; then
		got=$(timeout $sync_limit nc -l -p 7000 </dev/null)
	else
		# From a file: nc stops at the server's end of the
		# connection, which can come before a pipe's writer wrote.
		echo "$1" >/tmp/barrier.msg
		i=0
		until nc -w 2 $server_ip 7000 </tmp/barrier.msg >/dev/null 2>&1; do
			[ $i -ge $((sync_limit * 2)) ] && break
			sleep 0.5
			i=$((i + 1))
		done
		[ $i -lt $((sync_limit * 2)) ] && got=$1
	fi
	[ "$got" = "$1" ] && return 0
	error "barrier $1: the other VM did not come (got '$got')"
	peer_lost=1
	return 1
}
