#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make distro-check`: ndk on the kernel users boot, installed as users
# install it. In a Debian root of the release (NDK_DISTRO; made once by
# debootstrap under the cache, see distro_root), apt installs Debian's
# headers of the series and the ndk-dkms package of `make deb`, whose
# DKMS builds ndk for them with that release's compiler. The matching
# Debian kernel image, unmodified, is downloaded and unpacked (never
# installed) and booted in two QEMU VMs joined by a socket network, with an
# initramfs of that kernel's own modules and the DKMS-built ndk.ko,
# ndk_wdk.ko, ndk_selftest.ko and ndk_nvmeof.ko (before that, a consumer
# module is built against the package, as in `make dkms-check`). Each VM
# runs the self-test in loopback, then the two run it against each
# other; where the kernel has Linux's NVMe over Fabrics target, the server
# VM serves a null_blk device through it and the client VM runs
# ndk_nvmeof against that (tools/vm/distro-init.sh). judge-distro.py
# reads both consoles.
# The last line is "N passed, N failed, N skipped".
#
# Environment: NDK_KERNEL (6.1), NDK_DISTRO (debian12 for 6.1 and 6.12,
# debian13 for 7.3; debian13 with 6.12 too), NDK_QEMU_ACCEL (tcg),
# NDK_DISTRO_TIMEOUT (seconds per VM, 600), NDK_CACHE_DIR (the roots, the
# .deb files and unpacked images go there).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

distro_select
install_missing qemu-system-x86 busybox-static iproute2 kmod xz-utils \
	zstd cpio python3
cd "$NDK_TOP"
out=$NDK_TOP/build/distro-check
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
version=$(in_root dpkg-query -W -f='${Version}' "linux-headers-$release")
image=$(distro_image "$release" "$version")
kernel=$(distro_kernel "$image" "$release")
log "Debian $NDK_DISTRO_CODENAME's kernel $release ($version): $image"

trap 'root_dkms_purge "$out"' EXIT
root_dkms_install "$deb" "$release" "$out"
root_dkms_consumer "$release" "$out"
# The package's part is done: leave the root as it was.
root_dkms_purge "$out"
exec 8>&-
trap - EXIT

# The image's own modules the guest needs, in load order, uncompressed.
mods=$out/mods
mkdir -p "$mods"
i=10
want="virtio_pci virtio_net rdma_rxe rdma_cm"
# Before 6.15 rxe asks the crypto API for "crc32", which comes from
# crc32_generic: no module dependency names it, and the guest has no
# modprobe helper. Later kernels have neither the need nor the module.
if modprobe -d "$image" -S "$release" -n crc32_generic 2>/dev/null; then
	want="virtio_pci virtio_net crc32_generic rdma_rxe rdma_cm"
fi
for m in $want; do
	modprobe -d "$image" -S "$release" -n "$m" ||
		die "Debian's $release has no module $m"
done
# shellcheck disable=SC2086
for path in $(distro_modules "$image" "$release" $want); do
	name=$(basename "$path")
	unpack_ko "$path" "$mods/$i-${name%.ko*}.ko"
	i=$((i + 1))
done
log "modules from the image: $(cd "$mods" && echo *)"

# Debian's own NVMe over Fabrics target for the server VM, where the
# kernel has it: null_blk, nvmet-rdma and what they need beyond the
# modules above, in nvmet/. configfs, a module in Debian's kernels, is
# among those above: rdma_cm needs it too.
nvmet=$out/nvmet nvmeof=
if modprobe -d "$image" -S "$release" -n nvmet_rdma 2>/dev/null &&
	modprobe -d "$image" -S "$release" -n null_blk 2>/dev/null; then
	nvmeof=1
	mkdir -p "$nvmet"
	# shellcheck disable=SC2086
	loaded=" $(distro_modules "$image" "$release" $want | tr '\n' ' ')"
	# shellcheck disable=SC2086
	for path in $(distro_modules "$image" "$release" $want null_blk nvmet_rdma); do
		case $loaded in *" $path "*) continue ;; esac
		name=$(basename "$path")
		unpack_ko "$path" "$nvmet/$i-${name%.ko*}.ko"
		i=$((i + 1))
	done
	log "the NVMe over Fabrics target's modules: $(cd "$nvmet" && echo *)"
else
	log "Debian's $release has no nvmet-rdma or null_blk: no NVMe over Fabrics case"
fi

root=$(mktemp -d)
trap 'stop_pair; rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,run,ndk,mods,lib64,usr/lib}
[ -z "$nvmeof" ] || cp -r "$nvmet" "$root/nvmet"
cp /bin/busybox "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list); do
	[ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
# kmod, whose insmod the init uses as on the host: busybox's tries a
# failed load a second time another way, running the self-test twice.
for f in "$(command -v rdma)" "$(command -v kmod)"; do
	mkdir -p "$root$(dirname "$f")"
	cp -L "$f" "$root$f"
	for dep in $(ldd "$f" | grep -o '/[^ ]*'); do
		mkdir -p "$root$(dirname "$dep")"
		cp -L "$dep" "$root$dep"
	done
done
[ -e "$root/usr/bin/rdma" ] || ln -s "$(command -v rdma)" "$root/usr/bin/rdma"
# kmod acts by the name it is called by.
mkdir -p "$root/ndk/bin"
for f in insmod rmmod; do
	ln -s "$(command -v kmod)" "$root/ndk/bin/$f"
done
cp "$mods"/* "$root/mods/"
cp "$out"/ndk/*.ko "$root/ndk/"
cp "$NDK_VM_DIR/guest.sh" "$root/ndk/guest.sh"
install -m 0755 "$NDK_VM_DIR/distro-init.sh" "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 >"$out/initramfs.cpio.gz"

log "booting Debian's $release"
boot_pair "$out" "$kernel" "$out/initramfs.cpio.gz" "console=ttyS0 panic=-1" \
	ndk_distro "${NDK_DISTRO_TIMEOUT:-600}"

rc=0
judge=(--server-rc "$pair_server_rc" --client-rc "$pair_client_rc")
[ -z "$nvmeof" ] || judge+=(--nvmeof)
python3 "$NDK_VM_DIR/judge-distro.py" "${judge[@]}" "$out/server.log" \
	"$out/client.log" || rc=$?
exit "$rc"
