/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The MDL page walk and the logical address mappings (mdl.c), for
 * registration (mr.c) and NdkBuildLAM (adapter.c).
 */
#ifndef _NDK_PRIV_MDL_H
#define _NDK_PRIV_MDL_H

#include "adapter.h"

NTSTATUS ndk_build_lam(NDK_ADAPTER *pNdkAdapter, MDL *Mdl, SIZE_T Length,
		       NDK_FN_REQUEST_COMPLETION RequestCompletion,
		       PVOID RequestContext,
		       NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM, ULONG *pLAMSize,
		       ULONG *pFBO);
void ndk_release_lam(NDK_ADAPTER *pNdkAdapter,
		     NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM);

#endif /* _NDK_PRIV_MDL_H */
