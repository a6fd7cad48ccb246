// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * NDK_QP: a reliable-connected queue pair. It is a successor of its PD
 * and of both of its CQs, so none of them completes its close while the
 * QP lives. Connectors move it through its states; the posting functions
 * arrive with the data path.
 */
#include "ndk_priv.h"

static struct ndk_cq *ndk_cq_of(NDK_CQ *cq)
{
	return container_of(cq, struct ndk_cq, ndk);
}

static NTSTATUS ndk_qp_create(struct ndk_obj *obj)
{
	struct ndk_qp *qp = container_of(obj, struct ndk_qp, obj);
	struct ndk_pd *pd = container_of(obj->parent, struct ndk_pd, obj);
	struct ib_qp *ibqp;

	qp->init.send_cq = qp->icq->ibcq;
	qp->init.recv_cq = qp->rcq->ibcq;
	ibqp = ib_create_qp(pd->ibpd, &qp->init);
	if (IS_ERR(ibqp))
		return ndk_status_from_errno(PTR_ERR(ibqp));
	qp->ibqp = ibqp;
	return STATUS_SUCCESS;
}

static void ndk_qp_destroy(struct ndk_obj *obj)
{
	struct ndk_qp *qp = container_of(obj, struct ndk_qp, obj);

	if (qp->ibqp)
		ib_destroy_qp(qp->ibqp);
}

static void ndk_qp_free(struct ndk_obj *obj)
{
	kfree(container_of(obj, struct ndk_qp, obj));
}

static const struct ndk_obj_ops ndk_qp_ops = {
	.create = ndk_qp_create,
	.destroy = ndk_qp_destroy,
	.free = ndk_qp_free,
};

/*
 * Posting arrives with the data path. Until then nothing can be posted,
 * and nothing is outstanding for NdkFlush to cancel.
 */
static void ndk_flush(NDK_QP *pNdkQp)
{
}

static NTSTATUS ndk_send(NDK_QP *pNdkQp, PVOID RequestContext,
			 const NDK_SGE *pSgl, ULONG nSge, ULONG Flags)
{
	return STATUS_NOT_SUPPORTED;
}

static NTSTATUS ndk_receive(NDK_QP *pNdkQp, PVOID RequestContext,
			    const NDK_SGE *pSgl, ULONG nSge)
{
	return STATUS_NOT_SUPPORTED;
}

static NTSTATUS ndk_bind(NDK_QP *pNdkQp, PVOID RequestContext, NDK_MR *pMr,
			 NDK_MW *pMw, PVOID VirtualAddress, SIZE_T Length,
			 ULONG Flags)
{
	return STATUS_NOT_SUPPORTED;
}

static NTSTATUS ndk_fast_register(NDK_QP *pNdkQp, PVOID RequestContext,
				  NDK_MR *pMr, ULONG AdapterPageCount,
				  const NDK_LOGICAL_ADDRESS *AdapterPageArray,
				  ULONG FBO, SIZE_T Length,
				  PVOID BaseVirtualAddress, ULONG Flags)
{
	return STATUS_NOT_SUPPORTED;
}

static NTSTATUS ndk_invalidate(NDK_QP *pNdkQp, PVOID RequestContext,
			       NDK_OBJECT_HEADER *pNdkMrOrMw, ULONG Flags)
{
	return STATUS_NOT_SUPPORTED;
}

static NTSTATUS ndk_read(NDK_QP *pNdkQp, PVOID RequestContext,
			 const NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress,
			 UINT32 RemoteToken, ULONG Flags)
{
	return STATUS_NOT_SUPPORTED;
}

static NTSTATUS ndk_write(NDK_QP *pNdkQp, PVOID RequestContext,
			  const NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress,
			  UINT32 RemoteToken, ULONG Flags)
{
	return STATUS_NOT_SUPPORTED;
}

static NTSTATUS ndk_send_and_invalidate(NDK_QP *pNdkQp, PVOID RequestContext,
					const NDK_SGE *pSgl, ULONG nSge,
					ULONG Flags, UINT32 RemoteToken)
{
	return STATUS_NOT_SUPPORTED;
}

static const NDK_QP_DISPATCH ndk_qp_dispatch = {
	.NdkCloseQp = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkFlush = ndk_flush,
	.NdkSend = ndk_send,
	.NdkReceive = ndk_receive,
	.NdkBind = ndk_bind,
	.NdkFastRegister = ndk_fast_register,
	.NdkInvalidate = ndk_invalidate,
	.NdkRead = ndk_read,
	.NdkWrite = ndk_write,
	.NdkSendAndInvalidate = ndk_send_and_invalidate,
};

