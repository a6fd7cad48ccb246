// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * NDK_MR and logical address mappings.
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
 * A LAM is the device address of each page of an MDL, mapped page by
 * page so that NdkReleaseLAM needs nothing but the LAM itself.
 */
#include <linux/scatterlist.h>
#include <linux/vmalloc.h>
#include <rdma/ib_cache.h>
#include "ndk_priv.h"
#include "trace.h"

static struct ndk_mr *to_ndk_mr(NDK_MR *mr)
{
	return container_of(mr, struct ndk_mr, ndk);
}

/* ------------------------------------------------------------------ */
/* MDL walking                                                         */

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

/* A piece of memory inside one page; only the region's ends may be partial. */
static int ndk_pgwalk_add(struct ndk_pgwalk *w, struct page *page, u32 off,
			  u32 len)
{
	int err;

	if (!page)
		return -EINVAL;
	if (!w->n)
		w->fbo = off;
	else if (off || w->end != PAGE_SIZE)
		return -EINVAL;
	if (w->fn) {
		err = w->fn(w, page, w->n);
		if (err)
			return err;
	}
	w->n++;
	w->end = off + len;
	return 0;
}

/* @len bytes of physically contiguous memory from @off into @page. */
static int ndk_pgwalk_seg(struct ndk_pgwalk *w, struct page *page, u64 off,
			  u32 len)
{
	u32 n;
	int err;

	page = nth_page(page, off >> PAGE_SHIFT);
	off &= ~PAGE_MASK;
	while (len) {
		n = min_t(u32, len, PAGE_SIZE - off);
		err = ndk_pgwalk_add(w, page, off, n);
		if (err)
			return err;
		page = nth_page(page, 1);
		off = 0;
		len -= n;
	}
	return 0;
}

static int ndk_pgwalk_kva(struct ndk_pgwalk *w, u8 *addr, u32 len)
{
	struct page *page;
	u32 off, n;
	int err;

	while (len) {
		off = offset_in_page(addr);
		n = min_t(u32, len, PAGE_SIZE - off);
		page = is_vmalloc_addr(addr) ? vmalloc_to_page(addr) :
		       virt_addr_valid(addr) ? virt_to_page(addr) : NULL;
		err = ndk_pgwalk_add(w, page, off, n);
		if (err)
			return err;
		addr += n;
		len -= n;
	}
	return 0;
}

/* The first @len bytes of one MDL. */
static int ndk_pgwalk_piece(struct ndk_pgwalk *w, const struct ndk_mdl *mdl,
			    u32 len)
{
	struct scatterlist *sg;
	u64 pos = mdl->offset;
	u32 i, n;
	int err = 0;

	switch (mdl->kind) {
	case NDK_MDL_KVA:
		return ndk_pgwalk_kva(w, mdl->addr, len);
	case NDK_MDL_PAGES:
		while (len && !err) {
			if ((pos >> PAGE_SHIFT) >= mdl->nents)
				return -EINVAL;
			n = min_t(u32, len, PAGE_SIZE - (pos & ~PAGE_MASK));
			err = ndk_pgwalk_add(w, mdl->pages[pos >> PAGE_SHIFT],
					     pos & ~PAGE_MASK, n);
			pos += n;
			len -= n;
		}
		return err;
	case NDK_MDL_BVEC:
		for (i = 0; i < mdl->nents && len && !err; i++) {
			n = min(len, mdl->bvec[i].bv_len);
			err = ndk_pgwalk_seg(w, mdl->bvec[i].bv_page,
					     mdl->bvec[i].bv_offset, n);
			len -= n;
		}
		break;
	case NDK_MDL_SG:
		for_each_sg(mdl->sgl, sg, mdl->nents, i) {
			if (!len || err)
				break;
			n = min(len, sg->length);
			err = ndk_pgwalk_seg(w, sg_page(sg), sg->offset, n);
			len -= n;
		}
		break;
	default:
		return -EINVAL;
	}
	return err ? err : len ? -EINVAL : 0;
}

/*
 * Walk the pages of the first @length bytes of the chain at @mdl, which
 * must be virtually contiguous. Atomic-safe.
 */
static int ndk_pgwalk(struct ndk_pgwalk *w, const struct ndk_mdl *mdl,
		      u64 length)
{
	u32 take;
	int err;

	if (!mdl || !length)
		return -EINVAL;
	for (; mdl && length; mdl = mdl->next) {
		take = min_t(u64, mdl->length, length);
		err = ndk_pgwalk_piece(w, mdl, take);
		if (err)
			return err;
		length -= take;
	}
	return length ? -EINVAL : 0;
}

