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
void ndk_mr_restore_work(struct work_struct *work);
/* The suites' hook into the end of a restoring (mr.c). */
#if IS_ENABLED(CONFIG_KUNIT)
void ndk_mr_set_restored_hook(void (*hook)(struct ndk_device *dev));
#endif

/* Marks a region's entry whose verbs MR a peer invalidated. */
#define NDK_MR_INVALIDATED	XA_MARK_0

/* For the poll path, which they spare a call into mr.c. */
/**
 * ndk_mr_remote_invalidated() - a receive invalidated @key
 * @dev: the device of the CQ that reported it
 * @key: the key the peer named
 *
 * Called by the CQ poll for each successful receive with invalidate. A
 * key of a fast-register MR or a window is no region's and costs one
 * lookup; a region's is marked and restored from ndk_wq. Allocates
 * nothing; any context.
 *
 * Return: 0 for no region's key; else the ticket that
 * ndk_mr_restored() takes once the region is restored.
 */
static inline int ndk_mr_remote_invalidated(struct ndk_device *dev,
					    u32 key)
{
	struct xarray *xa = &dev->regions;
	unsigned long flags;
	int ticket;

	if (!xa_load(xa, key >> 8))
		return 0;
	xa_lock_irqsave(xa, flags);
	__xa_set_mark(xa, key >> 8, NDK_MR_INVALIDATED);
	xa_unlock_irqrestore(xa, flags);
	/* Fully ordered: the mark is set before the ticket is seen. */
	do {
		ticket = atomic_inc_return(&dev->restore_asked);
	} while (!ticket);
	queue_work(ndk_wq, &dev->restore_work);
	return ticket;
}

/**
 * ndk_mr_restored() - whether the region of @ticket is restored
 * @dev: its device
 * @ticket: what ndk_mr_remote_invalidated() returned
 *
 * Any context.
 *
 * Return: true once the restoring that took @ticket is done.
 */
static inline bool ndk_mr_restored(struct ndk_device *dev, int ticket)
{
	/* Pairs with ndk_mr_restore_work(): the region is registered. */
	return (int)((u32)atomic_read_acquire(&dev->restore_done) -
		     (u32)ticket) >= 0;
}

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
