/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * <wsk.h> of a ported Windows driver: Winsock Kernel registration, as far
 * as an NDK consumer uses it to reach the NDK provider. ndk_wdk.ko is the
 * WSK provider; its only client control is
 * WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH (<wskndk.h>). Sockets are not
 * offered: WSK_PROVIDER_DISPATCH has no socket functions, so calling one
 * does not compile.
 */
#ifndef _NDK_WDK_WSK_H
#define _NDK_WDK_WSK_H

#include "wdm.h"
#include "netioapi.h"

#define MAKE_WSK_VERSION(Mj, Mn)	((USHORT)((Mj) << 8) | (USHORT)((Mn) & 0xff))
#define WSK_MAJOR_VERSION(V)		((UCHAR)((V) >> 8))
#define WSK_MINOR_VERSION(V)		((UCHAR)(V))
#define WSK_NO_WAIT			0
#define WSK_INFINITE_WAIT		0xffffffff

/* The provider's handle for a registered client. */
typedef struct _WSK_CLIENT WSK_CLIENT, *PWSK_CLIENT;

typedef NTSTATUS (*PFN_WSK_CLIENT_EVENT)(PVOID ClientContext, ULONG EventType,
					 PVOID Information,
					 SIZE_T InformationLength);

typedef struct _WSK_CLIENT_DISPATCH {
	USHORT Version;
	USHORT Reserved;
	PFN_WSK_CLIENT_EVENT WskClientEvent;
} WSK_CLIENT_DISPATCH, *PWSK_CLIENT_DISPATCH;

typedef struct _WSK_CLIENT_NPI {
	PVOID ClientContext;
	const WSK_CLIENT_DISPATCH *Dispatch;
} WSK_CLIENT_NPI, *PWSK_CLIENT_NPI;

/* Owned by the client, filled by WskRegister(). */
typedef struct _WSK_REGISTRATION {
	PWSK_CLIENT Client;
	atomic_t Captures;
} WSK_REGISTRATION, *PWSK_REGISTRATION;

typedef NTSTATUS (*PFN_WSK_CONTROL_CLIENT)(PWSK_CLIENT Client,
					   ULONG ControlCode,
					   SIZE_T InputSize,
					   PVOID InputBuffer,
					   SIZE_T OutputSize,
					   PVOID OutputBuffer,
					   SIZE_T *OutputSizeReturned,
					   PIRP Irp);

typedef struct _WSK_PROVIDER_DISPATCH {
	USHORT Version;
	USHORT Reserved;
	PFN_WSK_CONTROL_CLIENT WskControlClient;
} WSK_PROVIDER_DISPATCH, *PWSK_PROVIDER_DISPATCH;

typedef struct _WSK_PROVIDER_NPI {
	PWSK_CLIENT Client;
	const WSK_PROVIDER_DISPATCH *Dispatch;
} WSK_PROVIDER_NPI, *PWSK_PROVIDER_NPI;

NTSTATUS WskRegister(PWSK_CLIENT_NPI WskClientNpi,
		     PWSK_REGISTRATION WskRegistration);
void WskDeregister(PWSK_REGISTRATION WskRegistration);
NTSTATUS WskCaptureProviderNPI(PWSK_REGISTRATION WskRegistration,
			       ULONG WaitTimeout,
			       PWSK_PROVIDER_NPI WskProviderNpi);
void WskReleaseProviderNPI(PWSK_REGISTRATION WskRegistration);

#endif /* _NDK_WDK_WSK_H */
