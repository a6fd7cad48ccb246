// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * NDK_MW: memory windows. Kernel verbs give kernel consumers no memory
 * windows of their own, so a window is a fast-register MR of its PD,
 * large enough for any registered region (MaxWindowSize). NdkBind posts
 * an IB_WR_REG_MR of the bound region's pages for the window's range on
 * the consumer's QP, ordered with its other requests; each bind gives
 * the window a new key, so an earlier token does not open the new range.
 * NdkInvalidate and a peer's send with invalidate revoke it like any
 * fast registration. When the region's memory goes (NdkDeregisterMr or
 * its close), mr.c revokes the windows bound to it first.
 */
#include <linux/scatterlist.h>
#include "ndk_priv.h"

static struct ndk_mw *to_ndk_mw(NDK_MW *mw)
{
	return container_of(mw, struct ndk_mw, ndk);
}

/**
 * ndk_mw_of() - a live window of @pd
 * @hdr: the consumer's object header, or NULL
 * @pd: the PD it must belong to
 *
 * Return: the window, or NULL when @hdr names none.
 */
struct ndk_mw *ndk_mw_of(const NDK_OBJECT_HEADER *hdr, struct ndk_pd *pd)
{
	struct ndk_mw *mw;

	if (!hdr || hdr->ObjectType != NdkObjectTypeMw)
		return NULL;
	mw = container_of(hdr, struct ndk_mw, ndk.Header);
	if (mw->pd != pd || READ_ONCE(mw->obj.state) != NDK_OBJ_LIVE)
		return NULL;
	return mw;
}

#define NDK_BIND_FLAGS	(NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE | \
			 NDK_OP_FLAG_ALLOW_REMOTE_READ |		  \
			 NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_DEFER)
/* The bit of NDK_OP_FLAG_ALLOW_REMOTE_WRITE beyond local write. */
#define NDK_BIND_REMOTE_WRITE	(NDK_OP_FLAG_ALLOW_REMOTE_WRITE & \
				 ~NDK_OP_FLAG_ALLOW_LOCAL_WRITE)

/* A region NdkRegisterMr registered on @pd, with no request pending. */
static struct ndk_mr *ndk_mw_region(NDK_MR *pMr, struct ndk_pd *pd)
{
	struct ndk_mr *mr;

	if (!pMr || pMr->Header.ObjectType != NdkObjectTypeMr)
		return NULL;
	mr = container_of(pMr, struct ndk_mr, ndk);
	if (mr->fast || mr->pd != pd || !READ_ONCE(mr->ibmr) ||
	    atomic_read(&mr->busy) ||
	    READ_ONCE(mr->obj.state) != NDK_OBJ_LIVE)
		return NULL;
	return mr;
}

/*
 * Fill the window's scatterlist with the device addresses of bytes
 * [@off, @end) of the region: the pieces of its mapped table that the
 * range covers. Only the first and last may be partial pages, as
 * ib_map_mr_sg() wants.
 */
static int ndk_mw_fill(struct ndk_mw *mw, struct ndk_mr *mr, u64 off,
		       u64 end)
{
	struct scatterlist *sg, *e = NULL;
	u64 pos = 0, from, to;
	u32 i, n = 0;

	for_each_sgtable_dma_sg(&mr->sgt, sg, i) {
		to = pos + sg_dma_len(sg);
		if (to > off) {
			if (n == mw->max_pages)
				return -EINVAL;
			from = max(off, pos);
			e = &mw->sg[n++];
			sg_unmark_end(e);
			sg_dma_address(e) = sg_dma_address(sg) + (from - pos);
			sg_dma_len(e) = min(end, to) - from;
		}
		if (to >= end)
			break;
		pos = to;
	}
	if (!e)
		return -EINVAL;
	sg_mark_end(e);
	return n;
}

