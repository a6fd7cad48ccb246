// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * NdkCreateQp and NdkCreateQpWithSrq, the QP type's operations that
 * create, destroy and free its verbs QP and rings, and what the device's
 * events and the QP's flush and sweep work do. The QP's calls and
 * dispatch table are in qp.c, which calls nothing here.
 */
#include "ndk_priv.h"
#include "sweep.h"

static struct ndk_cq *ndk_cq_of(NDK_CQ *cq)
{
	return container_of(cq, struct ndk_cq, ndk);
}

/*
 * Consumers post receives before they connect. IB and RoCE accept that
 * from INIT on, so the QP starts there; the connection moves it on.
 * iWARP QPs take receives in their idle state already.
 */
static int ndk_qp_to_init(struct ndk_qp *qp)
{
	struct ndk_adapter *adapter = qp->obj.adapter;
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.port_num = adapter->port,
		.qp_access_flags = IB_ACCESS_LOCAL_WRITE |
				   IB_ACCESS_REMOTE_READ |
				   IB_ACCESS_REMOTE_WRITE,
	};

	if (rdma_protocol_iwarp(adapter->ibdev, adapter->port))
		return 0;
	return NDK_FI_ERR(ib_modify_qp(qp->ibqp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			    IB_QP_PORT | IB_QP_ACCESS_FLAGS));
}

/*
 * The DEFER batch and its SGE arrays, one per request it holds, and a
 * spare array for each queue (ndk_sges_packed()), allocated once here so
 * that posting allocates nothing. Requests that go to the device at
 * once use the consumer's SGEs and need none of them. Not zeroed: an
 * entry is read only after a post has filled it.
 */
static int ndk_qp_alloc_held(struct ndk_qp *qp)
{
	qp->max_held = clamp(qp->sq.depth, 1U, (u32)NDK_DEFER_MAX);
	qp->held = NDK_FI_NULL(kvmalloc_array(qp->max_held, sizeof(*qp->held),
					      GFP_KERNEL));
	qp->isge = NDK_FI_NULL(kvmalloc_array((qp->max_held + 1) *
					      max(qp->max_isge, 1U) +
					      max(qp->max_rsge, 1U),
					      sizeof(*qp->isge), GFP_KERNEL));
	return qp->held && qp->isge ? 0 : -ENOMEM;
}

static NTSTATUS ndk_qp_create(struct ndk_obj *obj)
{
	struct ndk_qp *qp = container_of(obj, struct ndk_qp, obj);
	struct ndk_pd *pd = container_of(obj->parent, struct ndk_pd, obj);
	/* ndk_qp_new() adds the receive CQ, then the initiator CQ. */
	struct ndk_cq *rcq = container_of(obj->extra[0], struct ndk_cq, obj);
	struct ndk_cq *icq = container_of(obj->extra[1], struct ndk_cq, obj);
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.event_handler = ndk_qp_event,
		.qp_context = qp,
		.send_cq = icq->ibcq,
		.recv_cq = rcq->ibcq,
		.srq = qp->srq ? qp->srq->ibsrq : NULL,
		.cap = {
			.max_send_wr = qp->sq.depth,
			.max_recv_wr = qp->rq.depth,
			.max_send_sge = qp->max_isge,
			.max_recv_sge = qp->max_rsge,
			.max_inline_data = qp->inline_size,
		},
	};
	struct ib_qp *ibqp;
	int err;

	if (ndk_qp_alloc_held(qp))
		return STATUS_INSUFFICIENT_RESOURCES;
	/*
	 * The depths the consumer asked for, not what the device granted
	 * (often more): every device refuses the same request.
	 */
	if (ndk_ring_init(&qp->sq, qp->sq.depth) ||
	    (!qp->srq && ndk_ring_init(&qp->rq, qp->rq.depth)))
		return STATUS_INSUFFICIENT_RESOURCES;
	ibqp = NDK_FI_PTR(ib_create_qp(pd->ibpd, &init));
	if (IS_ERR(ibqp))
		return ndk_status_from_errno(PTR_ERR(ibqp));
	qp->ibqp = ibqp;
	err = ndk_wr_owner_add(obj);
	if (err)
		return ndk_status_from_errno(err);
	qp->sq.tag = ndk_wr_tag(obj, NDK_WR_SQ);
	qp->rq.tag = ndk_wr_tag(obj, NDK_WR_RQ);
	if (qp->srq) {
		spin_lock(&qp->srq->qps_lock);
		hlist_add_head_rcu(&qp->srq_node, &qp->srq->qps);
		spin_unlock(&qp->srq->qps_lock);
	}
	return ndk_status_from_errno(ndk_qp_to_init(qp));
}

