// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * NDK_SRQ: a shared receive queue. The notify threshold is the verbs SRQ
 * limit: the device raises IB_EVENT_SRQ_LIMIT_REACHED once when fewer
 * receives than that are queued, and a new threshold arms it again.
 * NdkModifySrq must also notify at once when the queue is already below
 * the new threshold, which verbs cannot tell; ndk counts the receives
 * posted and the SRQ receive completions the consumer has polled.
 */
#include "ndk_priv.h"
#include "trace.h"

static struct ndk_srq *to_ndk_srq(NDK_SRQ *srq)
{
	return container_of(srq, struct ndk_srq, ndk);
}

static void ndk_srq_notify(struct ndk_srq *srq, NTSTATUS status)
{
	if (srq->notify && READ_ONCE(srq->obj.state) != NDK_OBJ_CLOSING) {
		trace_ndk_callback(NDK_CB_SRQ_NOTIFY, NdkObjectTypeSrq,
				   srq->obj.id, status);
		srq->notify(srq->notify_ctx, status);
	}
}

static void ndk_srq_event_work(struct work_struct *work)
{
	struct ndk_srq *srq = container_of(work, struct ndk_srq, event_work);

	ndk_srq_notify(srq, READ_ONCE(srq->event_status));
	ndk_obj_put(&srq->obj);
}

/*
 * From the device's event context, which may be inside the driver's
 * receive path (siw raises the limit from its socket callback, 6.12's
 * rxe from its responder work item): the consumer runs on ndk_wq
 * instead, where it may post to the SRQ or close it. The SRQ limit
 * disarms itself, so a second event before the work runs is an error.
 */
static void ndk_srq_event(struct ib_event *event, void *ctx)
{
	struct ndk_srq *srq = ctx;

	if (event->event == IB_EVENT_SRQ_LIMIT_REACHED)
		WRITE_ONCE(srq->event_status, STATUS_SUCCESS);
	else if (event->event == IB_EVENT_SRQ_ERR)
		WRITE_ONCE(srq->event_status, STATUS_INTERNAL_ERROR);
	else
		return;
	if (ndk_obj_tryget(&srq->obj) && !queue_work(ndk_wq, &srq->event_work))
		ndk_obj_put(&srq->obj);
}

/**
 * ndk_srq_consumed() - an SRQ receive completion was polled
 * @srq: its SRQ
 * @slot: the receive's slot, which the poller has read
 *
 * Called from the poll path, by pollers of any of the SRQ's CQs at once:
 * the slot has one writer at a time, the count needs its atomic.
 */
void ndk_srq_consumed(struct ndk_srq *srq, u32 slot)
{
	/* Pairs with ndk_srq_take(): the poller is done with the slot. */
	smp_store_release(&srq->ring.state[slot], NDK_SLOT_FREE);
	/* And the slot is free before the count says so. */
	smp_mb__before_atomic();
	atomic_dec(&srq->queued);
}

static NTSTATUS ndk_srq_create(struct ndk_obj *obj)
{
	struct ndk_srq *srq = container_of(obj, struct ndk_srq, obj);
	struct ndk_pd *pd = container_of(obj->parent, struct ndk_pd, obj);
	struct ib_srq *ibsrq;
	int err;

	if (ndk_ring_init(&srq->ring, srq->obj.adapter->info.MaxSrqDepth))
		return STATUS_INSUFFICIENT_RESOURCES;
	srq->spare = NDK_FI_NULL(kvmalloc_array(max(srq->max_sge, 1U),
						sizeof(*srq->spare),
						GFP_KERNEL));
	if (!srq->spare)
		return STATUS_INSUFFICIENT_RESOURCES;
	err = ndk_wr_owner_add(obj);
	if (err)
		return ndk_status_from_errno(err);
	srq->ring.tag = ndk_wr_tag(obj, NDK_WR_SRQ);
	ibsrq = NDK_FI_PTR(ib_create_srq(pd->ibpd, &srq->init));
	if (IS_ERR(ibsrq))
		return ndk_status_from_errno(PTR_ERR(ibsrq));
	srq->ibsrq = ibsrq;
	/* Some devices take the limit only through a modify. */
	if (srq->init.attr.srq_limit)
		return ndk_status_from_errno(ib_modify_srq(ibsrq,
							   &srq->init.attr,
							   IB_SRQ_LIMIT));
	return STATUS_SUCCESS;
}

