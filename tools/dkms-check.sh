#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Prove the DKMS packaging on Debian's distribution kernel: a copy of the
# sources becomes /usr/src/ndk-<version>, DKMS adds, builds and installs
# it, exactly ndk.ko, ndk_wdk.ko and ndk_selftest.ko must be built,
# warning-free, and installed, and a consumer module (samples/ndk_demo, on
# its own) must build against it with the headers and the Module.symvers
# DKMS keeps.  Everything is removed
# again at the end, also on failure.  Logs in build/dkms/.
set -euo pipefail
. "$(dirname "$0")/vm/lib.sh"

need_khdr "make dkms-check"
install_missing dkms "$NDK_KHDR_PKG" build-essential
cd "$NDK_TOP"
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' dkms.conf)
[ -n "$ver" ] || die "no PACKAGE_VERSION in dkms.conf"
release=$(distro_release)
[ -n "$release" ] || die "cannot tell the release of $NDK_KHDR_PKG"
src=/usr/src/ndk-$ver
base=/var/lib/dkms/ndk/$ver/$release/$(uname -m)
# Debian's 6.12 kernels compress modules (CONFIG_MODULE_COMPRESS_XZ), and
# DKMS installs ndk.ko.xz there; 6.1's do not.
destdir=/lib/modules/$release/updates/dkms
modules="ndk ndk_wdk ndk_selftest"
installed() {
	local m
	for m in $modules; do
		compgen -G "$destdir/$m.ko*" || true
	done
}
out=$NDK_TOP/build/dkms

# ndk has one DKMS installation per machine: other runs of this or of
# dkms-check/distro-check (another clone, another series) wait here.
mkdir -p "$NDK_CACHE_DIR"
exec 8>"$NDK_CACHE_DIR/.lock-dkms"
flock 8
# Never clobber a real installation.
[ ! -e "$src" ] || die "$src exists; remove it first"
[ ! -e "/var/lib/dkms/ndk/$ver" ] || die "DKMS has ndk/$ver; run: dkms remove ndk/$ver --all"

cleanup() {
	dkms remove -m ndk -v "$ver" --all --no-depmod >>"$out/dkms.log" 2>&1 || true
	rm -rf "$src"
}
rm -rf "$out"
mkdir -p "$out" "$src"
trap cleanup EXIT
tracked | tar --null -T - -cf - | tar -xf - -C "$src"

# Left to itself DKMS signs with /var/lib/dkms/mok.key, creating it if
# missing, and that would outlive the check: use a throwaway key.
export mok_signing_key=$out/mok.key mok_certificate=$out/mok.pub

log "dkms add, build and install ndk/$ver for $release"
# depmod would leave modules.dep and its siblings behind.
{
	dkms add -m ndk -v "$ver" &&
	dkms build -m ndk -v "$ver" -k "$release" &&
	dkms install -m ndk -v "$ver" -k "$release" --no-depmod
} >"$out/dkms.log" 2>&1 || {
	cat "$out/dkms.log" "/var/lib/dkms/ndk/$ver/build/make.log" >&2 || true
	die "dkms failed"
}
cp "$base/log/make.log" "$out/make.log"
if grep -E 'warning:|error:' "$out/make.log" >&2; then
	die "the DKMS build has warnings"
fi
# Every module the build linked, by its object's path.
built=$(sed -n 's|.*LD \[M\] *.*/build/\(.*\)\.ko$|\1|p' "$out/make.log" |
	sort | tr '\n' ' ')
want="ndk/ndk tests/selftest/ndk_selftest wdk/ndk_wdk "
[ "$built" = "$want" ] || die "DKMS built '$built', not '$want'"
for m in $modules; do
	compgen -G "$destdir/$m.ko*" >/dev/null || die "$m.ko is not installed in $destdir"
done
log "installed $(installed | tr '\n' ' ')"

log "building samples/ndk_demo as a separate consumer module"
mkdir -p "$out/consumer"
cp samples/ndk_demo/ndk_demo.c "$out/consumer/"
cat >"$out/consumer/Kbuild" <<EOF
ccflags-y += -I$src/include
obj-m += ndk_demo.o
EOF
make -C "/usr/src/linux-headers-$release" M="$out/consumer" \
	KBUILD_EXTRA_SYMBOLS="$base/Module.symvers" modules \
	>"$out/consumer.log" 2>&1 || { cat "$out/consumer.log" >&2; die "consumer build failed"; }
if grep -E 'warning:|error:' "$out/consumer.log" >&2; then
	die "the consumer build has warnings"
fi
modinfo -F depends "$out/consumer/ndk_demo.ko" | grep -qw ndk ||
	die "the consumer does not depend on ndk"

cleanup
trap - EXIT
for f in $(installed) "/var/lib/dkms/ndk/$ver" "$src"; do
	[ ! -e "$f" ] || die "$f is left behind"
done
log "DKMS packaging works"