#if IS_ENABLED(CONFIG_KUNIT)
static void (*ndk_qp_destroy_hook)(struct ib_qp *ibqp);

/**
 * ndk_qp_set_destroy_hook() - call @hook before each verbs QP is destroyed
 * @hook: called with the verbs QP, in process context; NULL for none
 *
 * The suites' way to play a driver that deletes a destroyed QP's
 * completions from its CQs, as mlx5 and mlx4 do.
 */
void ndk_qp_set_destroy_hook(void (*hook)(struct ib_qp *ibqp))
{
	WRITE_ONCE(ndk_qp_destroy_hook, hook);
}
EXPORT_SYMBOL_NDK_TEST(ndk_qp_set_destroy_hook);

static void ndk_qp_destroying(struct ib_qp *ibqp)
{
	void (*hook)(struct ib_qp *ibqp) = READ_ONCE(ndk_qp_destroy_hook);

	if (hook)
		hook(ibqp);
}
#else
/* Without KUnit there is no hook. */
static inline void ndk_qp_destroying(struct ib_qp *ibqp)
{
}
#endif

/* Destroy the verbs QP; the sweep reports what it still held. */
static void ndk_qp_destroy_now(struct ndk_qp *qp)
{
	cancel_delayed_work_sync(&qp->sweep_work);
	ndk_qp_destroying(qp->ibqp);
	ib_destroy_qp(qp->ibqp);
	ndk_qp_sweep_now(qp);
}

/*
 * Retirement: a closed QP keeps its verbs QP until its CQs hold nothing
 * of it. A driver may delete a destroyed QP's completions from its CQs
 * (mlx5 and mlx4 do), which would take results from the consumer, or
 * have the sweep report a request that succeeded as cancelled. And a
 * completion left behind names its QP by the verbs QP's address, which
 * is how an SRQ's receive finds its QP (ndk_srq_qp_context()): destroyed,
 * that memory could be a new QP's.
 *
 * Moved to the error state, the QP waits for each request of its own
 * queues to have had its result (the device's flush, polled, or the
 * sweep's, ndk_sweep_ms after the error move). A QP on an SRQ also waits
 * for the device to complete the receives it took, which it says with
 * IB_EVENT_QP_LAST_WQE_REACHED, or which it has done ndk_sweep_ms after
 * the error move where it does not say so (siw, 6.1's rxe); then
 * for a poll that finds the receive CQ empty: those results were polled.
 * Closing the QP's PD, one of its CQs or its SRQ ends the wait, as nobody
 * polls them any more: that close pends until the verbs QP is gone.
 *
 * The QP lingers on its antecedents (ndk_obj_linger()) and holds a sweep
 * reference meanwhile; what moves it on (its sweep, the device's event,
 * the poll, a closing antecedent) queues @retire_work, which rereads the
 * state.
 */

static bool ndk_qp_queues_done(struct ndk_qp *qp)
{
	return !ndk_ring_outstanding(&qp->sq) &&
	       (qp->srq || !ndk_ring_outstanding(&qp->rq));
}

static bool ndk_qp_srq_done(struct ndk_qp *qp)
{
	unsigned long ms = READ_ONCE(ndk_sweep_ms);

	return READ_ONCE(qp->last_wqe) ||
	       time_after_eq(jiffies, READ_ONCE(qp->error_at) +
				      msecs_to_jiffies(ms));
}

/*
 * End the retirement of @qp. Only @retire_work, which never runs twice at
 * once, moves the state on from NDK_RETIRE_WAIT.
 */
