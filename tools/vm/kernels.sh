#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the test kernels "$@" (series:flavour, as 6.12:debug or 6.1:bench)
# into the kernel cache one after the other, each only if the cache lacks
# it, with the packages and source it needs. .ci/run starts this in the
# background at the lowest priority: the kernels its later steps need are
# then built in the CPU time the earlier steps' VMs leave idle. A step that
# needs a kernel still being built waits for that build (kernel_tree()).
# Exits non-zero if a build failed; the step that needs it tries again and
# reports the failure.
set -uo pipefail
dir=$(dirname "$0")
status=0
for want in "$@"; do
	if [ ! -f "$dir/kernel-${want#*:}.config" ]; then
		echo "kernels.sh: $want: no such flavour (tools/vm/kernel-<flavour>.config)" >&2
		status=1
		continue
	fi
	# lib.sh reads the series when it is sourced: one shell per kernel.
	NDK_KERNEL=${want%%:*} bash -c '. "$1/lib.sh" &&
		"$NDK_VM_DIR/install-deps.sh" && kernel_tree "$2" >/dev/null' \
		kernels "$dir" "${want#*:}" || status=1
done
exit "$status"