static NTSTATUS ndk_pgwalk_status(int err)
{
	return err == -EINVAL ? STATUS_INVALID_PARAMETER :
				ndk_status_from_errno(err);
}

/* ------------------------------------------------------------------ */
/* The registration path of a PD                                       */

void ndk_reg_init(struct ndk_reg *reg)
{
	mutex_init(&reg->lock);
	init_completion(&reg->done);
}

/* The registration CQ's completion handler wakes ndk_reg_post(). */
static void ndk_reg_comp(struct ib_cq *cq, void *ctx)
{
	struct ndk_reg *reg = ctx;

	complete(&reg->done);
}

/* Disconnect the loop and free what ndk_reg_setup() made. */
static void ndk_reg_teardown(struct ndk_reg *reg)
{
	ndk_loop_disconnect(&reg->loop);
	if (reg->loop.qp)
		ib_destroy_qp(reg->loop.qp);
	if (reg->loop.peer)
		ib_destroy_qp(reg->loop.peer);
	if (reg->cq)
		ib_destroy_cq(reg->cq);
	reg->loop.qp = NULL;
	reg->loop.peer = NULL;
	reg->cq = NULL;
}

void ndk_reg_destroy(struct ndk_reg *reg)
{
	ndk_reg_teardown(reg);
	mutex_destroy(&reg->lock);
}

/* On iWARP the loop needs a second QP as its far end. */
static int ndk_reg_setup(struct ndk_pd *pd)
{
	struct ndk_adapter *adapter = pd->obj.adapter;
	struct ndk_reg *reg = &pd->reg;
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 2, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_cq_init_attr cq_attr = { .cqe = 4 };
	struct ib_qp *qp;
	int err;

	/*
	 * Polled by the request itself, which sleeps until the completion
	 * handler wakes it when polling finds nothing: see ndk_reg_post().
	 */
	reg->cq = NDK_FI_PTR(ib_create_cq(pd->ibpd->device, ndk_reg_comp, NULL,
					  reg, &cq_attr));
	if (IS_ERR(reg->cq)) {
		err = PTR_ERR(reg->cq);
		reg->cq = NULL;
		return err;
	}
	init.send_cq = reg->cq;
	init.recv_cq = reg->cq;
	qp = NDK_FI_PTR(ib_create_qp(pd->ibpd, &init));
	if (IS_ERR(qp)) {
		err = PTR_ERR(qp);
		goto fail;
	}
	reg->loop.qp = qp;
	if (rdma_protocol_iwarp(adapter->ibdev, adapter->port)) {
		qp = NDK_FI_PTR(ib_create_qp(pd->ibpd, &init));
		if (IS_ERR(qp)) {
			err = PTR_ERR(qp);
			goto fail;
		}
		reg->loop.peer = qp;
	}
	err = ndk_loop_connect(adapter, &reg->loop);
	if (err)
		goto fail;
	return 0;
fail:
	ndk_reg_teardown(reg);
	return err;
}

/*
 * How long ndk_reg_post() polls the registration CQ before it sleeps
 * until the CQ's completion handler wakes it. Hardware completes a local
 * request within microseconds, siw inside ib_post_send(), 6.1's rxe in
 * tasklets that the poll loop runs, 6.12's rxe in a work item, which
 * cond_resched() in the loop lets run if it was queued on this CPU. The
 * request mostly runs in the consumer's own thread, which waits for it
 * anyway: polling finds the completion without a sleep and a wakeup.
 * Under TCG on 6.12, 16 polls slept in 98 % of the requests, 1 ms of
 * polling in 0.3 % (5 % on a loaded host), which halved a registration;
 * 0.2 ms and 5 ms did as well as 1 ms on a quiet host, 0.1 ms still
 * slept in 28 % of them on a loaded one (see
 * Documentation/ndk/performance.rst). A device slower than this is
 * waited for asleep.
 */
#define NDK_REG_SPIN_NS	(1000 * NSEC_PER_USEC)
/* A wakeup that never came is noticed by polling again this often. */
#define NDK_REG_WAIT	HZ

/*
 * Post @wr (IB_WR_REG_MR or IB_WR_LOCAL_INV) on the PD's registration QP
 * and wait for its completion: poll for up to NDK_REG_SPIN_NS, then
 * sleep until the CQ's completion handler reports it. Sleeps.
 */
