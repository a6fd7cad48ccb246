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
# ndk_wdk.ko and ndk_selftest.ko. Each VM runs the self-test in loopback,
# then the two run it against each other (tools/vm/distro-init.sh);
# judge-distro.py reads both consoles. The last line is
# "N passed, N failed, N skipped".
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

root_deb=/tmp/${deb##*/}
server_pid='' client_pid=''
stop_vms() {
	local pid
	for pid in $server_pid $client_pid; do
		pkill -TERM -P "$pid" 2>/dev/null || true
	done
}
uninstall() {
	in_root apt-get purge -y -q ndk-dkms >>"$out/dkms.log" 2>&1 || true
	rm -f "$NDK_DISTRO_ROOT$root_deb"
}
trap uninstall EXIT
cp "$deb" "$NDK_DISTRO_ROOT$root_deb"
log "apt install ${deb##*/} in the $NDK_DISTRO_CODENAME root"
in_root apt-get install -y -q "$root_deb" >"$out/dkms.log" 2>&1 ||
	{ cat "$out/dkms.log" >&2; die "installing ndk-dkms failed"; }
mkdir -p "$out/ndk"
for m in ndk ndk_wdk ndk_selftest; do
	f=$(compgen -G "$NDK_DISTRO_ROOT/lib/modules/$release/updates/dkms/$m.ko*" |
		head -n 1) ||
		{ cat "$out/dkms.log" >&2; die "DKMS did not install $m.ko for $release"; }
	case $f in
	*.xz) xz -dc "$f" >"$out/ndk/$m.ko" ;;
	*.zst) zstd -qdc "$f" >"$out/ndk/$m.ko" ;;
	*) cp "$f" "$out/ndk/$m.ko" ;;
	esac
done
# Debian's headers are built for as users build: warning-free there too.
makelog=$(compgen -G "$NDK_DISTRO_ROOT/var/lib/dkms/ndk/*/$release/*/log/make.log" |
	head -n 1) || die "DKMS kept no make.log"
cp "$makelog" "$out/make.log"
! grep -E 'warning:|error:' "$out/make.log" >&2 ||
	die "the DKMS build against $release warned (build/distro-check/make.log)"
# The package's part is done: leave the root as it was.
uninstall
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
	name=${name%.xz}
	name=${name%.zst}
	case $path in
	*.xz) xz -dc "$path" >"$mods/$i-$name" ;;
	*.zst) zstd -qdc "$path" >"$mods/$i-$name" ;;
	*) cp "$path" "$mods/$i-$name" ;;
	esac
	i=$((i + 1))
done
log "modules from the image: $(cd "$mods" && echo *)"

root=$(mktemp -d)
trap 'stop_vms; rm -rf "$root"' EXIT
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
	run_vm "$out/$role.log" "$kernel" \
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
