#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the two VMs of `make distro-check`, on Debian's own kernel: load
# that kernel's modules, create rxe0 on eth0, load the DKMS-built ndk.ko
# and ndk_wdk.ko, run ndk_selftest.ko in loopback, then against the other
# VM (the server VM, 192.168.77.1, with listen=1; the client VM,
# 192.168.77.2, with peer=). Where distro.sh packed Linux's NVMe over
# Fabrics target (/nvmet), the server VM then serves a null_blk device
# through it and the client VM runs ndk_nvmeof against it. After each run
# the kernel log of the run is printed raw, with its levels, as
# "DISTRO-KMSG <run>: " lines.
. /ndk/guest.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
# kmod's, not busybox's applets, which the shell would prefer.
insmod() { /ndk/bin/insmod "$@"; }
rmmod() { /ndk/bin/rmmod "$@"; }
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs tmp /tmp

pair_setup ndk_distro 300
error() { echo "DISTRO: error: $*"; }
echo "DISTRO: setup $role $(uname -r)"
echo 240 >/proc/sys/kernel/hung_task_timeout_secs

# The kernel's own modules, in dependency order (distro.sh).
for m in /mods/*.ko; do
	insmod "$m" || error "insmod $(basename "$m") failed"
done
pair_net
rdma link add rxe0 type rxe netdev eth0 || error "rxe link add failed"
# The port is usable once the link is: the NIC comes up asynchronously.
i=0
until rdma link show rxe0/1 | grep -q 'state ACTIVE'; do
	[ $i -ge 300 ] && error "rxe0 never became active" && break
	sleep 0.1
	i=$((i + 1))
done
rdma link show

# The kernel log since the last call, with levels, for the judge.
kmsg() {
	dmesg -r -c | sed "s/^/DISTRO-KMSG $1: /"
}

# A run that failed was unloaded by its failed insmod.
unload_selftest() {
	grep -q '^ndk_selftest ' /proc/modules || return 0
	rmmod ndk_selftest || error "rmmod ndk_selftest failed"
}

kmsg boot >/dev/null
for m in ndk ndk_wdk; do
	insmod /ndk/$m.ko || error "insmod $m failed"
done

insmod /ndk/ndk_selftest.ko ifname=eth0
echo "DISTRO: run loopback rc=$?"
unload_selftest
kmsg loopback

if barrier pair; then
	if [ "$role" = server ]; then
		insmod /ndk/ndk_selftest.ko ifname=eth0 listen=1 wait_s=120 &
		pid=$!
		wait_log 'ndk_selftest: listening' 120 ||
			error "the passive self-test does not listen"
		barrier listening
		wait $pid
		echo "DISTRO: run pair-server rc=$?"
	else
		barrier listening
		insmod /ndk/ndk_selftest.ko ifname=eth0 peer=$server_ip
		echo "DISTRO: run pair-client rc=$?"
	fi
	unload_selftest
	kmsg pair
	barrier end
fi

# Debian's nvmet-rdma serves null_blk (guest.sh's nvmet_up) on the
# server VM's address; at barrier nvmeof it listens.
nvmeof_server() {
	for m in /nvmet/*.ko; do
		args=
		case $m in
		*-null_blk.ko) args="nr_devices=1 memory_backed=1 gb=1" ;;
		esac
		insmod "$m" $args || error "insmod $(basename "$m") failed"
	done
	mount -t configfs none /sys/kernel/config || error "mount configfs failed"
	nvmet_up $server_ip ||
		error "the NVMe over Fabrics target could not be set up"
	barrier nvmeof || return
	barrier markers /tmp/nvme.markers || return
	if nvmet_markers /tmp/nvme.markers; then
		echo "DISTRO: nvmeof markers ok $n"
	else
		echo "DISTRO: nvmeof markers not ok ($res)"
	fi
	nvmet_down || error "Linux's NVMe over Fabrics target did not come down within 60 s"
}

# ndk_nvmeof's full run against it; the markers it logged go to the
# server VM, which looks for them on its device.
nvmeof_client() {
	barrier nvmeof || return
	nvmeof_pair_run rxe traddr=$server_ip subnqn=$NQN
	echo "DISTRO: run nvmeof rc=$rc"
	dmesg | grep -o 'marker q[0-9]* at byte [0-9]*: .*' >/tmp/nvme.markers
	# It stays loaded only after a PASS.
	if grep -q '^ndk_nvmeof ' /proc/modules; then
		rmmod ndk_nvmeof || error "rmmod ndk_nvmeof failed"
	fi
	barrier markers /tmp/nvme.markers
}

if [ -d /nvmet ] && [ -z "$peer_lost" ]; then
	nvmeof_$role
	kmsg nvmeof
fi

rmmod ndk_wdk || error "rmmod ndk_wdk failed"
rmmod ndk || error "rmmod ndk failed"
delete_device rxe 60 || error "rxe link delete failed"
kmsg end
echo "DISTRO: tainted $(cat /proc/sys/kernel/tainted)"
echo "DISTRO: done"
reboot -f
