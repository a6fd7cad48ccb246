#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the demo VM: bring up Soft-RoCE, load ndk and the sample
# consumer, which runs its round trip while loading, then power off.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null

ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
modprobe rdma_rxe
rdma link add rxe0 type rxe netdev eth0
echo "NDK-DEMO: $(rdma link show)"
insmod /ndk/ndk.ko
insmod /ndk/ndk_demo.ko
rmmod ndk_demo
rmmod ndk
echo "NDK-DEMO: end"
reboot -f
