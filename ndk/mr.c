// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * NDK_MR.
 *
 * Kernel verbs register kernel memory only through a fast-register MR and
 * an IB_WR_REG_MR work request on a QP of the region's PD. NdkRegisterMr
 * therefore maps the MDL's pages, fills an MR with them and posts the
 * request on the PD's own registration QP, an RC QP connected to itself
 * that the first registration creates, and waits for its completion.
 * NdkDeregisterMr invalidates the verbs MR, which kills both tokens at
 * once, and keeps it for the next registration. These requests run in
 * the caller when it may sleep, else on ndk_wq. Fast-register MRs are
 * filled by the consumer's own NdkFastRegister requests instead (qp.c).
 *
 * A fast-register MR is what a peer's send with invalidate may name, and
 * rxe and siw honour that for any of them, so a peer could take a
 * consumer's registered region away. A region with remote rights
 * therefore has two verbs MRs over its pages: the remote token's, and
 * the local token's without remote rights, which the first one's
 * invalidation leaves alone. The keys of both are in the device's table
 * of regions; a receive whose invalidation names one of them has it
 * registered again, with the same key, from ndk_wq.
 *
 * The MDL page walk and the LAMs are in mdl.c, the registration QP in
 * reg.c.
 */
#include <linux/scatterlist.h>
#include <linux/vmalloc.h>
#include <rdma/ib_cache.h>
#include "ndk_priv.h"
#include "trace.h"

/* The requests of an NDK_MR, which run one at a time. */
enum ndk_mr_op {
	NDK_MR_REGISTER,
	NDK_MR_DEREGISTER,
	NDK_MR_INIT_FAST,
};

static struct ndk_mr *to_ndk_mr(NDK_MR *mr)
{
	return container_of(mr, struct ndk_mr, ndk);
}

/* ------------------------------------------------------------------ */
/* NDK_MR                                                              */

/* Unmap and free the pages of the registered memory. */
static void ndk_mr_unmap(struct ndk_mr *mr)
{
	struct ib_device *dev = mr->pd->ibpd->device;

	if (mr->mapped)
		ib_dma_unmap_sgtable_attrs(dev, &mr->sgt, DMA_BIDIRECTIONAL, 0);
	mr->mapped = false;
	if (mr->sgt.sgl)
		sg_free_table(&mr->sgt);
	mr->sgt.sgl = NULL;
}

/* The verbs MRs of registered memory, local first; NULL where none. */
static void ndk_mr_ibmrs(struct ndk_mr *mr, struct ib_mr *ibmrs[2])
{
	ibmrs[0] = mr->fast ? NULL : mr->ibmr;
	ibmrs[1] = mr->rmr;
}

/*
 * Enter a verbs MR of the region in the device's table, by the index of
 * its keys, before it is registered: a peer names a key, and the byte
 * beyond the index changes with each registration (siw even invalidates
 * whatever that byte is). An invalidation that comes while the region
 * is being registered is then restored as well, once the registration
 * lets go of the region's lock.
 */
static int ndk_mr_track(struct ndk_mr *mr, struct ib_mr *ibmr)
{
	struct xarray *xa = &mr->obj.adapter->dev->regions;
	int err;

	err = NDK_FI_ERR(xa_err(xa_store_irq(xa, ibmr->lkey >> 8, mr,
					     GFP_KERNEL)));
	if (!err && ibmr->rkey >> 8 != ibmr->lkey >> 8)
		err = xa_err(xa_store_irq(xa, ibmr->rkey >> 8, mr, GFP_KERNEL));
	return err;
}

/* Tags a PD's entry in the device's table: its privileged token's MR. */
#define NDK_REGIONS_PD	1

/**
 * ndk_mr_track_pd() - have a peer's invalidation of @pd's token undone
 * @pd: a new PD
 *
 * Where the device has no device-wide local DMA key, the privileged token
 * is the key of the DMA MR ib_alloc_pd() made for the PD. On iWARP a peer
 * may invalidate it (siw checks only the PD), which would end every local
 * request through the token for good; so the MR is in the device's table
 * as the PD's, and registered again as a region's MR would be. IB and
 * RoCE let a peer invalidate only fast-register MRs and windows.
 *
 * Return: 0 or a negative errno.
 */