static void ndk_srq_destroy(struct ndk_obj *obj)
{
	struct ndk_srq *srq = container_of(obj, struct ndk_srq, obj);

	ndk_wr_owner_del(obj);
	if (srq->ibsrq)
		ib_destroy_srq(srq->ibsrq);
}

static void ndk_srq_free_work(struct work_struct *work)
{
	struct ndk_srq *srq = container_of(to_rcu_work(work), struct ndk_srq,
					   free_work);

	ndk_ring_free(&srq->ring);
	kvfree(srq->spare);
	kfree(srq);
}

/* A poll that found the SRQ before it was dropped may still read it. */
static void ndk_srq_free(struct ndk_obj *obj)
{
	struct ndk_srq *srq = container_of(obj, struct ndk_srq, obj);

	INIT_RCU_WORK(&srq->free_work, ndk_srq_free_work);
	queue_rcu_work(ndk_wq, &srq->free_work);
}

/**
 * ndk_srq_qp_context() - QPContext of the QP that took an SRQ receive
 * @srq: the SRQ
 * @ibqp: the completion's QP, compared and never dereferenced
 *
 * Call under rcu_read_lock().
 *
 * Return: the QP's context, or NULL when that QP is closed.
 */
PVOID ndk_srq_qp_context(struct ndk_srq *srq, struct ib_qp *ibqp)
{
	struct ndk_qp *qp;

	hlist_for_each_entry_rcu(qp, &srq->qps, srq_node)
		if (qp->ibqp == ibqp)
			return qp->context;
	return NULL;
}

static const struct ndk_obj_ops ndk_srq_ops = {
	.create = ndk_srq_create,
	.destroy = ndk_srq_destroy,
	.free = ndk_srq_free,
};

/*
 * Move the ring's head to a free slot. Receives leave the SRQ in the
 * order its QPs' CQs are polled, so the next slot in order may still be
 * taken; with twice as many slots as MaxSrqDepth and fewer than the depth
 * queued, the search ends soon.
 *
 * Return: false if every slot is taken, which the depth check prevents.
 */
static bool ndk_srq_take(struct ndk_wr_ring *ring)
{
	u32 n;
	u8 state;

	for (n = 0; n <= ring->mask; n++, ring->head++) {
		/* Pairs with ndk_srq_consumed(): the slot was read. */
		state = smp_load_acquire(&ring->state[ring->head & ring->mask]);
		if (state == NDK_SLOT_FREE)
			return true;
	}
	return false;
}

/*
 * NdkSrqReceive. The consumer serializes posting to one SRQ, so the
 * ring's head needs no lock. A receive occupies the SRQ
 * until its completion is polled, whenever the device lets go of it.
 */
static NTSTATUS ndk_srq_receive(NDK_SRQ *pNdkSrq, PVOID RequestContext,
				const NDK_SGE *pSgl, ULONG nSge)
{
	struct ndk_srq *srq = to_ndk_srq(pNdkSrq);
	struct ib_recv_wr wr = {
		.sg_list = ndk_ib_sges(pSgl),
		.num_sge = nSge,
	};
	NTSTATUS status;
	u64 total;
	int err;

	status = ndk_sges(pSgl, nSge, srq->max_sge, &total);
	if (status)
		return status;
	if (total > srq->obj.adapter->info.MaxTransferLength)
		return STATUS_INVALID_BUFFER_SIZE;
	wr.sg_list = ndk_sges_packed(pSgl, &nSge, srq->spare);
	wr.num_sge = nSge;
	/* Pairs with ndk_srq_consumed(). */
	if (atomic_read_acquire(&srq->queued) >= (int)READ_ONCE(srq->depth) ||
	    !ndk_srq_take(&srq->ring))
		return STATUS_INSUFFICIENT_RESOURCES;
	wr.wr_id = ndk_ring_take(&srq->ring, srq->ring.head, RequestContext,
				 NdkOperationTypeReceive, NDK_SLOT_BUSY);
	/* Counted first: its completion may be polled before we return. */
	atomic_inc(&srq->queued);
	err = ib_post_srq_recv(srq->ibsrq, &wr, NULL);
	if (err) {
		ndk_ring_untake(&srq->ring, srq->ring.head);
		atomic_dec(&srq->queued);
		return ndk_status_from_errno(err);
	}
	srq->ring.head++;
	ndk_stat_inc(srq->obj.adapter, NDK_STAT_POSTED);
	return STATUS_SUCCESS;
}

