/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * <ndis.h> of a ported Windows driver, as an NDK consumer sees it: the
 * WDK base, NDKPI and interface indexes. NDIS miniport and protocol
 * drivers are not offered; ndk is the NDK provider.
 */
#ifndef _NDK_WDK_NDIS_H
#define _NDK_WDK_NDIS_H

#include "wdm.h"
#include "netioapi.h"
#include "ndkpi.h"

typedef NTSTATUS NDIS_STATUS, *PNDIS_STATUS;
#define NDIS_STATUS_SUCCESS		STATUS_SUCCESS
#define NDIS_STATUS_PENDING		STATUS_PENDING
#define NDIS_STATUS_FAILURE		STATUS_UNSUCCESSFUL
#define NDIS_STATUS_RESOURCES		STATUS_INSUFFICIENT_RESOURCES

#define NdisMRegisterMiniportDriver(...)				\
	NDK_WDK_NOT_OFFERED(NdisMRegisterMiniportDriver)
#define NdisRegisterProtocolDriver(...)					\
	NDK_WDK_NOT_OFFERED(NdisRegisterProtocolDriver)

#endif /* _NDK_WDK_NDIS_H */
