#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Pack the test VM's initramfs: busybox, the host's rdma/rdma-core tools with
# their libraries and user providers, the kernel's modules, ndk's modules and
# tools/ndkstat.
# Usage: mkinitramfs.sh <kernel-tree> <output.cpio.gz> <init-script> <ko>...
# NDK_INITRAMFS_ELF: further host programs to pack, with their libraries.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ktree=$1 out=$2 init=$3
shift 3
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,run,root,ndk,lib64,usr/lib}
cp /bin/busybox "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list); do
	[ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done

# Copy a host binary or library and everything it links against.
copy_elf() {
	local f dep
	for f in "$@"; do
		[ -e "$f" ] || continue
		mkdir -p "$root$(dirname "$f")"
		cp -L "$f" "$root$f"
		for dep in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*'); do
			[ -e "$root$dep" ] && continue
			mkdir -p "$root$(dirname "$dep")"
			cp -L "$dep" "$root$dep"
		done
	done
}

copy_elf /usr/bin/rdma /sbin/rdma /usr/bin/rping /usr/bin/ibv_devices \
	/usr/bin/ibv_devinfo /usr/bin/rdma_server /usr/bin/rdma_client \
	/usr/lib/x86_64-linux-gnu/libgcc_s.so.1
# Unquoted on purpose: a list of paths.
copy_elf ${NDK_INITRAMFS_ELF:-}
for p in rxe siw; do
	copy_elf /usr/lib/x86_64-linux-gnu/libibverbs/lib$p-rdmav*.so
	mkdir -p "$root/etc/libibverbs.d"
	cp /etc/libibverbs.d/$p.driver "$root/etc/libibverbs.d/" 2>/dev/null || true
done
# rdma(8) lives in /sbin on some hosts; keep one name that the init uses.
[ -e "$root/usr/bin/rdma" ] || [ ! -e "$root/sbin/rdma" ] ||
	ln -s /sbin/rdma "$root/usr/bin/rdma"

cp -a "$ktree/modroot/lib" "$root/"
cp "$@" "$root/ndk/"
# Helpers the /init scripts source.
cp "$(dirname "$0")/guest.sh" "$root/ndk/guest.sh"
install -m 0755 "$NDK_TOP/tools/ndkstat" "$root/bin/ndkstat"
install -m 0755 "$init" "$root/init"

# The same inputs make the same bytes (no times, files in order): a
# bench that counts instructions boots the same way every time.
find "$root" -exec touch -h -d @0 {} +
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet --reproducible) |
	gzip -1 -n >"$out"