/**
 * ndk_mw_bind_wr() - check an NdkBind and build its registration
 * @qp: the QP it is posted on
 * @wr: the request to fill
 * @pMr: the region, registered by NdkRegisterMr on the QP's PD
 * @pMw: a window of the QP's PD
 * @va: first byte of the range, an address inside the region
 * @Length: bytes of the range, all inside the region
 * @Flags: NDK_OP_FLAG_* of the bind
 *
 * The window gets its next key here, so NdkGetRemoteTokenFromMw returns
 * the new token once NdkBind returns. Allocates nothing; atomic-safe.
 *
 * Return: STATUS_SUCCESS; STATUS_CONNECTION_INVALID; STATUS_ACCESS_VIOLATION
 * for remote write on a region without local write;
 * STATUS_INVALID_BUFFER_SIZE beyond MaxWindowSize;
 * STATUS_INVALID_PARAMETER for anything else that does not fit.
 */
NTSTATUS ndk_mw_bind_wr(struct ndk_qp *qp, struct ib_reg_wr *wr,
			NDK_MR *pMr, NDK_MW *pMw, u64 va, SIZE_T Length,
			ULONG Flags)
{
	struct ndk_pd *pd = container_of(qp->obj.parent, struct ndk_pd, obj);
	struct ndk_mw *mw = pMw ? ndk_mw_of(&pMw->Header, pd) : NULL;
	struct ndk_mr *mr = ndk_mw_region(pMr, pd);
	u64 base, off;
	int n;

	if (!READ_ONCE(qp->connected))
		return STATUS_CONNECTION_INVALID;
	if (!mw || !mr || (Flags & ~NDK_BIND_FLAGS) || !va || !Length)
		return STATUS_INVALID_PARAMETER;
	if (Length > qp->obj.adapter->info.MaxWindowSize)
		return STATUS_INVALID_BUFFER_SIZE;
	base = READ_ONCE(mr->ibmr)->iova;
	off = va - base;
	if (va < base || off >= mr->length || Length > mr->length - off)
		return STATUS_INVALID_PARAMETER;
	/* As in verbs, a writable window needs a locally writable region. */
	if ((Flags & NDK_BIND_REMOTE_WRITE) &&
	    !(mr->access & IB_ACCESS_LOCAL_WRITE))
		return STATUS_ACCESS_VIOLATION;

	n = ndk_mw_fill(mw, mr, off, off + Length);
	if (n <= 0 || ib_map_mr_sg(mw->ibmr, mw->sg, n, NULL, PAGE_SIZE) != n)
		return STATUS_INVALID_PARAMETER;
	/* Peers address the window by the region's addresses. */
	mw->ibmr->iova = va;
	ib_update_fast_reg_key(mw->ibmr, ib_inc_rkey(mw->ibmr->rkey));
	wr->mr = mw->ibmr;
	wr->key = mw->ibmr->rkey;
	if (Flags & NDK_OP_FLAG_ALLOW_REMOTE_READ)
		wr->access |= IB_ACCESS_REMOTE_READ;
	if (Flags & NDK_BIND_REMOTE_WRITE)
		wr->access |= IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE;
	WRITE_ONCE(mw->mr, mr);
	return STATUS_SUCCESS;
}

/* The token of the last bind; before the first, one that opens nothing. */
static UINT32 ndk_get_remote_token_from_mw(NDK_MW *pNdkMw)
{
	return to_ndk_mw(pNdkMw)->ibmr->rkey;
}

static const NDK_MW_DISPATCH ndk_mw_dispatch = {
	.NdkCloseMw = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkGetRemoteTokenFromMw = ndk_get_remote_token_from_mw,
};

