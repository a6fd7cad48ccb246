#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install the Debian packages the build and the test VM need, if missing.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

pkgs=(build-essential libc6-dev make gcc flex bison bc libelf-dev libssl-dev dwarves kmod cpio xz-utils
	python3 qemu-system-x86 linux-source-6.1 busybox-static rdma-core
	ibverbs-providers ibverbs-utils rdmacm-utils iproute2 sparse)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
[ ${#missing[@]} = 0 ] && exit 0
log "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
