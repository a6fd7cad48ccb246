#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Documentation gate: every Documentation/**/*.rst parses without a docutils
# warning; README and the pages name only make targets and files that
# exist, and keep history, figures and jargon where they belong
# (tools/docs-check.py); the suite catalogue matches the test sources; the
# kernel-doc comments of include/ndk/ and ndk/ parse without a kernel-doc
# warning, and every symbol ndk exports has such a comment.
set -euo pipefail
. "$(dirname "$0")/vm/lib.sh"

install_missing python3-docutils perl
fetch_ksrc
cd "$NDK_TOP"
mkdir -p build
kdoc_log=build/kernel-doc.log
fail=0

mapfile -d '' docs < <(tracked 'Documentation/*.rst')
# Run by Debian's python3 (its shebang), which has python3-docutils; a
# python3 found earlier in PATH may not.
tools/docs-check.py --text README "${docs[@]}" || fail=1
# The suite catalogue is generated from tests/ and must match them.
tools/suites.py --check Documentation/ndk/suites.rst || fail=1

mapfile -d '' srcs < <(tracked 'include/ndk/*.h' 'ndk/*.[ch]' 'wdk/*.[ch]')
# -v adds the warnings for a missing return or short description, and an
# info line naming each documented identifier: "FILE:LINE: info: ..." from
# the Perl kernel-doc of 6.1 and 6.12, "Info: FILE:LINE ..." from 7.3's
# Python one.
info='^Info: |: info: '
"$(kernel_scripts)/kernel-doc" -none -v "${srcs[@]}" >"$kdoc_log" 2>&1 || fail=1
if grep -v -E "$info" "$kdoc_log" >&2; then
	fail=1
fi

# kernel-doc does not notice an exported function that has no comment.
missing=$(comm -23 \
	<(tracked 'ndk/*.c' 'wdk/*.c' |
		xargs -0 sed -n 's/^EXPORT_SYMBOL[A-Z_]*(\([A-Za-z0-9_]*\));.*/\1/p' |
		sort -u) \
	<(grep -E "$info" "$kdoc_log" |
		sed -n 's/.*Scanning doc for [a-z]* \([A-Za-z0-9_]*\)$/\1/p' |
		sort -u))
if [ -n "$missing" ]; then
	log "exported without a kernel-doc comment: ${missing//$'\n'/ }"
	fail=1
fi

[ "$fail" = 0 ] || die "documentation check failed"
log "documentation clean"