static NTSTATUS ndk_reg_post(struct ndk_pd *pd, struct ib_send_wr *wr)
{
	struct ndk_reg *reg = &pd->reg;
	struct ib_wc wc = { .status = IB_WC_SUCCESS };
	u64 spin_end = 0;
	int err = 0, n = 0, ret;

	wr->send_flags = IB_SEND_SIGNALED;
	mutex_lock(&reg->lock);
	/* The registration QP is connected: see ndk_driver_going(). */
	if (ndk_driver_going(pd->ibpd->device))
		err = -ENODEV;
	else if (!reg->loop.qp)
		err = ndk_reg_setup(pd);
	if (!err) {
		err = NDK_FI_ERR(ib_post_send(reg->loop.qp, wr, NULL));
		spin_end = ktime_get_ns() + NDK_REG_SPIN_NS;
	}
	/* The device completes the request, if only by flushing it. */
	while (!err && !n) {
		n = ib_poll_cq(reg->cq, 1, &wc);
		if (n < 0) {
			err = n;
		} else if (!n && ktime_get_ns() < spin_end) {
			/*
			 * 6.1's rxe completes the request in tasklets that
			 * ib_post_send() raised on this CPU: run them now
			 * rather than wait for ksoftirqd or a tick.
			 */
			local_bh_disable();
			local_bh_enable();
			cond_resched();
		} else if (!n) {
			/*
			 * Arm, then poll again if the request completed
			 * meanwhile; else the handler's complete() ends
			 * the wait. A wakeup left over from an earlier arm
			 * only costs another poll.
			 */
			reinit_completion(&reg->done);
			ret = ib_req_notify_cq(reg->cq, IB_CQ_NEXT_COMP |
					       IB_CQ_REPORT_MISSED_EVENTS);
			if (ret < 0) {
				n = ret;
				err = ret;
			} else if (!ret) {
				wait_for_completion_timeout(&reg->done,
							    NDK_REG_WAIT);
			}
		}
	}
	/* A failed request leaves the QP in error: start afresh. */
	if (n < 0 || wc.status != IB_WC_SUCCESS)
		ndk_reg_teardown(reg);
	mutex_unlock(&reg->lock);
	if (err)
		return ndk_status_from_errno(err);
	return ndk_status_from_wc(wc.status);
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

/* Forget everything; the tokens die with the verbs MRs. */
static void ndk_mr_release(struct ndk_mr *mr)
{
	if (mr->ibmr) {
		ib_dereg_mr(mr->ibmr);
		mr->ibmr = NULL;
	}
	if (mr->spare) {
		ib_dereg_mr(mr->spare);
		mr->spare = NULL;
	}
	ndk_mr_unmap(mr);
	kfree(mr->frsg);
	mr->frsg = NULL;
}

/* Invalidate @key on the PD's registration QP. Sleeps. */
static NTSTATUS ndk_reg_invalidate(struct ndk_pd *pd, u32 key)
{
	struct ib_send_wr wr = {
		.opcode = IB_WR_LOCAL_INV,
		.ex.invalidate_rkey = key,
	};

	return ndk_reg_post(pd, &wr);
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
void ndk_mr_revoke_windows(struct ndk_mr *mr)
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
 * NdkDeregisterMr: invalidate the verbs MR, which kills both tokens, and
 * keep it for the next NdkRegisterMr of as many pages or fewer, which
 * then skips ib_alloc_mr() (about 40 % of a registration on rxe). If the
 * invalidation fails, the MR is destroyed instead, which kills the tokens
 * just as well.
 */
static void ndk_mr_unregister(struct ndk_mr *mr)
{
	struct ib_mr *ibmr = mr->ibmr;
	struct ib_send_wr wr = {
		.opcode = IB_WR_LOCAL_INV,
		.ex.invalidate_rkey = ibmr->rkey,
	};

	WRITE_ONCE(mr->ibmr, NULL);
	ndk_mr_revoke_windows(mr);
	if (ndk_reg_post(mr->pd, &wr) == STATUS_SUCCESS)
		mr->spare = ibmr;
	else
		ib_dereg_mr(ibmr);
	ndk_mr_unmap(mr);
}

/*
 * The verbs MR for a registration of @pages pages: the one the last
 * deregistration kept, under a new key so that its old tokens stay dead,
 * or a new one.
 */
static struct ib_mr *ndk_mr_get_ibmr(struct ndk_mr *mr, u32 pages)
{
	struct ib_mr *ibmr = mr->spare;

	mr->spare = NULL;
	if (ibmr && pages <= mr->max_pages) {
		ib_update_fast_reg_key(ibmr, ib_inc_rkey(ibmr->rkey));
		return ibmr;
	}
	if (ibmr)
		ib_dereg_mr(ibmr);
	ibmr = NDK_FI_PTR(ib_alloc_mr(mr->pd->ibpd, IB_MR_TYPE_MEM_REG, pages));
	if (!IS_ERR(ibmr))
		mr->max_pages = pages;
	return ibmr;
}

static int ndk_mr_collect(struct ndk_pgwalk *w, struct page *page, u32 i)
{
	((struct page **)w->arg)[i] = page;
	return 0;
}

static NTSTATUS ndk_mr_do_register(struct ndk_mr *mr)
{
	struct ib_device *dev = mr->pd->ibpd->device;
	struct ib_reg_wr wr = { .wr.opcode = IB_WR_REG_MR };
	struct ndk_pgwalk w = {};
	struct page **pages;
	struct ib_mr *ibmr;
	int err, n;

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

	ibmr = ndk_mr_get_ibmr(mr, w.n);
	if (IS_ERR(ibmr))
		return ndk_status_from_errno(PTR_ERR(ibmr));
	mr->ibmr = ibmr;
	n = NDK_FI_ERR(ib_map_mr_sg(ibmr, mr->sgt.sgl, mr->sgt.nents, NULL, PAGE_SIZE));
	if (n != mr->sgt.nents)
		return n < 0 ? ndk_status_from_errno(n) :
			       STATUS_INVALID_PARAMETER;
	/* Peers address the region by the MDL's virtual address. */
	ibmr->iova = mr->mdl->va;
	wr.mr = ibmr;
	wr.key = ibmr->rkey;
	wr.access = mr->access;
	return ndk_reg_post(mr->pd, &wr.wr);
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
	NTSTATUS status;

	switch (mr->op) {
	case NDK_MR_REGISTER:
		status = ndk_mr_do_register(mr);
		break;
	case NDK_MR_DEREGISTER:
		ndk_mr_unregister(mr);
		return STATUS_SUCCESS;
	default:
		status = ndk_mr_init_fast(mr);
		break;
	}
	/* A failure leaves nothing registered or initialized. */
	if (status)
		ndk_mr_release(mr);
	return status;
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
 * There register and deregister always pend.
 */
static NTSTATUS ndk_mr_request(struct ndk_mr *mr, enum ndk_mr_op op,
			       NDK_FN_REQUEST_COMPLETION cb, void *ctx)
{
	bool iwarp = mr->obj.adapter->info.RdmaTechnology == NdkiWarp;
	NTSTATUS status;

	mr->op = op;
	ndk_obj_get(&mr->obj);
	if ((iwarp && op != NDK_MR_INIT_FAST) || !ndk_caller_may_sleep()) {
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
	int access = ndk_mr_access(Flags, adapter->info.RdmaTechnology ==
					 NdkiWarp);

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
	struct ib_mr *ibmr = READ_ONCE(to_ndk_mr(pNdkMr)->ibmr);

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
}

static void ndk_mr_free(struct ndk_obj *obj)
{
	kmem_cache_free(ndk_mr_cache, container_of(obj, struct ndk_mr, obj));
}

static const struct ndk_obj_ops ndk_mr_ops = {
	.create = ndk_mr_create,
	.destroy = ndk_mr_destroy,
	.free = ndk_mr_free,
};

NDK_OBJ_CHECK_LAYOUT(struct ndk_mr);

/**
 * ndk_create_mr() - NdkCreateMr
 * @pNdkPd: protection domain
 * @FastRegister: TRUE for an MR that NdkFastRegister fills, FALSE for one
 *	that NdkRegisterMr registers
 * @CreateCompletion: called with the new MR, from ndk_wq
 * @RequestContext: passed back to @CreateCompletion
 * @ppNdkMr: unused; creation always completes asynchronously
 *
 * Callable from atomic context.
 *
 * Return: STATUS_PENDING, STATUS_INVALID_PARAMETER or
 * STATUS_INSUFFICIENT_RESOURCES.
 */
NTSTATUS ndk_create_mr(NDK_PD *pNdkPd, BOOLEAN FastRegister,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_MR **ppNdkMr)
{
	struct ndk_pd *pd = container_of(pNdkPd, struct ndk_pd, ndk);
	struct ndk_mr *mr;

	if (!pNdkPd || !CreateCompletion)
		return STATUS_INVALID_PARAMETER;
	mr = NDK_FI_NULL(kmem_cache_zalloc(ndk_mr_cache, GFP_ATOMIC));
	if (!mr)
		return STATUS_INSUFFICIENT_RESOURCES;
	mr->ndk.Dispatch = &ndk_mr_dispatch;
	mr->pd = pd;
	mr->fast = FastRegister;
	INIT_WORK(&mr->work, ndk_mr_work);
	ndk_obj_init(&mr->obj, &mr->ndk.Header, NdkObjectTypeMr, &ndk_mr_ops,
		     &pd->obj);
	return ndk_obj_create_async(&mr->obj, CreateCompletion,
				    RequestContext);
}

/* ------------------------------------------------------------------ */
/* Logical address mappings                                            */

static int ndk_lam_map(struct ndk_pgwalk *w, struct page *page, u32 i)
{
	NDK_LOGICAL_ADDRESS_MAPPING *lam = w->arg;
	struct ib_device *dev = lam->AdapterContext;
	u64 addr;

	addr = ib_dma_map_page(dev, page, 0, PAGE_SIZE, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, addr))
		return -ENOMEM;
	lam->AdapterPageArray[i] = addr;
	lam->AdapterPageCount = i + 1;
	return 0;
}

/**
 * ndk_release_lam() - NdkReleaseLAM
 * @pNdkAdapter: the adapter
 * @pNdkLAM: a mapping NdkBuildLAM built
 *
 * Unmaps every page. Callable from atomic context.
 */
void ndk_release_lam(NDK_ADAPTER *pNdkAdapter,
		     NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM)
{
	struct ib_device *dev;
	ULONG i;

	if (!pNdkLAM || !pNdkLAM->AdapterContext)
		return;
	dev = pNdkLAM->AdapterContext;
	for (i = 0; i < pNdkLAM->AdapterPageCount; i++)
		ib_dma_unmap_page(dev, pNdkLAM->AdapterPageArray[i],
				  PAGE_SIZE, DMA_BIDIRECTIONAL);
	pNdkLAM->AdapterPageCount = 0;
	pNdkLAM->AdapterContext = NULL;
}

/**
 * ndk_build_lam() - NdkBuildLAM
 * @pNdkAdapter: the adapter
 * @Mdl: the memory, virtually contiguous over @Length bytes
 * @Length: bytes to map
 * @RequestCompletion: not called: the mapping completes inline
 * @RequestContext: unused
 * @pNdkLAM: receives the device address of each page
 * @pLAMSize: size of @pNdkLAM in; bytes used, or needed, out
 * @pFBO: receives the offset of the first byte in the first page
 *
 * Maps page by page with ib_dma_map_page(), which never sleeps, so the
 * request never pends. Callable from atomic context.
 *
 * Return: STATUS_SUCCESS; STATUS_BUFFER_TOO_SMALL with the size needed;
 * STATUS_INVALID_PARAMETER for memory that is not virtually contiguous;
 * STATUS_INSUFFICIENT_RESOURCES when a page cannot be mapped (nothing
 * stays mapped then).
 */
NTSTATUS ndk_build_lam(NDK_ADAPTER *pNdkAdapter, MDL *Mdl, SIZE_T Length,
		       NDK_FN_REQUEST_COMPLETION RequestCompletion,
		       PVOID RequestContext,
		       NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM, ULONG *pLAMSize,
		       ULONG *pFBO)
{
	struct ndk_adapter *adapter =
		container_of(pNdkAdapter, struct ndk_adapter, ndk);
	struct ndk_pgwalk w = {};
	size_t need;
	int err;

	if (!pNdkAdapter || !Mdl || !pLAMSize || !pFBO || !Mdl->va)
		return STATUS_INVALID_PARAMETER;
	err = ndk_pgwalk(&w, Mdl, Length);
	if (err)
		return ndk_pgwalk_status(err);
	/* What Windows consumers allocate: the header, then w.n entries. */
	need = size_add(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray),
			array_size(w.n, sizeof(NDK_LOGICAL_ADDRESS)));
	if (!pNdkLAM || *pLAMSize < need) {
		*pLAMSize = need;
		return STATUS_BUFFER_TOO_SMALL;
	}
	pNdkLAM->AdapterContext = adapter->ibdev;
	pNdkLAM->AdapterPageCount = 0;
	w = (struct ndk_pgwalk){ .fn = ndk_lam_map, .arg = pNdkLAM };
	err = ndk_pgwalk(&w, Mdl, Length);
	if (err) {
		ndk_release_lam(pNdkAdapter, pNdkLAM);
		return ndk_pgwalk_status(err);
	}
	*pLAMSize = need;
	*pFBO = w.fbo;
	return STATUS_SUCCESS;
}