#if IS_ENABLED(CONFIG_KUNIT)
static void (*ndk_srq_modify_hook)(NDK_SRQ *srq);

/**
 * ndk_srq_set_modify_hook() - call @hook inside each modify's completion
 * @hook: called with the SRQ once the SRQ takes the next NdkModifySrq,
 *	before the completion calls back; NULL for none
 *
 * The ndk_srq suite's way into that moment: it issues the next modify
 * there.
 */
void ndk_srq_set_modify_hook(void (*hook)(NDK_SRQ *srq))
{
	WRITE_ONCE(ndk_srq_modify_hook, hook);
}
EXPORT_SYMBOL_NDK_TEST(ndk_srq_set_modify_hook);

static void ndk_srq_modify_gap(struct ndk_srq *srq)
{
	void (*hook)(NDK_SRQ *srq) = READ_ONCE(ndk_srq_modify_hook);

	if (hook)
		hook(&srq->ndk);
}
#else
/* Without KUnit there is no hook. */
static inline void ndk_srq_modify_gap(struct ndk_srq *srq)
{
}
#endif

/*
 * The modify's request, cb and ctx included, is taken before busy is
 * released: from then on a new NdkModifySrq may replace it, and queue
 * this work again to run after this one.
 */
static void ndk_srq_modify_work(struct work_struct *work)
{
	struct ndk_srq *srq = container_of(work, struct ndk_srq, modify_work);
	NDK_FN_REQUEST_COMPLETION cb = srq->modify_cb;
	void *ctx = srq->modify_ctx;
	NTSTATUS status;
	struct ib_srq_attr attr = {
		.max_wr = srq->new_depth,
		.srq_limit = srq->new_threshold,
	};
	enum ib_srq_attr_mask mask = 0;
	bool below = false;
	int err = 0;

	if (srq->new_depth)
		mask |= IB_SRQ_MAX_WR;
	if (srq->new_threshold)
		mask |= IB_SRQ_LIMIT;
	if (mask)
		err = ib_modify_srq(srq->ibsrq, &attr, mask);
	if (!err && srq->new_depth)
		WRITE_ONCE(srq->depth, srq->new_depth);
	/*
	 * Already below the new threshold: notify now, and disarm the
	 * device's limit so that this arming notifies only once.
	 */
	if (!err && srq->new_threshold &&
	    atomic_read(&srq->queued) < (int)srq->new_threshold) {
		attr.srq_limit = 0;
		below = !ib_modify_srq(srq->ibsrq, &attr, IB_SRQ_LIMIT);
	}
	status = ndk_status_from_errno(err);
	/* Every read of the request above comes before the release. */
	atomic_set_release(&srq->busy, 0);
	ndk_srq_modify_gap(srq);
	trace_ndk_callback(NDK_CB_REQUEST, NdkObjectTypeSrq, srq->obj.id,
			   status);
	cb(ctx, status);
	if (below)
		ndk_srq_notify(srq, STATUS_SUCCESS);
	ndk_obj_put(&srq->obj);
}

/*
 * NdkModifySrq: a depth of 0 keeps the depth, a threshold of 0 leaves
 * the notification as it is. Resizing may sleep, so it runs on ndk_wq.
 */
static NTSTATUS ndk_modify_srq(NDK_SRQ *pNdkSrq, ULONG SrqDepth,
			       ULONG NotifyThreshold,
			       NDK_FN_REQUEST_COMPLETION RequestCompletion,
			       PVOID RequestContext)
{
	struct ndk_srq *srq = to_ndk_srq(pNdkSrq);
	const NDK_ADAPTER_INFO *info = &srq->obj.adapter->info;

	if (!RequestCompletion || SrqDepth > info->MaxSrqDepth ||
	    NotifyThreshold > (SrqDepth ? SrqDepth : READ_ONCE(srq->depth)))
		return STATUS_INVALID_PARAMETER;
	if (atomic_cmpxchg(&srq->busy, 0, 1))
		return STATUS_INVALID_DEVICE_STATE;
	srq->new_depth = SrqDepth;
	srq->new_threshold = NotifyThreshold;
	srq->modify_cb = RequestCompletion;
	srq->modify_ctx = RequestContext;
	ndk_obj_get(&srq->obj);
	queue_work(ndk_wq, &srq->modify_work);
	return STATUS_PENDING;
}