int ndk_mr_track_pd(struct ndk_pd *pd)
{
	struct ib_mr *ibmr = pd->ibpd->__internal_mr;

	if (!ibmr || !rdma_protocol_iwarp(pd->ibpd->device,
					  pd->obj.adapter->port))
		return 0;
	return xa_err(xa_store_irq(&pd->obj.adapter->dev->regions,
				   ibmr->lkey >> 8,
				   xa_tag_pointer(pd, NDK_REGIONS_PD),
				   GFP_KERNEL));
}

/**
 * ndk_mr_untrack_pd() - take @pd out of the table before it goes
 * @pd: the PD
 */
void ndk_mr_untrack_pd(struct ndk_pd *pd)
{
	struct ib_mr *ibmr = pd->ibpd->__internal_mr;

	if (ibmr && rdma_protocol_iwarp(pd->ibpd->device,
					pd->obj.adapter->port))
		xa_cmpxchg_irq(&pd->obj.adapter->dev->regions, ibmr->lkey >> 8,
			       xa_tag_pointer(pd, NDK_REGIONS_PD), NULL, 0);
}

/* Register the PD's DMA MR again, with its key and rights. Sleeps. */
static void ndk_mr_restore_pd(struct ndk_pd *pd)
{
	struct ib_mr *ibmr = pd->ibpd->__internal_mr;
	struct ib_reg_wr wr = {
		.wr.opcode = IB_WR_REG_MR,
		.mr = ibmr,
		.key = ibmr->lkey,
		.access = IB_ACCESS_LOCAL_WRITE,
	};
	NTSTATUS status;

	status = ndk_reg_post(pd, &wr.wr);
	if (status)
		pr_warn_ratelimited("ndk: privileged token %#x not restored after a remote invalidation: %#x\n",
				    wr.key, status);
}

/* Take the region out of the table before its keys go. */
static void ndk_mr_untrack(struct ndk_mr *mr)
{
	struct xarray *xa = &mr->obj.adapter->dev->regions;
	struct ib_mr *ibmrs[2];
	int i;

	ndk_mr_ibmrs(mr, ibmrs);
	for (i = 0; i < 2; i++) {
		if (!ibmrs[i])
			continue;
		xa_cmpxchg_irq(xa, ibmrs[i]->lkey >> 8, mr, NULL, 0);
		xa_cmpxchg_irq(xa, ibmrs[i]->rkey >> 8, mr, NULL, 0);
	}
}

/* Forget everything; the tokens die with the verbs MRs. */
static void ndk_mr_release(struct ndk_mr *mr)
{
	ndk_mr_untrack(mr);
	if (mr->ibmr) {
		ib_dereg_mr(mr->ibmr);
		mr->ibmr = NULL;
	}
	if (mr->rmr) {
		ib_dereg_mr(mr->rmr);
		mr->rmr = NULL;
	}
	if (mr->spare) {
		ib_dereg_mr(mr->spare);
		mr->spare = NULL;
	}
	if (mr->rspare) {
		ib_dereg_mr(mr->rspare);
		mr->rspare = NULL;
	}
	ndk_mr_unmap(mr);
	kfree(mr->frsg);
	mr->frsg = NULL;
}

/**
 * ndk_mr_revoke_windows() - kill the tokens of windows bound to @mr
 * @mr: a registered region whose memory is about to go
 *
 * A window maps the region's pages by device address; it must not
 * outlive the registration, whatever the consumer did with it. The key
 * of the window's last bind is invalidated, and if the device refuses it
 * (the bind never ran, so an earlier one may still hold), the key before.
 * Sleeps.
 */
static void ndk_mr_revoke_windows(struct ndk_mr *mr)
{
	struct ndk_pd *pd = mr->pd;
	struct ndk_mw *mw;
	u32 key;

	mutex_lock(&pd->mw_lock);
	list_for_each_entry(mw, &pd->mws, pd_node) {
		if (READ_ONCE(mw->mr) != mr)
			continue;
		key = mw->ibmr->rkey;
		if (ndk_reg_invalidate(pd, key))
			ndk_reg_invalidate(pd, (key & ~0xffU) |
					   ((key - 1) & 0xff));
		cmpxchg(&mw->mr, mr, NULL);
	}
	mutex_unlock(&pd->mw_lock);
}