static NTSTATUS ndk_mw_create(struct ndk_obj *obj)
{
	struct ndk_mw *mw = container_of(obj, struct ndk_mw, obj);
	struct ndk_pd *pd = mw->pd;
	struct ib_mr *ibmr;

	/* One page more than the size: a range need not start on a page. */
	mw->max_pages = DIV_ROUND_UP(obj->adapter->info.MaxWindowSize,
				     PAGE_SIZE) + 1;
	mw->sg = NDK_FI_NULL(kcalloc(mw->max_pages, sizeof(*mw->sg),
				     GFP_KERNEL));
	if (!mw->sg)
		return STATUS_INSUFFICIENT_RESOURCES;
	sg_init_table(mw->sg, mw->max_pages);
	ibmr = NDK_FI_PTR(ib_alloc_mr(pd->ibpd, IB_MR_TYPE_MEM_REG,
				      mw->max_pages));
	if (IS_ERR(ibmr))
		return ndk_status_from_errno(PTR_ERR(ibmr));
	mw->ibmr = ibmr;
	mutex_lock(&pd->mw_lock);
	list_add(&mw->pd_node, &pd->mws);
	mutex_unlock(&pd->mw_lock);
	return STATUS_SUCCESS;
}

/* Destroying the verbs MR kills the token, bound or not. */
static void ndk_mw_destroy(struct ndk_obj *obj)
{
	struct ndk_mw *mw = container_of(obj, struct ndk_mw, obj);

	if (!list_empty(&mw->pd_node)) {
		mutex_lock(&mw->pd->mw_lock);
		list_del_init(&mw->pd_node);
		mutex_unlock(&mw->pd->mw_lock);
	}
	if (mw->ibmr)
		ib_dereg_mr(mw->ibmr);
	kfree(mw->sg);
}

static void ndk_mw_free(struct ndk_obj *obj)
{
	kfree(container_of(obj, struct ndk_mw, obj));
}

/* Creation and destruction take the PD's window mutex. */
static bool ndk_mw_inline_ok(struct ndk_obj *obj)
{
	return ndk_reg_may_run();
}

static const struct ndk_obj_ops ndk_mw_ops = {
	.create = ndk_mw_create,
	.destroy = ndk_mw_destroy,
	.free = ndk_mw_free,
	.inline_ok = ndk_mw_inline_ok,
};

NDK_OBJ_CHECK_LAYOUT(struct ndk_mw);

/**
 * ndk_create_mw() - NdkCreateMw
 * @pNdkPd: protection domain
 * @CreateCompletion: called with the new window, from ndk_wq, when the
 *	creation pends
 * @RequestContext: passed back to @CreateCompletion
 * @ppNdkMw: receives the window when the creation completes inline
 *
 * Callable from atomic context. Where the kernel can tell that the caller
 * may sleep, and @ppNdkMw is given, the window is created inline.
 *
 * Return: STATUS_SUCCESS (created inline); STATUS_PENDING;
 * STATUS_INVALID_PARAMETER; STATUS_INSUFFICIENT_RESOURCES;
 * STATUS_NOT_SUPPORTED on a device without fast registration
 * (MaxWindowSize 0); the failure of an inline creation.
 */
NTSTATUS ndk_create_mw(NDK_PD *pNdkPd,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_MW **ppNdkMw)
{
	struct ndk_pd *pd = container_of(pNdkPd, struct ndk_pd, ndk);
	struct ndk_mw *mw;
	NTSTATUS status;

	if (!pNdkPd || !CreateCompletion)
		return STATUS_INVALID_PARAMETER;
	if (!pd->obj.adapter->info.MaxWindowSize)
		return STATUS_NOT_SUPPORTED;
	mw = NDK_FI_NULL(kzalloc(sizeof(*mw), GFP_ATOMIC));
	if (!mw)
		return STATUS_INSUFFICIENT_RESOURCES;
	mw->ndk.Dispatch = &ndk_mw_dispatch;
	mw->pd = pd;
	INIT_LIST_HEAD(&mw->pd_node);
	ndk_obj_init(&mw->obj, &mw->ndk.Header, NdkObjectTypeMw, &ndk_mw_ops,
		     &pd->obj);
	status = ndk_obj_create(&mw->obj, CreateCompletion, RequestContext,
				!!ppNdkMw);
	if (status == STATUS_SUCCESS)
		*ppNdkMw = &mw->ndk;
	return status;
}
