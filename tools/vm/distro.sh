#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make distro-check`: ndk on the kernel users boot. DKMS builds and
# installs ndk against Debian's headers of the series' exact release; the
# matching Debian kernel image, unmodified, is downloaded and unpacked
# (never installed on the host) and booted in two QEMU VMs joined by a
# socket network, with an initramfs of that kernel's own modules and the
# DKMS-built ndk.ko, ndk_wdk.ko and ndk_selftest.ko. Each VM runs the
# self-test in loopback, then the two run it against each other
# (tools/vm/distro-init.sh); judge-distro.py reads both consoles. The
# last line is "N passed, N failed, N skipped".
#
# Environment: NDK_KERNEL (6.1), NDK_QEMU_ACCEL (tcg), NDK_DISTRO_TIMEOUT
# (seconds per VM, 600), NDK_CACHE_DIR (the .deb files and unpacked images
# go to its distro/).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need_khdr "make distro-check"
install_missing dkms "$NDK_KHDR_PKG" build-essential qemu-system-x86 \
	busybox-static iproute2 kmod xz-utils cpio python3
cd "$NDK_TOP"
out=$NDK_TOP/build/distro-check
rm -rf "$out"
mkdir -p "$out"

release=$(distro_release)
[ -n "$release" ] || die "cannot tell the release of $NDK_KHDR_PKG"
version=$(dpkg-query -W -f='${Version}' "linux-headers-$release")
image=$(distro_image "$release" "$version")
log "Debian kernel $release ($version): $image"

ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' dkms.conf)
src=/usr/src/ndk-$ver
# ndk has one DKMS installation per machine: other runs of this or of
# dkms-check/distro-check (another clone, another series) wait here.
mkdir -p "$NDK_CACHE_DIR"
exec 8>"$NDK_CACHE_DIR/.lock-dkms"
flock 8
[ ! -e "$src" ] || die "$src exists; remove it first"
[ ! -e "/var/lib/dkms/ndk/$ver" ] || die "DKMS has ndk/$ver; run: dkms remove ndk/$ver --all"

server_pid='' client_pid=''
cleanup() {
	local pid
	for pid in $server_pid $client_pid; do
		pkill -TERM -P "$pid" 2>/dev/null || true
	done
	dkms remove -m ndk -v "$ver" --all --no-depmod >>"$out/dkms.log" 2>&1 || true
	rm -rf "$src"
}
trap cleanup EXIT
mkdir -p "$src"
tracked | tar --null -T - -cf - | tar -xf - -C "$src"
# A throwaway signing key, as in dkms-check: Debian's kernel does not
# trust it either way (see judge-distro.py on taint E).
export mok_signing_key=$out/mok.key mok_certificate=$out/mok.pub
log "dkms add, build and install ndk/$ver for $release"
{
	dkms add -m ndk -v "$ver" &&
	dkms build -m ndk -v "$ver" -k "$release" &&
	dkms install -m ndk -v "$ver" -k "$release" --no-depmod
} >"$out/dkms.log" 2>&1 || {
	cat "$out/dkms.log" "/var/lib/dkms/ndk/$ver/build/make.log" >&2 || true
	die "dkms failed"
}
mkdir -p "$out/ndk"
for m in ndk ndk_wdk ndk_selftest; do
	f=$(compgen -G "/lib/modules/$release/updates/dkms/$m.ko*" | head -n 1) ||
		die "DKMS did not install $m.ko"
	case $f in
	*.xz) xz -dc "$f" >"$out/ndk/$m.ko" ;;
	*) cp "$f" "$out/ndk/$m.ko" ;;
	esac
done
# DKMS's part is done: leave the machine as it was.
cleanup

# The image's own modules the guest needs, in load order, uncompressed.
mods=$out/mods
mkdir -p "$mods"
i=10
# rxe asks the crypto API for "crc32", which comes from crc32_generic:
# no module dependency names it, and the guest has no modprobe helper.
for path in $(distro_modules "$image" "$release" virtio_pci virtio_net \
		crc32_generic rdma_rxe rdma_cm); do
	name=$(basename "$path")
	name=${name%.xz}
	case $path in
	*.xz) xz -dc "$path" >"$mods/$i-$name" ;;
	*) cp "$path" "$mods/$i-$name" ;;
	esac
	i=$((i + 1))
done
log "modules from the image: $(cd "$mods" && echo *)"

root=$(mktemp -d)
trap 'cleanup; rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,run,ndk,mods,lib64,usr/lib}
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

limit=${NDK_DISTRO_TIMEOUT:-600}
vm() {
	local role=$1 mac=$2 sock=$3
	run_vm "$out/$role.log" "$image/boot/vmlinuz-$release" \
		"$out/initramfs.cpio.gz" "console=ttyS0 panic=-1 ndk_distro.role=$role" \
		"$limit" 1G \
		-netdev "socket,id=n0,$sock=127.0.0.1:$port" \
		-device "virtio-net-pci,netdev=n0,mac=$mac"
}
listening() { ss -Hltn "sport = :$port" | grep -q .; }
for attempt in 1 2 3; do
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	log "booting Debian's $release: server VM, wire on port $port"
	vm server 52:54:00:78:00:01 listen &
	server_pid=$!
	for _ in $(seq 100); do
		listening && break
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	listening && break
	pkill -TERM -P "$server_pid" 2>/dev/null || true
	wait "$server_pid" || true
	server_pid=''
	log "the server VM's QEMU does not listen on port $port (attempt $attempt)"
done
[ -n "$server_pid" ] || die "cannot start the server VM; see $out/server.log"
log "booting the client VM"
vm client 52:54:00:78:00:02 connect &
client_pid=$!
server_rc=0 client_rc=0
wait "$server_pid" || server_rc=$?
wait "$client_pid" || client_rc=$?
server_pid='' client_pid=''

rc=0
python3 "$NDK_VM_DIR/judge-distro.py" --server-rc "$server_rc" \
	--client-rc "$client_rc" "$out/server.log" "$out/client.log" || rc=$?
exit "$rc"
