/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Windows kernel scalar and helper types used by the NDKPI surface,
 * expressed with Linux kernel types.
 *
 * The widths follow the Windows x64 (LLP64) data model so that every
 * NDKPI structure built from them has the same layout as on Windows:
 * LONG and ULONG are 32 bits wide there, unlike the Linux "long".
 */
#ifndef _NDK_TYPES_H
#define _NDK_TYPES_H

#include <linux/types.h>
#include <linux/socket.h>

/* Signed 32-bit status code; negative values are errors. */
typedef s32 NTSTATUS;

typedef s32 LONG;
typedef u32 ULONG;
typedef u16 USHORT;
typedef u8 UCHAR;
typedef u8 BOOLEAN;
typedef u32 UINT32;
typedef u64 UINT64;
typedef u64 ULONG64;
typedef size_t SIZE_T;

/* Unsigned integer as wide as a pointer. */
typedef unsigned long ULONG_PTR;

/* Processor bit mask within one processor group. */
typedef ULONG_PTR KAFFINITY;

typedef void *PVOID;

#ifndef TRUE
#define TRUE	1
#endif

#ifndef FALSE
#define FALSE	0
#endif

/* Binary GUID in the Windows in-memory form (16 bytes). */
typedef struct _GUID {
	u32 Data1;
	u16 Data2;
	u16 Data3;
	u8 Data4[8];
} GUID;

/*
 * Socket addresses are the Linux ones. The layout of the generic header
 * matches Windows, but the address family numbers (AF_INET6 in particular)
 * are the Linux values.
 */
typedef struct sockaddr SOCKADDR;
typedef struct sockaddr *PSOCKADDR;

/* Preferred processors: a mask inside one processor group. */
typedef struct _GROUP_AFFINITY {
	KAFFINITY Mask;
	USHORT Group;
	USHORT Reserved[3];
} GROUP_AFFINITY, *PGROUP_AFFINITY;

/*
 * Bus address of a page as seen by the RDMA device (a DMA address). The
 * WDK layer (include/ndk/wdk) declares it as Windows' PHYSICAL_ADDRESS,
 * a union of the same size and alignment, through NDK_LOGICAL_ADDRESS_TYPE.
 */
#ifdef NDK_LOGICAL_ADDRESS_TYPE
typedef NDK_LOGICAL_ADDRESS_TYPE NDK_LOGICAL_ADDRESS;
#else
typedef u64 NDK_LOGICAL_ADDRESS;
#endif

/* Memory descriptor list: struct ndk_mdl, defined in ndk_mdl.h. */
struct ndk_mdl;
typedef struct ndk_mdl MDL;
typedef struct ndk_mdl *PMDL;

/* True for success and informational codes, false for warnings/errors. */
#define NT_SUCCESS(Status)	(((NTSTATUS)(Status)) >= 0)

#include "ndk_status.h"

#endif /* _NDK_TYPES_H */