static const NDK_SRQ_DISPATCH ndk_srq_dispatch = {
	.NdkCloseSrq = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkModifySrq = ndk_modify_srq,
	.NdkSrqReceive = ndk_srq_receive,
};

NDK_OBJ_CHECK_LAYOUT(struct ndk_srq);

/**
 * ndk_create_srq() - NdkCreateSrq
 * @pNdkPd: protection domain
 * @SrqDepth: 1 up to MaxSrqDepth
 * @MaxReceiveRequestSge: up to MaxReceiveRequestSge
 * @NotifyThreshold: notify when fewer receives are queued; 0 for never
 * @SrqNotification: optional notification callback
 * @SrqNotificationContext: its context
 * @Affinity: ignored: the device's event context decides the processor
 * @CreateCompletion: called with the new SRQ, from ndk_wq, when the
 *	creation pends
 * @RequestContext: passed back to @CreateCompletion
 * @ppNdkSrq: receives the SRQ when the creation completes inline
 *
 * Callable from atomic context. Where the kernel can tell that the caller
 * may sleep, and @ppNdkSrq is given, the SRQ is created inline.
 *
 * Return: STATUS_SUCCESS (created inline), STATUS_PENDING,
 * STATUS_INVALID_PARAMETER, STATUS_INSUFFICIENT_RESOURCES, or the
 * failure of an inline creation.
 */
NTSTATUS ndk_create_srq(NDK_PD *pNdkPd, ULONG SrqDepth,
			ULONG MaxReceiveRequestSge, ULONG NotifyThreshold,
			NDK_FN_SRQ_NOTIFICATION_CALLBACK SrqNotification,
			PVOID SrqNotificationContext, GROUP_AFFINITY *Affinity,
			NDK_FN_CREATE_COMPLETION CreateCompletion,
			PVOID RequestContext, NDK_SRQ **ppNdkSrq)
{
	struct ndk_pd *pd = container_of(pNdkPd, struct ndk_pd, ndk);
	const NDK_ADAPTER_INFO *info;
	struct ndk_srq *srq;
	NTSTATUS status;

	if (!pNdkPd || !CreateCompletion)
		return STATUS_INVALID_PARAMETER;
	info = &pd->obj.adapter->info;
	if (!SrqDepth || SrqDepth > info->MaxSrqDepth ||
	    MaxReceiveRequestSge > info->MaxReceiveRequestSge ||
	    NotifyThreshold > SrqDepth)
		return STATUS_INVALID_PARAMETER;
	srq = NDK_FI_NULL(kzalloc(sizeof(*srq), GFP_ATOMIC));
	if (!srq)
		return STATUS_INSUFFICIENT_RESOURCES;
	srq->ndk.Dispatch = &ndk_srq_dispatch;
	srq->notify = SrqNotification;
	srq->notify_ctx = SrqNotificationContext;
	srq->depth = SrqDepth;
	srq->max_sge = MaxReceiveRequestSge;
	srq->init.event_handler = ndk_srq_event;
	srq->init.srq_context = srq;
	srq->init.srq_type = IB_SRQT_BASIC;
	srq->init.attr.max_wr = SrqDepth;
	srq->init.attr.max_sge = MaxReceiveRequestSge;
	srq->init.attr.srq_limit = NotifyThreshold;
	INIT_WORK(&srq->modify_work, ndk_srq_modify_work);
	INIT_WORK(&srq->event_work, ndk_srq_event_work);
	spin_lock_init(&srq->qps_lock);
	ndk_obj_init(&srq->obj, &srq->ndk.Header, NdkObjectTypeSrq,
		     &ndk_srq_ops, &pd->obj);
	status = ndk_obj_create(&srq->obj, CreateCompletion, RequestContext,
				!!ppNdkSrq);
	if (status == STATUS_SUCCESS)
		*ppNdkSrq = &srq->ndk;
	return status;
}