/*
 * Invalidate @ibmr and keep it in @spare; if the invalidation fails,
 * destroy it, which kills its keys just as well.
 */
static void ndk_mr_unregister_one(struct ndk_mr *mr, struct ib_mr *ibmr,
				  struct ib_mr **spare)
{
	struct ib_send_wr wr = {
		.opcode = IB_WR_LOCAL_INV,
		.ex.invalidate_rkey = ibmr->rkey,
	};

	if (ndk_reg_post(mr->pd, &wr) == STATUS_SUCCESS)
		*spare = ibmr;
	else
		ib_dereg_mr(ibmr);
}

/*
 * NdkDeregisterMr: invalidate the verbs MRs, which kills both tokens,
 * and keep them for the next NdkRegisterMr of as many pages or fewer,
 * which then skips ib_alloc_mr() (about 40 % of a registration on rxe).
 */
static void ndk_mr_unregister(struct ndk_mr *mr)
{
	struct ib_mr *ibmr = mr->ibmr, *rmr = mr->rmr;

	ndk_mr_untrack(mr);
	WRITE_ONCE(mr->ibmr, NULL);
	WRITE_ONCE(mr->rmr, NULL);
	ndk_mr_revoke_windows(mr);
	ndk_mr_unregister_one(mr, ibmr, &mr->spare);
	if (rmr)
		ndk_mr_unregister_one(mr, rmr, &mr->rspare);
	ndk_mr_unmap(mr);
}

/*
 * A verbs MR for a registration: the one the last deregistration kept in
 * @spare if it maps enough pages (@reuse), under a new key so that its
 * old tokens stay dead, or a new one of mr->max_pages pages.
 */
static struct ib_mr *ndk_mr_get_ibmr(struct ndk_mr *mr, struct ib_mr **spare,
				     bool reuse)
{
	struct ib_mr *ibmr = *spare;

	*spare = NULL;
	if (ibmr && reuse) {
		ib_update_fast_reg_key(ibmr, ib_inc_rkey(ibmr->rkey));
		return ibmr;
	}
	if (ibmr)
		ib_dereg_mr(ibmr);
	return NDK_FI_PTR(ib_alloc_mr(mr->pd->ibpd, IB_MR_TYPE_MEM_REG,
				      mr->max_pages));
}

/* Fill @ibmr with the region's pages and register it with @access. */
static NTSTATUS ndk_mr_post_reg(struct ndk_mr *mr, struct ib_mr *ibmr,
				int access)
{
	struct ib_reg_wr wr = { .wr.opcode = IB_WR_REG_MR };
	int n;

	n = NDK_FI_ERR(ib_map_mr_sg(ibmr, mr->sgt.sgl, mr->sgt.nents, NULL, PAGE_SIZE));
	if (n != mr->sgt.nents)
		return n < 0 ? ndk_status_from_errno(n) :
			       STATUS_INVALID_PARAMETER;
	/* Peers address the region by the MDL's virtual address. */
	ibmr->iova = mr->mdl->va;
	wr.mr = ibmr;
	wr.key = ibmr->rkey;
	wr.access = access;
	return ndk_reg_post(mr->pd, &wr.wr);
}

static int ndk_mr_collect(struct ndk_pgwalk *w, struct page *page, u32 i)
{
	((struct page **)w->arg)[i] = page;
	return 0;
}