NDK_OBJ_CHECK_LAYOUT(struct ndk_qp);

/* A live CQ of @adapter, or NULL. */
static struct ndk_cq *ndk_qp_cq(NDK_CQ *cq, struct ndk_adapter *adapter)
{
	if (!cq || cq->Header.ObjectType != NdkObjectTypeCq)
		return NULL;
	if (ndk_cq_of(cq)->obj.adapter != adapter ||
	    READ_ONCE(ndk_cq_of(cq)->obj.state) != NDK_OBJ_LIVE)
		return NULL;
	return ndk_cq_of(cq);
}

/**
 * ndk_create_qp() - NdkCreateQp
 * @pNdkPd: protection domain
 * @pReceiveCq: CQ for receive completions
 * @pInitiatorCq: CQ for initiator completions (may equal @pReceiveCq)
 * @QPContext: returned in every NDK_RESULT of this QP
 * @ReceiveQueueDepth: up to MaxReceiveQueueDepth
 * @InitiatorQueueDepth: up to MaxInitiatorQueueDepth
 * @MaxReceiveRequestSge: up to the adapter's MaxReceiveRequestSge
 * @MaxInitiatorRequestSge: up to the adapter's MaxInitiatorRequestSge
 * @InlineDataSize: up to MaxInlineDataSize
 * @CreateCompletion: called with the new QP, from ndk_wq
 * @RequestContext: passed back to @CreateCompletion
 * @ppNdkQp: unused; creation always completes asynchronously
 *
 * Callable from atomic context.
 *
 * Return: STATUS_PENDING; STATUS_INVALID_PARAMETER for limits beyond
 * the adapter's, CQs of another adapter or not CQs at all;
 * STATUS_INSUFFICIENT_RESOURCES.
 */
NTSTATUS ndk_create_qp(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq,
		       NDK_CQ *pInitiatorCq, PVOID QPContext,
		       ULONG ReceiveQueueDepth, ULONG InitiatorQueueDepth,
		       ULONG MaxReceiveRequestSge, ULONG MaxInitiatorRequestSge,
		       ULONG InlineDataSize,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_QP **ppNdkQp)
{
	struct ndk_pd *pd = container_of(pNdkPd, struct ndk_pd, ndk);
	const NDK_ADAPTER_INFO *info;
	struct ndk_cq *rcq, *icq;
	struct ndk_qp *qp;

	if (!pNdkPd || !CreateCompletion)
		return STATUS_INVALID_PARAMETER;
	info = &pd->obj.adapter->info;
	rcq = ndk_qp_cq(pReceiveCq, pd->obj.adapter);
	icq = ndk_qp_cq(pInitiatorCq, pd->obj.adapter);
	if (!rcq || !icq ||
	    ReceiveQueueDepth > info->MaxReceiveQueueDepth ||
	    InitiatorQueueDepth > info->MaxInitiatorQueueDepth ||
	    MaxReceiveRequestSge > info->MaxReceiveRequestSge ||
	    MaxInitiatorRequestSge > info->MaxInitiatorRequestSge ||
	    InlineDataSize > info->MaxInlineDataSize)
		return STATUS_INVALID_PARAMETER;

	qp = kzalloc(sizeof(*qp), GFP_ATOMIC);
	if (!qp)
		return STATUS_INSUFFICIENT_RESOURCES;
	qp->ndk.Dispatch = &ndk_qp_dispatch;
	qp->context = QPContext;
	qp->rcq = rcq;
	qp->icq = icq;
	qp->init.qp_type = IB_QPT_RC;
	qp->init.sq_sig_type = IB_SIGNAL_REQ_WR;
	qp->init.qp_context = qp;
	qp->init.cap.max_recv_wr = ReceiveQueueDepth;
	qp->init.cap.max_send_wr = InitiatorQueueDepth;
	qp->init.cap.max_recv_sge = MaxReceiveRequestSge;
	qp->init.cap.max_send_sge = MaxInitiatorRequestSge;
	qp->init.cap.max_inline_data = InlineDataSize;
	ndk_obj_init(&qp->obj, &qp->ndk.Header, NdkObjectTypeQp, &ndk_qp_ops,
		     &pd->obj);
	ndk_obj_add_antecedent(&qp->obj, &rcq->obj);
	ndk_obj_add_antecedent(&qp->obj, &icq->obj);
	return ndk_obj_create_async(&qp->obj, CreateCompletion,
				    RequestContext);
}
