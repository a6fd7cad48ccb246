// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * NDK_PD: a protection domain. Created without IB_PD_UNSAFE_GLOBAL_RKEY:
 * remote access always goes through a registered region.
 */
#include "ndk_priv.h"

static struct ndk_pd *to_ndk_pd(NDK_PD *pd)
{
	return container_of(pd, struct ndk_pd, ndk);
}

static NTSTATUS ndk_pd_create(struct ndk_obj *obj)
{
	struct ndk_pd *pd = container_of(obj, struct ndk_pd, obj);
	struct ib_pd *ibpd;

	ibpd = NDK_FI_PTR(ib_alloc_pd(obj->adapter->ibdev, 0));
	if (IS_ERR(ibpd))
		return ndk_status_from_errno(PTR_ERR(ibpd));
	pd->ibpd = ibpd;
	ndk_reg_init(&pd->reg);
	return ndk_status_from_errno(ndk_mr_track_pd(pd));
}

static void ndk_pd_destroy(struct ndk_obj *obj)
{
	struct ndk_pd *pd = container_of(obj, struct ndk_pd, obj);

	mutex_destroy(&pd->mw_lock);
	if (!pd->ibpd)
		return;
	ndk_mr_untrack_pd(pd);
	ndk_reg_destroy(&pd->reg);
	ib_dealloc_pd(pd->ibpd);
}

static void ndk_pd_free(struct ndk_obj *obj)
{
	kfree(container_of(obj, struct ndk_pd, obj));
}

/* Destroying the PD tears its registration path down. */
static bool ndk_pd_inline_ok(struct ndk_obj *obj)
{
	return READ_ONCE(obj->state) != NDK_OBJ_CLOSING ||
	       ndk_reg_may_run();
}

static const struct ndk_obj_ops ndk_pd_ops = {
	.create = ndk_pd_create,
	.destroy = ndk_pd_destroy,
	.free = ndk_pd_free,
	.inline_ok = ndk_pd_inline_ok,
};

/*
 * The local DMA lkey grants local read and write of any DMA address and
 * never remote access, which is what the privileged token must be; siw
 * answers a peer's read through it all the same (deviations.rst).
 */
static void ndk_get_privileged_mr_token(NDK_PD *pNdkPd, UINT32 *pToken)
{
	*pToken = to_ndk_pd(pNdkPd)->ibpd->local_dma_lkey;
}

static const NDK_PD_DISPATCH ndk_pd_dispatch = {
	.NdkClosePd = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkCreateMr = ndk_create_mr,
	.NdkCreateMw = ndk_create_mw,
	.NdkCreateSrq = ndk_create_srq,
	.NdkCreateQp = ndk_create_qp,
	.NdkCreateQpWithSrq = ndk_create_qp_with_srq,
	.NdkGetPrivilegedMemoryRegionToken = ndk_get_privileged_mr_token,
};

NDK_OBJ_CHECK_LAYOUT(struct ndk_pd);

/**
 * ndk_create_pd() - NdkCreatePd
 * @pNdkAdapter: the adapter
 * @CreateCompletion: called with the new PD, from ndk_wq, when the
 *	creation pends
 * @RequestContext: passed back to @CreateCompletion
 * @ppNdkPd: receives the PD when the creation completes inline
 *
 * Callable from atomic context. Where the kernel can tell that the caller
 * may sleep, and @ppNdkPd is given, the PD is created inline.
 *
 * Return: STATUS_SUCCESS (created inline), STATUS_PENDING,
 * STATUS_INVALID_PARAMETER, STATUS_INSUFFICIENT_RESOURCES, or the
 * failure of an inline creation.
 */
NTSTATUS ndk_create_pd(NDK_ADAPTER *pNdkAdapter,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_PD **ppNdkPd)
{
	struct ndk_adapter *adapter;
	struct ndk_pd *pd;
	NTSTATUS status;

	if (!pNdkAdapter || !CreateCompletion)
		return STATUS_INVALID_PARAMETER;
	adapter = container_of(pNdkAdapter, struct ndk_adapter, ndk);
	pd = NDK_FI_NULL(kzalloc(sizeof(*pd), GFP_ATOMIC));
	if (!pd)
		return STATUS_INSUFFICIENT_RESOURCES;
	pd->ndk.Dispatch = &ndk_pd_dispatch;
	mutex_init(&pd->mw_lock);
	INIT_LIST_HEAD(&pd->mws);
	ndk_obj_init(&pd->obj, &pd->ndk.Header, NdkObjectTypePd, &ndk_pd_ops,
		     &adapter->obj);
	status = ndk_obj_create(&pd->obj, CreateCompletion, RequestContext,
				!!ppNdkPd);
	if (status == STATUS_SUCCESS)
		*ppNdkPd = &pd->ndk;
	return status;
}