static NTSTATUS ndk_mr_do_register(struct ndk_mr *mr)
{
	struct ib_device *dev = mr->pd->ibpd->device;
	struct ndk_pgwalk w = {};
	struct page **pages;
	struct ib_mr *ibmr;
	NTSTATUS status;
	bool reuse;
	int err;

	err = ndk_pgwalk(&w, mr->mdl, mr->length);
	if (err)
		return ndk_pgwalk_status(err);
	/* The device translates addresses page by page from the base. */
	if ((mr->mdl->va & ~PAGE_MASK) != w.fbo)
		return STATUS_INVALID_PARAMETER;
	pages = NDK_FI_NULL(kvmalloc_array(w.n, sizeof(*pages), GFP_KERNEL));
	if (!pages)
		return STATUS_INSUFFICIENT_RESOURCES;
	w = (struct ndk_pgwalk){ .fn = ndk_mr_collect, .arg = pages };
	err = ndk_pgwalk(&w, mr->mdl, mr->length);
	if (!err)
		err = NDK_FI_ERR(sg_alloc_table_from_pages(&mr->sgt, pages,
							   w.n, w.fbo,
							   mr->length,
							   GFP_KERNEL));
	kvfree(pages);
	if (err) {
		mr->sgt.sgl = NULL;
		return ndk_pgwalk_status(err);
	}
	err = NDK_FI_ERR(ib_dma_map_sgtable_attrs(dev, &mr->sgt, DMA_BIDIRECTIONAL, 0));
	if (err)
		return ndk_status_from_errno(err);
	mr->mapped = true;

	/* The spares are kept together; mr->max_pages is what both map. */
	reuse = w.n <= mr->max_pages;
	if (!reuse)
		mr->max_pages = w.n;
	ibmr = ndk_mr_get_ibmr(mr, &mr->spare, reuse);
	if (IS_ERR(ibmr))
		return ndk_status_from_errno(PTR_ERR(ibmr));
	mr->ibmr = ibmr;
	if (ndk_mr_track(mr, ibmr))
		return STATUS_INSUFFICIENT_RESOURCES;
	status = ndk_mr_post_reg(mr, ibmr, mr->laccess);
	/* Separate even with the same rights (iWARP write): other keys. */
	if (status ||
	    !(mr->access & (IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE)))
		return status;
	ibmr = ndk_mr_get_ibmr(mr, &mr->rspare, reuse);
	if (IS_ERR(ibmr))
		return ndk_status_from_errno(PTR_ERR(ibmr));
	/* One key byte for both tokens, as with a single verbs MR. */
	ib_update_fast_reg_key(ibmr, mr->ibmr->rkey & 0xff);
	mr->rmr = ibmr;
	if (ndk_mr_track(mr, ibmr))
		return STATUS_INSUFFICIENT_RESOURCES;
	return ndk_mr_post_reg(mr, ibmr, mr->access);
}

static NTSTATUS ndk_mr_init_fast(struct ndk_mr *mr)
{
	struct ib_mr *ibmr;

	ndk_mr_release(mr);
	mr->frsg = NDK_FI_NULL(kcalloc(mr->max_pages, sizeof(*mr->frsg), GFP_KERNEL));
	if (!mr->frsg)
		return STATUS_INSUFFICIENT_RESOURCES;
	sg_init_table(mr->frsg, mr->max_pages);
	ibmr = NDK_FI_PTR(ib_alloc_mr(mr->pd->ibpd, IB_MR_TYPE_MEM_REG, mr->max_pages));
	if (IS_ERR(ibmr))
		return ndk_status_from_errno(PTR_ERR(ibmr));
	mr->ibmr = ibmr;
	return STATUS_SUCCESS;
}

/* The part of the MR's request that may sleep; its final status. */
static NTSTATUS ndk_mr_run(struct ndk_mr *mr)
{
	NTSTATUS status = STATUS_SUCCESS;

	mutex_lock(&mr->lock);
	switch (mr->op) {
	case NDK_MR_REGISTER:
		status = ndk_mr_do_register(mr);
		break;
	case NDK_MR_DEREGISTER:
		ndk_mr_unregister(mr);
		break;
	default:
		status = ndk_mr_init_fast(mr);
		break;
	}
	/* A failure leaves nothing registered or initialized. */
	if (status)
		ndk_mr_release(mr);
	mutex_unlock(&mr->lock);
	return status;
}

/*
 * Register the verbs MR of @mr whose keys have @index again, with the
 * same key and rights, after a peer invalidated it. The MR still holds
 * the region's pages and address, so one IB_WR_REG_MR does it. A stale
 * report (the region was registered again since) finds the MR valid and
 * the device refuses the request, which changes nothing. Sleeps.
 */
static void ndk_mr_restore(struct ndk_mr *mr, unsigned long index)
{
	struct ib_reg_wr wr = { .wr.opcode = IB_WR_REG_MR };
	NTSTATUS status;

	mutex_lock(&mr->lock);
	if (mr->ibmr && (mr->ibmr->lkey >> 8 == index ||
			 mr->ibmr->rkey >> 8 == index)) {
		wr.mr = mr->ibmr;
		wr.access = mr->laccess;
	} else if (mr->rmr && (mr->rmr->lkey >> 8 == index ||
			       mr->rmr->rkey >> 8 == index)) {
		wr.mr = mr->rmr;
		wr.access = mr->access;
	}
	if (wr.mr) {
		wr.key = wr.mr->rkey;
		status = ndk_reg_post(mr->pd, &wr.wr);
		if (status)
			pr_warn_ratelimited("ndk: region key %#x not restored after a remote invalidation: %#x\n",
					    wr.key, status);
	}
	mutex_unlock(&mr->lock);
}

