#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install the Debian packages the build and the test VM need, if missing.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

pkgs=(build-essential libc6-dev make gcc flex bison bc libelf-dev libssl-dev dwarves kmod cpio xz-utils
	python3 qemu-system-x86 busybox-static rdma-core
	ibverbs-providers ibverbs-utils rdmacm-utils iproute2 sparse nvme-cli)
install_missing "${pkgs[@]}"
fetch_ksrc
