/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * <wskndk.h> of a ported Windows driver: how an NDK consumer opens an
 * adapter. WskControlClient(WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH) hands
 * out the two functions below; WskOpenNdkAdapter() is
 * ndk_open_adapter() on the Linux ifindex, WskCloseNdkAdapter()
 * ndk_close_adapter(). Use the control code by name: its value is ndk's.
 */
#ifndef _NDK_WDK_WSKNDK_H
#define _NDK_WDK_WSKNDK_H

#include "wsk.h"
#include "ndkpi.h"

#define WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH	0x4e444b01

typedef NTSTATUS (*PFN_WSK_OPEN_NDK_ADAPTER)(PWSK_CLIENT Client,
					     NDK_VERSION NdkVersion,
					     IF_INDEX IfIndex,
					     NDK_ADAPTER **ppNdkAdapter);
typedef void (*PFN_WSK_CLOSE_NDK_ADAPTER)(PWSK_CLIENT Client,
					  NDK_ADAPTER *pNdkAdapter);

typedef struct _WSK_PROVIDER_NDK_DISPATCH {
	PFN_WSK_OPEN_NDK_ADAPTER WskOpenNdkAdapter;
	PFN_WSK_CLOSE_NDK_ADAPTER WskCloseNdkAdapter;
} WSK_PROVIDER_NDK_DISPATCH, *PWSK_PROVIDER_NDK_DISPATCH;

#endif /* _NDK_WDK_WSKNDK_H */