#if IS_ENABLED(CONFIG_KUNIT)
static void (*ndk_mr_restored_hook)(struct ndk_device *dev);

/**
 * ndk_mr_set_restored_hook() - call @hook between a restoring's end and
 * its notifications
 * @hook: called from ndk_mr_restore_work(), which may sleep; NULL for none
 *
 * The suites' way to make the restoring's notification come late, after
 * the consumer took its results.
 */
void ndk_mr_set_restored_hook(void (*hook)(struct ndk_device *dev))
{
	WRITE_ONCE(ndk_mr_restored_hook, hook);
}
EXPORT_SYMBOL_NDK_TEST(ndk_mr_set_restored_hook);

static void ndk_mr_restore_published(struct ndk_device *dev)
{
	void (*hook)(struct ndk_device *dev) = READ_ONCE(ndk_mr_restored_hook);

	if (hook)
		hook(dev);
}
#else
/* Without KUnit there is no hook. */
static inline void ndk_mr_restore_published(struct ndk_device *dev)
{
}
#endif

/**
 * ndk_mr_restore_work() - restore the regions peers invalidated
 * @work: the device's restore_work
 *
 * Runs on ndk_wq, queued by ndk_mr_remote_invalidated(). The table's
 * lock keeps a region's memory alive until the reference is taken: a
 * region leaves the table before it is freed. Every region marked
 * before the ticket read first is restored when the ticket is
 * published; the CQs that kept results back for one are notified.
 */
void ndk_mr_restore_work(struct work_struct *work)
{
	struct ndk_device *dev = container_of(work, struct ndk_device,
					      restore_work);
	/* Pairs with ndk_mr_remote_invalidated(): its mark is set. */
	int ticket = atomic_read_acquire(&dev->restore_asked);
	struct xarray *xa = &dev->regions;
	unsigned long index = 0;
	struct ndk_obj *obj;
	void *entry;
	bool held;

	for (;; index++) {
		xa_lock_irq(xa);
		entry = xa_find(xa, &index, ULONG_MAX, NDK_MR_INVALIDATED);
		if (!entry) {
			xa_unlock_irq(xa);
			break;
		}
		if (xa_pointer_tag(entry) == NDK_REGIONS_PD)
			obj = &((struct ndk_pd *)xa_untag_pointer(entry))->obj;
		else
			obj = &((struct ndk_mr *)entry)->obj;
		held = ndk_obj_tryget(obj);
		__xa_clear_mark(xa, index, NDK_MR_INVALIDATED);
		xa_unlock_irq(xa);
		if (!held)
			continue;
		if (xa_pointer_tag(entry) == NDK_REGIONS_PD)
			ndk_mr_restore_pd(xa_untag_pointer(entry));
		else
			ndk_mr_restore(entry, index);
		ndk_obj_put(obj);
	}
	atomic_set_release(&dev->restore_done, ticket);
	ndk_mr_restore_published(dev);
	/* Ordered before the arm state the notifications read (cq.c). */
	smp_mb();
	ndk_cq_restored(dev);
}

/* A request that pended: run it, then report it to the consumer. */
static void ndk_mr_work(struct work_struct *work)
{
	struct ndk_mr *mr = container_of(work, struct ndk_mr, work);
	NTSTATUS status = ndk_mr_run(mr);
	NDK_FN_REQUEST_COMPLETION cb = mr->cb;
	void *ctx = mr->ctx;

	atomic_set(&mr->busy, 0);
	trace_ndk_callback(NDK_CB_REQUEST, NdkObjectTypeMr, mr->obj.id, status);
	cb(ctx, status);
	ndk_obj_put(&mr->obj);
}

/* Take the MR for one request; the consumer must not overlap them. */
static bool ndk_mr_claim(struct ndk_mr *mr)
{
	return !atomic_cmpxchg(&mr->busy, 0, 1);
}

