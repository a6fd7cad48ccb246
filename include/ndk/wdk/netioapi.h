/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * <netioapi.h> of a ported Windows driver: interface indexes and LUIDs.
 * An interface index is the Linux ifindex (in init_net); the LUID is made
 * from it, with the interface type of the device.
 */
#ifndef _NDK_WDK_NETIOAPI_H
#define _NDK_WDK_NETIOAPI_H

#include "wdm.h"

typedef ULONG NET_IFINDEX, *PNET_IFINDEX;
typedef ULONG IF_INDEX, *PIF_INDEX;
typedef USHORT NET_IFTYPE;

#define IF_MAX_STRING_SIZE	256
#define NDIS_IF_MAX_STRING_SIZE	IF_MAX_STRING_SIZE
#define IF_TYPE_OTHER		1
#define IF_TYPE_ETHERNET_CSMACD	6
#define IF_TYPE_SOFTWARE_LOOPBACK 24

typedef union _NET_LUID_LH {
	ULONG64 Value;
	struct {
		ULONG64 Reserved:24;
		ULONG64 NetLuidIndex:24;
		ULONG64 IfType:16;
	} Info;
} NET_LUID_LH, NET_LUID, *PNET_LUID, IF_LUID, *PIF_LUID;

NTSTATUS ConvertInterfaceIndexToLuid(NET_IFINDEX InterfaceIndex,
				     PNET_LUID InterfaceLuid);
NTSTATUS ConvertInterfaceLuidToIndex(const NET_LUID *InterfaceLuid,
				     PNET_IFINDEX InterfaceIndex);
NTSTATUS ConvertInterfaceLuidToAlias(const NET_LUID *InterfaceLuid,
				     PWSTR InterfaceAlias, SIZE_T Length);

#define GetIpInterfaceEntry(...)	NDK_WDK_NOT_OFFERED(GetIpInterfaceEntry)
#define GetUnicastIpAddressTable(...)					\
	NDK_WDK_NOT_OFFERED(GetUnicastIpAddressTable)
#define NotifyIpInterfaceChange(...)					\
	NDK_WDK_NOT_OFFERED(NotifyIpInterfaceChange)

#endif /* _NDK_WDK_NETIOAPI_H */
