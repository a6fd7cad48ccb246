#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make deb`: the ndk-dkms Debian package (debian/, dh-dkms), built from the
# tracked files into build/deb/, as a Debian user installs ndk: apt
# installs it, DKMS builds the modules for every kernel with headers and
# again on each kernel upgrade. lintian checks the package: an error fails
# the build, warnings are shown. Prints the .deb's path last.
set -euo pipefail
. "$(dirname "$0")/vm/lib.sh"

install_missing debhelper dh-dkms dpkg-dev lintian
cd "$NDK_TOP"
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' dkms.conf)
debver=$(dpkg-parsechangelog -l debian/changelog -S Version)
# dkms.conf holds the one version number; the changelog must agree.
[ "$ver" = "$debver" ] ||
	die "dkms.conf says version $ver, debian/changelog $debver"
out=$NDK_TOP/build/deb
rm -rf "$out"
mkdir -p "$out/ndk-$ver"
tracked | tar --null -T - -cf - | tar -xf - -C "$out/ndk-$ver"
log "building ndk-dkms $ver"
(cd "$out/ndk-$ver" && dpkg-buildpackage -b -us -uc) >"$out/build.log" 2>&1 ||
	{ tail -n 30 "$out/build.log" >&2; die "dpkg-buildpackage failed"; }
deb=$out/ndk-dkms_${ver}_all.deb
[ -f "$deb" ] || die "dpkg-buildpackage made no $deb"
# The .changes takes in the .deb and the Maintainer and Changed-By fields.
changes=$(compgen -G "$out/ndk_${ver}_*.changes" | head -n 1) ||
	die "dpkg-buildpackage made no .changes"
log "lintian ${changes##*/}"
rc=0
lintian "$changes" >"$out/lintian.log" 2>&1 || rc=$?
grep -E '^[EW]: ' "$out/lintian.log" >&2 || true
if [ "$rc" != 0 ] || grep -q '^E: ' "$out/lintian.log"; then
	grep -vE '^[EW]: ' "$out/lintian.log" >&2 || true
	die "lintian finds errors in the package ($out/lintian.log)"
fi
echo "$deb"