/*
 * Run request @op, which claimed the MR. Where the caller may sleep it
 * runs right here and returns its final status, with no completion call
 * as NDKPI allows: that spares the work item's wakeup and then the
 * consumer's. Elsewhere it pends on ndk_wq and @cb reports it. Either
 * way it holds a reference on the MR while it runs, which a close waits
 * for, and frees the MR for the next request when it is over.
 *
 * On iWARP the registration QP is connected and torn down through
 * rdma_cm ids under the PD's registration mutex; a consumer calling from
 * an rdma_cm handler (its connector's callbacks) would nest that mutex in
 * the handler's, and wait for iw_cm's ordered workqueue from inside it.
 * There register and deregister always pend. Inside ndk's rdma_cm
 * handler every request pends, on any transport: the MR's mutex is held
 * across the registration path (see ndk_reg_may_run()).
 */
static NTSTATUS ndk_mr_request(struct ndk_mr *mr, enum ndk_mr_op op,
			       NDK_FN_REQUEST_COMPLETION cb, void *ctx)
{
	bool iwarp = mr->obj.adapter->info.RdmaTechnology == NdkiWarp;
	NTSTATUS status;

	mr->op = op;
	ndk_obj_get(&mr->obj);
	if ((iwarp && op != NDK_MR_INIT_FAST) || !ndk_caller_may_sleep() ||
	    !ndk_reg_may_run()) {
		mr->cb = cb;
		mr->ctx = ctx;
		queue_work(ndk_wq, &mr->work);
		return STATUS_PENDING;
	}
	status = ndk_mr_run(mr);
	atomic_set(&mr->busy, 0);
	ndk_obj_put(&mr->obj);
	return status;
}

/* NDK_MR_FLAG_* to IB access rights; -1 for unknown flags. */
static int ndk_mr_access(ULONG flags, bool iwarp)
{
	int access = 0;

	if (flags & ~(NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
		      NDK_MR_FLAG_ALLOW_REMOTE_READ |
		      NDK_MR_FLAG_ALLOW_REMOTE_WRITE |
		      NDK_MR_FLAG_RDMA_READ_SINK))
		return -1;
	if (flags & NDK_MR_FLAG_ALLOW_LOCAL_WRITE)
		access |= IB_ACCESS_LOCAL_WRITE;
	if (flags & NDK_MR_FLAG_ALLOW_REMOTE_READ)
		access |= IB_ACCESS_REMOTE_READ;
	/* Remote write needs local write in verbs; NDK's value has both. */
	if (flags & NDK_MR_FLAG_ALLOW_REMOTE_WRITE & ~NDK_MR_FLAG_ALLOW_LOCAL_WRITE)
		access |= IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE;
	/* The device writes a read's data into the sink; iWARP lets the
	 * responder do it as a remote write.
	 */
	if (flags & NDK_MR_FLAG_RDMA_READ_SINK)
		access |= IB_ACCESS_LOCAL_WRITE |
			  (iwarp ? IB_ACCESS_REMOTE_WRITE : 0);
	return access;
}

/*
 * The rights of the local token's verbs MR: none remote, but on iWARP
 * remote write where the region has it, since a read's sink may need it
 * there (see ndk_mr_access()).
 */
static int ndk_mr_local_access(int access, bool iwarp)
{
	return access & ~(IB_ACCESS_REMOTE_READ |
			  (iwarp ? 0 : IB_ACCESS_REMOTE_WRITE));
}

/*
 * NdkRegisterMr: the region's address is the first MDL's virtual
 * address; ndk_mr_run() maps and registers, inline or on ndk_wq (see
 * ndk_mr_request()). Callable from atomic context.
 */