static void ndk_qp_retire_finish(struct ndk_qp *qp)
{
	struct ndk_cq *rcq = ndk_qp_cq_at(qp, 0);
	unsigned long flags;

	atomic_set(&qp->retire, NDK_RETIRE_DONE);
	spin_lock_irqsave(&rcq->sweep_lock, flags);
	list_del_init(&qp->retire_cq_node);
	spin_unlock_irqrestore(&rcq->sweep_lock, flags);
	ndk_qp_destroy_now(qp);
	ndk_obj_unlinger(&qp->obj);
	ndk_sweep_put(qp);
}

/**
 * ndk_qp_retire_work() - move a closed QP's retirement on
 * @work: its @retire_work
 */
void ndk_qp_retire_work(struct work_struct *work)
{
	struct ndk_qp *qp = container_of(work, struct ndk_qp, retire_work);
	struct ndk_cq *rcq = ndk_qp_cq_at(qp, 0);
	unsigned long flags;

	/* Not retiring yet (ndk_qp_retire() queues it again), or gone. */
	if (atomic_read(&qp->retire) != NDK_RETIRE_WAIT)
		return;
	if (!READ_ONCE(qp->retire_force)) {
		if (!ndk_qp_queues_done(qp))
			return;
		if (qp->srq && !READ_ONCE(qp->retire_polled)) {
			if (!ndk_qp_srq_done(qp))
				return;
			/* From now on, a poll that finds @rcq empty. */
			spin_lock_irqsave(&rcq->sweep_lock, flags);
			/* The poller marks it polled under the same lock. */
			if (!qp->retire_polled &&
			    list_empty(&qp->retire_cq_node)) {
				list_add_tail(&qp->retire_cq_node,
					      &rcq->retires);
				WRITE_ONCE(rcq->sweep_due, true);
			}
			spin_unlock_irqrestore(&rcq->sweep_lock, flags);
			return;
		}
	}
	ndk_qp_retire_finish(qp);
}

/* The QP is closed: its verbs QP retires (see above). */
static void ndk_qp_retire(struct ndk_qp *qp)
{
	if (!READ_ONCE(qp->in_error))
		ndk_qp_set_error(qp);
	/* The retirement's reference, and this call's. */
	atomic_add(2, &qp->sweep_refs);
	/*
	 * Due already, or the device has had its time since the error. Queued
	 * before a closing antecedent can end the retirement, whose end
	 * cancels it.
	 */
	ndk_qp_sweep_later(qp);
	ndk_obj_linger(&qp->obj);
	/* Nothing ends the retirement before this; the work looks again. */
	atomic_set(&qp->retire, NDK_RETIRE_WAIT);
	queue_work(ndk_wq, &qp->retire_work);
	ndk_sweep_put(qp);
}

/*
 * The let_go operation: the QP's PD, a CQ or its SRQ is being closed, and
 * nobody polls for the QP any more; its verbs QP goes now.
 */
static void ndk_qp_let_go(struct ndk_obj *obj)
{
	struct ndk_qp *qp = container_of(obj, struct ndk_qp, obj);

	WRITE_ONCE(qp->retire_force, true);
	queue_work(ndk_wq, &qp->retire_work);
}

/*
 * A QP that never went live, or whose queues have had every result
 * (and which has no SRQ), has nothing in its CQs: its verbs QP goes at
 * once. Any other retires.
 */
static void ndk_qp_destroy(struct ndk_obj *obj)
{
	struct ndk_qp *qp = container_of(obj, struct ndk_qp, obj);

	ndk_cq_forget_owner(ndk_qp_cq_at(qp, 0), obj);
	ndk_cq_forget_owner(ndk_qp_cq_at(qp, 1), obj);
	/* The SRQ's receives it took name it no more. */
	if (!hlist_unhashed(&qp->srq_node)) {
		spin_lock(&qp->srq->qps_lock);
		hlist_del_rcu(&qp->srq_node);
		spin_unlock(&qp->srq->qps_lock);
	}
	if (!qp->ibqp)
		return;
	if (READ_ONCE(obj->state) == NDK_OBJ_CLOSING &&
	    (qp->srq || !ndk_qp_queues_done(qp)))
		ndk_qp_retire(qp);
	else
		ndk_qp_destroy_now(qp);
}

