#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (or reuse) the test kernel from Debian's linux-source-6.1.
# Usage: build-kernel.sh [debug|bench]; prints the tree's path on stdout.
# The tree lives outside the repository under a key derived from the
# source version and the config fragments, so a second run reuses it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

flavour=${1:-debug}
out=$(kernel_dir "$flavour")
if [ -f "$out/.ndk-done" ]; then
	log "reusing kernel $out"
	echo "$out"
	exit 0
fi

mkdir -p "$NDK_CACHE_DIR"
exec 9>"$NDK_CACHE_DIR/.lock-$flavour"
flock 9
if [ -f "$out/.ndk-done" ]; then
	echo "$out"
	exit 0
fi

tarball=/usr/src/linux-source-6.1.tar.xz
[ -f "$tarball" ] || die "$tarball missing (apt-get install linux-source-6.1)"

log "building $flavour kernel in $out (several minutes)"
rm -rf "$out" "$out.tmp"
mkdir -p "$out.tmp"
tar -C "$out.tmp" --strip-components=1 -xJf "$tarball"
cd "$out.tmp"

frags=("$NDK_VM_DIR/kernel.config")
[ -f "$NDK_VM_DIR/kernel-$flavour.config" ] && frags+=("$NDK_VM_DIR/kernel-$flavour.config")

make -s tinyconfig >/dev/null
scripts/kconfig/merge_config.sh -m .config "${frags[@]}" >/dev/null
make -s olddefconfig >/dev/null

# merge_config only warns; a silently dropped option would change what
# the tests check, so insist on every requested value.
missing=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=n) ;;
	CONFIG_*=*)
		grep -qx "$line" .config || { log "config: wanted $line"; missing=1; } ;;
	esac
done < <(cat "${frags[@]}")
[ "$missing" = 0 ] || die "kernel config fragment not satisfied"

make -j"$(nproc)" bzImage modules >build.log 2>&1 ||
	{ tail -40 build.log >&2; die "kernel build failed"; }
make -s INSTALL_MOD_PATH="$out.tmp/modroot" INSTALL_MOD_STRIP=1 \
	modules_install >/dev/null
cd /
mv "$out.tmp" "$out"
touch "$out/.ndk-done"
# Trees of older keys of this flavour are dead weight (gigabytes each).
for old in "$NDK_CACHE_DIR/kernel-$flavour-"*; do
	[ "$old" = "$out" ] || rm -rf "$old"
done
log "kernel ready: $out"
echo "$out"