static NTSTATUS ndk_register_mr(NDK_MR *pNdkMr, MDL *Mdl, SIZE_T Length,
				ULONG Flags,
				NDK_FN_REQUEST_COMPLETION RequestCompletion,
				PVOID RequestContext)
{
	struct ndk_mr *mr = to_ndk_mr(pNdkMr);
	struct ndk_adapter *adapter = mr->obj.adapter;
	bool iwarp = adapter->info.RdmaTechnology == NdkiWarp;
	int access = ndk_mr_access(Flags, iwarp);

	if (!RequestCompletion || !Mdl || !Length || access < 0 || mr->fast ||
	    !Mdl->va)
		return STATUS_INVALID_PARAMETER;
	if (Length > adapter->info.MaxRegistrationSize)
		return STATUS_INVALID_BUFFER_SIZE;
	if (!ndk_mr_claim(mr))
		return STATUS_INVALID_DEVICE_STATE;
	if (mr->ibmr) {
		atomic_set(&mr->busy, 0);
		return STATUS_INVALID_DEVICE_STATE;
	}
	mr->mdl = Mdl;
	mr->length = Length;
	mr->access = access;
	mr->laccess = ndk_mr_local_access(access, iwarp);
	return ndk_mr_request(mr, NDK_MR_REGISTER, RequestCompletion,
			      RequestContext);
}

static NTSTATUS ndk_deregister_mr(NDK_MR *pNdkMr,
				  NDK_FN_REQUEST_COMPLETION RequestCompletion,
				  PVOID RequestContext)
{
	struct ndk_mr *mr = to_ndk_mr(pNdkMr);

	if (!RequestCompletion || mr->fast)
		return STATUS_INVALID_PARAMETER;
	if (!ndk_mr_claim(mr))
		return STATUS_INVALID_DEVICE_STATE;
	if (!mr->ibmr) {
		atomic_set(&mr->busy, 0);
		return STATUS_INVALID_DEVICE_STATE;
	}
	return ndk_mr_request(mr, NDK_MR_DEREGISTER, RequestCompletion,
			      RequestContext);
}

static NTSTATUS
ndk_initialize_fast_register_mr(NDK_MR *pNdkMr, ULONG AdapterPageCount,
				BOOLEAN RemoteAccess,
				NDK_FN_REQUEST_COMPLETION RequestCompletion,
				PVOID RequestContext)
{
	struct ndk_mr *mr = to_ndk_mr(pNdkMr);

	if (!RequestCompletion || !mr->fast)
		return STATUS_INVALID_PARAMETER;
	if (!AdapterPageCount ||
	    AdapterPageCount > mr->obj.adapter->info.FRMRPageCount)
		return STATUS_IMPLEMENTATION_LIMIT;
	if (!ndk_mr_claim(mr))
		return STATUS_INVALID_DEVICE_STATE;
	mr->max_pages = AdapterPageCount;
	mr->remote = RemoteAccess;
	return ndk_mr_request(mr, NDK_MR_INIT_FAST, RequestCompletion,
			      RequestContext);
}

/*
 * The dispatch entries of NdkRegisterMr and NdkDeregisterMr, traced. The
 * reference outlives a request that finishes before the call returns.
 */
static NTSTATUS ndk_register_mr_traced(NDK_MR *pNdkMr, MDL *Mdl,
				       SIZE_T Length, ULONG Flags,
				       NDK_FN_REQUEST_COMPLETION RequestCompletion,
				       PVOID RequestContext)
{
	struct ndk_mr *mr = to_ndk_mr(pNdkMr);
	NTSTATUS status;

	ndk_obj_get(&mr->obj);
	status = ndk_register_mr(pNdkMr, Mdl, Length, Flags,
				 RequestCompletion, RequestContext);
	trace_ndk_register_mr(mr, Length, status);
	ndk_obj_put(&mr->obj);
	return status;
}

static NTSTATUS ndk_deregister_mr_traced(NDK_MR *pNdkMr,
					 NDK_FN_REQUEST_COMPLETION RequestCompletion,
					 PVOID RequestContext)
{
	struct ndk_mr *mr = to_ndk_mr(pNdkMr);
	NTSTATUS status;

	ndk_obj_get(&mr->obj);
	status = ndk_deregister_mr(pNdkMr, RequestCompletion, RequestContext);
	trace_ndk_deregister_mr(mr, READ_ONCE(mr->length), status);
	ndk_obj_put(&mr->obj);
	return status;
}

/* Both tokens are 0 while nothing is registered or initialized. */
static UINT32 ndk_get_local_token_from_mr(NDK_MR *pNdkMr)
{
	struct ib_mr *ibmr = READ_ONCE(to_ndk_mr(pNdkMr)->ibmr);

	return ibmr ? ibmr->lkey : 0;
}