/* kvfree() defers a vmalloc()ed block itself from softirq context. */
static void ndk_qp_free_rcu(struct rcu_head *rcu)
{
	struct ndk_qp *qp = container_of(rcu, struct ndk_qp, rcu);

	ndk_ring_free(&qp->sq);
	ndk_ring_free(&qp->rq);
	kvfree(qp->held);
	kvfree(qp->isge);
	kmem_cache_free(ndk_qp_cache, qp);
}

/*
 * The last reference is gone: the QP's completions find no owner from
 * now on. A poll that found the QP before may still read it, so it is
 * freed after a grace period; module exit waits with rcu_barrier().
 */
static void ndk_qp_release(struct ndk_qp *qp)
{
	/* A retirement's last look, queued late, finds it done. */
	cancel_work_sync(&qp->retire_work);
	ndk_wr_owner_del(&qp->obj);
	call_rcu(&qp->rcu, ndk_qp_free_rcu);
}

static void ndk_qp_release_work(struct work_struct *work)
{
	ndk_qp_release(container_of(work, struct ndk_qp, release_work));
}

/* The QP is closed; its sweep may still hold it (sweep.c). */
static void ndk_qp_free(struct ndk_obj *obj)
{
	struct ndk_qp *qp = container_of(obj, struct ndk_qp, obj);

	if (atomic_dec_and_test(&qp->sweep_refs))
		ndk_qp_release(qp);
}

static const struct ndk_obj_ops ndk_qp_ops = {
	.create = ndk_qp_create,
	.destroy = ndk_qp_destroy,
	.free = ndk_qp_free,
	.kill = ndk_qp_kill,
	.let_go = ndk_qp_let_go,
};

/*
 * Where ndk_driver_going() reads the state of @ibdev's driver, kept by
 * the QP so that its post path tests it in one load: the state of the
 * driver's module, or for a driver built in one that stays live.
 */
static const enum module_state *
ndk_driver_state(const struct ib_device *ibdev)
{
	struct module *owner = ibdev->ops.owner;

	return owner ? &owner->state : &ndk_builtin_state;
}

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

