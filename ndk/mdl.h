/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The MDL page walk and the logical address mappings (mdl.c), for
 * registration (mr.c) and the adapter's dispatch table (adapter.c).
 */
#ifndef _NDK_PRIV_MDL_H
#define _NDK_PRIV_MDL_H

#include "adapter.h"

/**
 * struct ndk_pgwalk - the pages of an MDL region, one at a time
 * @fn: called for each page, with its index; non-zero stops the walk
 * @arg: for @fn
 * @n: pages so far
 * @fbo: offset of the region in its first page
 * @end: where the previous piece ended in its page
 */
struct ndk_pgwalk {
	int (*fn)(struct ndk_pgwalk *w, struct page *page, u32 i);
	void *arg;
	u32 n;
	u32 fbo;
	u32 end;
};

int ndk_pgwalk(struct ndk_pgwalk *w, const struct ndk_mdl *mdl, u64 length);
NTSTATUS ndk_pgwalk_status(int err);
NTSTATUS ndk_build_lam(NDK_ADAPTER *pNdkAdapter, MDL *Mdl, SIZE_T Length,
		       NDK_FN_REQUEST_COMPLETION RequestCompletion,
		       PVOID RequestContext,
		       NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM, ULONG *pLAMSize,
		       ULONG *pFBO);
void ndk_release_lam(NDK_ADAPTER *pNdkAdapter,
		     NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM);

#endif /* _NDK_PRIV_MDL_H */
