#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The WDK layer refuses at build time what has no Linux meaning: build one
# small driver file per refused call against kernel tree $1 and require
# each to fail with the layer's message (or, for a wait on something that
# is not an event, with _Generic's). Run by tools/lint.sh.
set -euo pipefail
. "$(dirname "$0")/vm/lib.sh"

kdir=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# name, then the statement that uses it
cases=(
	"IoCreateDevice|return IoCreateDevice(DriverObject, 0, NULL, 0, 0, FALSE, NULL);"
	"IoCreateDeviceSecure|return IoCreateDeviceSecure(DriverObject, 0, NULL, 0, 0, FALSE, NULL, NULL, NULL);"
	"MmProbeAndLockPages|MmProbeAndLockPages(NULL, KernelMode, 0); return 0;"
	"ZwQueryValueKey|return ZwQueryValueKey(NULL, NULL, 0, NULL, 0, NULL);"
	"KeInsertQueueDpc|KeInsertQueueDpc(NULL, NULL, NULL); return 0;"
	"KeWaitForMultipleObjects|return KeWaitForMultipleObjects(1, NULL, 0, Executive, KernelMode, FALSE, NULL, NULL);"
	"GetIpInterfaceEntry|return GetIpInterfaceEntry(NULL);"
	"KeWaitForSingleObject|KSPIN_LOCK Lock; return KeWaitForSingleObject(&Lock, Executive, KernelMode, FALSE, NULL);"
)
for c in "${cases[@]}"; do
	name=${c%%|*}
	mkdir -p "$dir/$name"
	cat >"$dir/$name/refused.c" <<EOC
// SPDX-License-Identifier: GPL-2.0
#include <ntddk.h>
#include <wdmsec.h>
#include <netioapi.h>

NTSTATUS DriverEntry(PDRIVER_OBJECT DriverObject, PUNICODE_STRING RegistryPath)
{
	${c#*|}
}
EOC
	cat >"$dir/$name/Kbuild" <<EOK
ccflags-y += -I$NDK_TOP/include/ndk/wdk -I$NDK_TOP/include
obj-m += refused.o
CFLAGS_refused.o += -DNDK_WDK_DRIVER_ENTRY
EOK
	if make -C "$kdir" M="$dir/$name" modules >"$dir/$name.log" 2>&1; then
		die "WDK layer: $name built, but must be refused"
	fi
	if [ "$name" = KeWaitForSingleObject ]; then
		grep -q "_Generic\|not compatible with any association" \
			"$dir/$name.log" ||
			die "WDK layer: $name failed for another reason: $(cat "$dir/$name.log")"
	elif ! grep -q "$name has no Linux meaning" "$dir/$name.log"; then
		die "WDK layer: $name failed for another reason: $(cat "$dir/$name.log")"
	fi
done
log "WDK layer: ${#cases[@]} calls refused at build time"