/* NdkCreateQp and NdkCreateQpWithSrq: @srq replaces the receive queue. */
static NTSTATUS ndk_qp_new(struct ndk_pd *pd, NDK_CQ *pReceiveCq,
			   NDK_CQ *pInitiatorCq, struct ndk_srq *srq,
			   PVOID QPContext, ULONG ReceiveQueueDepth,
			   ULONG InitiatorQueueDepth,
			   ULONG MaxReceiveRequestSge,
			   ULONG MaxInitiatorRequestSge, ULONG InlineDataSize,
			   NDK_FN_CREATE_COMPLETION CreateCompletion,
			   PVOID RequestContext, NDK_QP **ppNdkQp)
{
	const NDK_ADAPTER_INFO *info = &pd->obj.adapter->info;
	struct ndk_cq *rcq, *icq;
	struct ndk_qp *qp;
	NTSTATUS status;

	rcq = ndk_qp_cq(pReceiveCq, pd->obj.adapter);
	icq = ndk_qp_cq(pInitiatorCq, pd->obj.adapter);
	if (!rcq || !icq ||
	    ReceiveQueueDepth > info->MaxReceiveQueueDepth ||
	    InitiatorQueueDepth > info->MaxInitiatorQueueDepth ||
	    MaxReceiveRequestSge > info->MaxReceiveRequestSge ||
	    MaxInitiatorRequestSge > info->MaxInitiatorRequestSge ||
	    InlineDataSize > info->MaxInlineDataSize)
		return STATUS_INVALID_PARAMETER;

	qp = NDK_FI_NULL(kmem_cache_zalloc(ndk_qp_cache, GFP_ATOMIC));
	if (!qp)
		return STATUS_INSUFFICIENT_RESOURCES;
	qp->ndk.Dispatch = &ndk_qp_dispatch;
	qp->context = QPContext;
	qp->srq = srq;
	qp->rq.depth = ReceiveQueueDepth;
	qp->sq.depth = InitiatorQueueDepth;
	qp->max_rsge = MaxReceiveRequestSge;
	qp->max_isge = MaxInitiatorRequestSge;
	qp->inline_size = InlineDataSize;
	/* siw sends inline data only without an invalidation. */
	qp->inline_inv = pd->obj.adapter->ibdev->ops.driver_id !=
			 RDMA_DRIVER_SIW;
	qp->max_xfer = info->MaxTransferLength;
	qp->stats = pd->obj.adapter->dev->stats;
	qp->driver = ndk_driver_state(pd->obj.adapter->ibdev);
	INIT_WORK(&qp->flush_work, ndk_qp_flush_work);
	INIT_DELAYED_WORK(&qp->sweep_work, ndk_qp_sweep_work);
	INIT_WORK(&qp->release_work, ndk_qp_release_work);
	INIT_WORK(&qp->retire_work, ndk_qp_retire_work);
	INIT_LIST_HEAD(&qp->retire_cq_node);
	atomic_set(&qp->sweep_refs, 1);
	INIT_LIST_HEAD(&qp->sq.sweep);
	INIT_LIST_HEAD(&qp->rq.sweep);
	ndk_obj_init(&qp->obj, &qp->ndk.Header, NdkObjectTypeQp, &ndk_qp_ops,
		     &pd->obj);
	/* In this order: ndk_qp_create() finds them there. */
	ndk_obj_add_antecedent(&qp->obj, &rcq->obj);
	ndk_obj_add_antecedent(&qp->obj, &icq->obj);
	if (srq)
		ndk_obj_add_antecedent(&qp->obj, &srq->obj);
	status = ndk_obj_create(&qp->obj, CreateCompletion, RequestContext,
				!!ppNdkQp);
	if (status == STATUS_SUCCESS)
		*ppNdkQp = &qp->ndk;
	return status;
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
 * @ppNdkQp: receives the QP when the creation completes inline
 *
 * Callable from atomic context. Where the kernel can tell that the caller
 * may sleep, and @ppNdkQp is given, the QP is created inline.
 *
 * Return: STATUS_SUCCESS (created inline), STATUS_PENDING;
 * STATUS_INVALID_PARAMETER for limits beyond
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
	if (!pNdkPd || !CreateCompletion)
		return STATUS_INVALID_PARAMETER;
	return ndk_qp_new(container_of(pNdkPd, struct ndk_pd, ndk),
			  pReceiveCq, pInitiatorCq, NULL, QPContext,
			  ReceiveQueueDepth, InitiatorQueueDepth,
			  MaxReceiveRequestSge, MaxInitiatorRequestSge,
			  InlineDataSize, CreateCompletion, RequestContext,
			  ppNdkQp);
}

/**
 * ndk_create_qp_with_srq() - NdkCreateQpWithSrq
 * @pNdkPd: protection domain
 * @pReceiveCq: CQ for the completions of receives taken from @pSrq
 * @pInitiatorCq: CQ for initiator completions
 * @pSrq: a live SRQ of the same PD; it replaces the receive queue
 * @QPContext: returned in every NDK_RESULT of this QP
 * @InitiatorQueueDepth: up to MaxInitiatorQueueDepth
 * @MaxInitiatorRequestSge: up to the adapter's MaxInitiatorRequestSge
 * @InlineDataSize: up to MaxInlineDataSize
 * @CreateCompletion: called with the new QP, from ndk_wq
 * @RequestContext: passed back to @CreateCompletion
 * @ppNdkQp: receives the QP when the creation completes inline
 *
 * The QP is a successor of the SRQ as well. Callable from atomic context;
 * completes inline as ndk_create_qp() does.
 *
 * Return: as ndk_create_qp(); STATUS_INVALID_PARAMETER also for an SRQ
 * that is not one, not live, or of another PD.
 */
