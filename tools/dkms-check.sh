#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make dkms-check`: the DKMS packaging on Debian's distribution headers of
# the series, without booting anything. In the Debian root of the release
# (NDK_DISTRO, as `make distro-check` uses it; lib.sh's distro_root), apt
# installs the headers and the ndk-dkms package of `make deb`, whose DKMS
# must build exactly ndk.ko, ndk_wdk.ko, ndk_selftest.ko and ndk_nvmeof.ko,
# warning-free, and install them (root_dkms_install). A consumer module (samples/ndk_demo,
# on its own) must then build against the installed package: its headers
# in /usr/src and the Module.symvers DKMS keeps. Purging the package must
# leave nothing behind. The host's DKMS, /usr/src and /lib/modules are
# never touched. Logs in build/dkms/.
#
# Environment: NDK_KERNEL (6.1), NDK_DISTRO (as distro-check), NDK_CACHE_DIR.
set -euo pipefail
. "$(dirname "$0")/vm/lib.sh"

distro_select
cd "$NDK_TOP"
out=$NDK_TOP/build/dkms
rm -rf "$out"
mkdir -p "$out"
deb=$("$NDK_TOP/tools/deb.sh")

# One run at a time uses a root (another clone, another series).
mkdir -p "$NDK_CACHE_DIR"
exec 8>"$NDK_DISTRO_ROOT.lock"
flock 8
distro_root
release=$(distro_root_headers)
[ -n "$release" ] || die "cannot tell the release of $NDK_DISTRO_KHDR"
trap 'root_dkms_purge "$out"' EXIT
root_dkms_install "$deb" "$release" "$out"
log "installed for $release: $(cd "$out/ndk" && echo *)"

root_dkms_consumer "$release" "$out"
root_dkms_purge "$out"
trap - EXIT
log "DKMS packaging works"
