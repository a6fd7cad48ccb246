/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * NDK_MR (mr.c) and NDK_MW (mw.c).
 */
#ifndef _NDK_PRIV_MR_H
#define _NDK_PRIV_MR_H

#include "pd.h"

/**
 * struct ndk_mr - an NDK_MR
 * @ndk: the public object
 * @obj: lifetime state
 * @pd: its PD
 * @fast: created for fast registration
 * @op: the request that claimed the MR (enum ndk_mr_op)
 * @busy: a register, deregister or initialize request is running
 * @ibmr: the verbs region: registered memory, or the fast-register MR;
 *	for registered memory, the local token's
 * @rmr: registered memory with remote rights: a second verbs MR over the
 *	same pages, the remote token's, so that a peer invalidating the
 *	token it was given leaves the local one alone
 * @sgt: the pages of registered memory, DMA-mapped
 * @mapped: @sgt is mapped
 * @remote: fast-register MR initialized for remote access
 * @max_pages: pages a fast registration may use; for registered memory,
 *	pages @ibmr or @spare can map
 * @spare: the invalidated verbs MR of the last registration, kept for the
 *	next one
 * @rspare: and its @rmr
 * @lock: serializes the requests with the restoring of a verbs MR that
 *	a peer invalidated (ndk_mr_restore_work())
 * @frsg: @max_pages entries the fast-register posting path fills
 * @work: runs a request that pends
 * @cb: its completion
 * @ctx: and its context
 * @mdl: register: the memory
 * @length: register: bytes
 * @access: register: IB access flags; those of @rmr if there is one
 * @laccess: register: IB access flags of @ibmr
 */
struct ndk_mr {
	NDK_MR ndk;
	struct ndk_obj obj;
	struct ndk_pd *pd;
	bool fast;
	u8 op;
	atomic_t busy;
	struct ib_mr *ibmr;
	struct ib_mr *rmr;
	struct sg_table sgt;
	bool mapped;
	bool remote;
	u32 max_pages;
	struct ib_mr *spare;
	struct ib_mr *rspare;
	struct mutex lock; /* see above */
	struct scatterlist *frsg;
	struct work_struct work;
	NDK_FN_REQUEST_COMPLETION cb;
	void *ctx;
	const struct ndk_mdl *mdl;
	u64 length;
	int access;
	int laccess;
};

NTSTATUS ndk_create_mr(NDK_PD *pNdkPd, BOOLEAN FastRegister,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_MR **ppNdkMr);
int ndk_mr_remote_invalidated(struct ndk_device *dev, u32 key);
bool ndk_mr_restored(struct ndk_device *dev, int ticket);
void ndk_mr_restore_work(struct work_struct *work);
int ndk_mr_track_pd(struct ndk_pd *pd);
void ndk_mr_untrack_pd(struct ndk_pd *pd);

/**
 * struct ndk_mw - an NDK_MW: a fast-register MR that NdkBind fills with
 *	pages of a registered region
 * @ndk: the public object
 * @obj: lifetime state; successor of its PD
 * @pd: its PD
 * @ibmr: the verbs MR; its keys are the window's token
 * @sg: @max_pages entries the bind posting path fills
 * @max_pages: pages @ibmr maps
 * @mr: the region of the last bind, until that region's memory goes
 *	(ndk_mr_revoke_windows()) or the window is bound again
 * @pd_node: entry in the PD's @mws
 */
struct ndk_mw {
	NDK_MW ndk;
	struct ndk_obj obj;
	struct ndk_pd *pd;
	struct ib_mr *ibmr;
	struct scatterlist *sg;
	u32 max_pages;
	struct ndk_mr *mr;
	struct list_head pd_node;
};

NTSTATUS ndk_create_mw(NDK_PD *pNdkPd,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_MW **ppNdkMw);
struct ndk_mw *ndk_mw_of(const NDK_OBJECT_HEADER *hdr, struct ndk_pd *pd);
NTSTATUS ndk_mw_bind_wr(struct ndk_qp *qp, struct ib_reg_wr *wr,
			NDK_MR *pMr, NDK_MW *pMw, u64 va, SIZE_T Length,
			ULONG Flags);

#endif /* _NDK_PRIV_MR_H */
