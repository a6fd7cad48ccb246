#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (or reuse) the test kernel of series NDK_KERNEL (6.1 by default)
# from Debian's linux-source-<series>.
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
exec 9>"$NDK_CACHE_DIR/.lock-$NDK_KERNEL-$flavour"
flock 9
if [ -f "$out/.ndk-done" ]; then
	echo "$out"
	exit 0
fi

tarball=$NDK_KSRC_TARBALL
[ -f "$tarball" ] || die "$tarball missing (apt-get install $NDK_KSRC_PKG)"

log "building $flavour kernel in $out (several minutes)"
rm -rf "$out" "$out.tmp"
mkdir -p "$out.tmp"
tar -C "$out.tmp" --strip-components=1 -xJf "$tarball"
cd "$out.tmp"

mapfile -t frags < <(kernel_frags "$flavour")

make -s tinyconfig >/dev/null
scripts/kconfig/merge_config.sh -m .config "${frags[@]}" >/dev/null
make -s olddefconfig >/dev/null

# merge_config only warns; a silently dropped option would change what
# the tests check, so insist on every requested value, =n included.
missing=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=n)
		! grep -q "^${line%=n}=" .config ||
			{ log "config: wanted $line"; missing=1; } ;;
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
for old in "$NDK_CACHE_DIR/kernel-$NDK_KERNEL-$flavour-"*; do
	[ "$old" = "$out" ] || rm -rf "$old"
done
log "kernel ready: $out"
echo "$out"