static UINT32 ndk_get_remote_token_from_mr(NDK_MR *pNdkMr)
{
	struct ndk_mr *mr = to_ndk_mr(pNdkMr);
	struct ib_mr *ibmr = READ_ONCE(mr->rmr);

	if (!ibmr)
		ibmr = READ_ONCE(mr->ibmr);
	return ibmr ? ibmr->rkey : 0;
}

static const NDK_MR_DISPATCH ndk_mr_dispatch = {
	.NdkCloseMr = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkRegisterMr = ndk_register_mr_traced,
	.NdkDeregisterMr = ndk_deregister_mr_traced,
	.NdkInitializeFastRegisterMr = ndk_initialize_fast_register_mr,
	.NdkGetRemoteTokenFromMr = ndk_get_remote_token_from_mr,
	.NdkGetLocalTokenFromMr = ndk_get_local_token_from_mr,
};

static NTSTATUS ndk_mr_create(struct ndk_obj *obj)
{
	return STATUS_SUCCESS;
}

/* The close waits for a running request (its reference) first. */
static void ndk_mr_destroy(struct ndk_obj *obj)
{
	struct ndk_mr *mr = container_of(obj, struct ndk_mr, obj);

	if (!mr->fast && mr->ibmr)
		ndk_mr_revoke_windows(mr);
	ndk_mr_release(mr);
	mutex_destroy(&mr->lock);
}

static void ndk_mr_free(struct ndk_obj *obj)
{
	kmem_cache_free(ndk_mr_cache, container_of(obj, struct ndk_mr, obj));
}

/* Destroying a registered region invalidates its windows' tokens. */
static bool ndk_mr_inline_ok(struct ndk_obj *obj)
{
	struct ndk_mr *mr = container_of(obj, struct ndk_mr, obj);

	return READ_ONCE(obj->state) != NDK_OBJ_CLOSING || mr->fast ||
	       ndk_reg_may_run();
}

static const struct ndk_obj_ops ndk_mr_ops = {
	.create = ndk_mr_create,
	.destroy = ndk_mr_destroy,
	.free = ndk_mr_free,
	.inline_ok = ndk_mr_inline_ok,
};

NDK_OBJ_CHECK_LAYOUT(struct ndk_mr);

/**
 * ndk_create_mr() - NdkCreateMr
 * @pNdkPd: protection domain
 * @FastRegister: TRUE for an MR that NdkFastRegister fills, FALSE for one
 *	that NdkRegisterMr registers
 * @CreateCompletion: called with the new MR, from ndk_wq, when the
 *	creation pends
 * @RequestContext: passed back to @CreateCompletion
 * @ppNdkMr: receives the MR when the creation completes inline
 *
 * Callable from atomic context. Where the kernel can tell that the caller
 * may sleep, and @ppNdkMr is given, the MR is created inline.
 *
 * Return: STATUS_SUCCESS (created inline), STATUS_PENDING,
 * STATUS_INVALID_PARAMETER, STATUS_INSUFFICIENT_RESOURCES, or the
 * failure of an inline creation.
 */
NTSTATUS ndk_create_mr(NDK_PD *pNdkPd, BOOLEAN FastRegister,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_MR **ppNdkMr)
{
	struct ndk_pd *pd = container_of(pNdkPd, struct ndk_pd, ndk);
	struct ndk_mr *mr;
	NTSTATUS status;

	if (!pNdkPd || !CreateCompletion)
		return STATUS_INVALID_PARAMETER;
	mr = NDK_FI_NULL(kmem_cache_zalloc(ndk_mr_cache, GFP_ATOMIC));
	if (!mr)
		return STATUS_INSUFFICIENT_RESOURCES;
	mr->ndk.Dispatch = &ndk_mr_dispatch;
	mr->pd = pd;
	mr->fast = FastRegister;
	mutex_init(&mr->lock);
	INIT_WORK(&mr->work, ndk_mr_work);
	ndk_obj_init(&mr->obj, &mr->ndk.Header, NdkObjectTypeMr, &ndk_mr_ops,
		     &pd->obj);
	status = ndk_obj_create(&mr->obj, CreateCompletion, RequestContext,
				!!ppNdkMr);
	if (status == STATUS_SUCCESS)
		*ppNdkMr = &mr->ndk;
	return status;
}