NTSTATUS ndk_create_qp_with_srq(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq,
				NDK_CQ *pInitiatorCq, NDK_SRQ *pSrq,
				PVOID QPContext, ULONG InitiatorQueueDepth,
				ULONG MaxInitiatorRequestSge,
				ULONG InlineDataSize,
				NDK_FN_CREATE_COMPLETION CreateCompletion,
				PVOID RequestContext, NDK_QP **ppNdkQp)
{
	struct ndk_pd *pd = container_of(pNdkPd, struct ndk_pd, ndk);
	struct ndk_srq *srq;

	if (!pNdkPd || !CreateCompletion || !pSrq ||
	    pSrq->Header.ObjectType != NdkObjectTypeSrq)
		return STATUS_INVALID_PARAMETER;
	srq = container_of(pSrq, struct ndk_srq, ndk);
	if (srq->obj.parent != &pd->obj ||
	    READ_ONCE(srq->obj.state) != NDK_OBJ_LIVE)
		return STATUS_INVALID_PARAMETER;
	return ndk_qp_new(pd, pReceiveCq, pInitiatorCq, srq, QPContext, 0,
			  InitiatorQueueDepth, 0, MaxInitiatorRequestSge,
			  InlineDataSize, CreateCompletion, RequestContext,
			  ppNdkQp);
}

/**
 * ndk_qp_event() - the QP's event handler
 * @event: the device's event
 * @ctx: the QP
 *
 * The device moved the QP to the error state by itself, on a fatal error
 * of the QP or of its work: it flushes the QP's requests, and what it
 * does not report the sweep does, ndk_sweep_ms from now; the initiator
 * calls are refused from then on. The QP is left to the device: a
 * responder that found an access error may still be sending the NAK that
 * ends the peer's request, which an error move of ndk's would cut off.
 * A QP on an SRQ in the error state hears when the device has completed
 * the receives it took, which its retirement waits for (qp_create.c).
 * The device's event context; a QP being destroyed (its count at zero)
 * cancels its sweep work itself.
 */
void ndk_qp_event(struct ib_event *event, void *ctx)
{
	struct ndk_qp *qp = ctx;

	if (event->event == IB_EVENT_QP_LAST_WQE_REACHED) {
		/* Its verbs QP, and so the QP, lives until this returns. */
		WRITE_ONCE(qp->last_wqe, true);
		ndk_qp_retire_kick(qp);
		return;
	}
	switch (event->event) {
	case IB_EVENT_QP_FATAL:
	case IB_EVENT_QP_REQ_ERR:
	case IB_EVENT_QP_ACCESS_ERR:
		break;
	default:
		return;
	}
	if (!ndk_obj_tryget(&qp->obj))
		return;
	WRITE_ONCE(qp->connected, false);
	ndk_qp_sweep_later(qp);
	ndk_obj_put(&qp->obj);
}

/**
 * ndk_qp_sweep_now() - the device is done: sweep what it did not report
 * @qp: the QP, failed or closed
 *
 * A queue whose every request has had its result is left alone.
 */
void ndk_qp_sweep_now(struct ndk_qp *qp)
{
	struct ndk_cq *icq = ndk_qp_cq_at(qp, 1);
	struct ndk_cq *rcq = ndk_qp_cq_at(qp, 0);

	if (ndk_ring_outstanding(&qp->sq) && ndk_sweep_add(icq, qp, &qp->sq))
		ndk_cq_sweep_kick(icq);
	if (!qp->srq && ndk_ring_outstanding(&qp->rq) &&
	    ndk_sweep_add(rcq, qp, &qp->rq))
		ndk_cq_sweep_kick(rcq);
}

void ndk_qp_sweep_work(struct work_struct *work)
{
	struct ndk_qp *qp = container_of(to_delayed_work(work), struct ndk_qp,
					 sweep_work);

	ndk_qp_sweep_now(qp);
	/* A closed QP's device has had its time. */
	ndk_qp_retire_kick(qp);
}

/* The kill operation (device removal): what is posted completes flushed. */
void ndk_qp_kill(struct ndk_obj *obj)
{
	ndk_qp_set_error(container_of(obj, struct ndk_qp, obj));
}

void ndk_qp_flush_work(struct work_struct *work)
{
	struct ndk_qp *qp = container_of(work, struct ndk_qp, flush_work);

	ndk_qp_set_error(qp);
	ndk_obj_put(&qp->obj);
}
