// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * NDK_CQ: completion queue, arming and notification.
 *
 * The arm state is one atomic word so that NdkArmCq, the device's
 * completion handler and close never need a lock on the polling path.
 * Notifications are serialized: a callback never starts while another of
 * the same CQ runs; a second one that arrives meanwhile runs right after.
 * No callback runs once close has started destroying the CQ.
 *
 * The consumer's callback never runs inside the driver's own handlers:
 * a driver may call them with its CQ lock held (rxe does since 6.9), and
 * the callback may arm, poll, post and close. The handlers only schedule
 * the CQ's irq_poll instance, whose softirq delivers the notification,
 * in the context NDKPI calls DISPATCH_LEVEL. A handler called from a task
 * with interrupts off (6.12's rxe) gets there through a self-interrupt
 * (irq_work) rather than ksoftirqd; see ndk_cq_kick().
 */
#include "ndk_priv.h"
#include "sweep.h"
#include "trace.h"

/* irq_poll weight of a CQ; each delivered notification counts one. */
#define NDK_CQ_NOTIFY_WEIGHT	4

/* Arm states, ordered so that merging two arms is taking the maximum. */
enum {
	NDK_ARM_NONE,
	NDK_ARM_ERRORS,
	NDK_ARM_SOLICITED,
	NDK_ARM_ANY,
};

/* The arm each NDK_CQ_NOTIFY_* type asks for. */
static const u8 ndk_arm_want[] = {
	[NDK_CQ_NOTIFY_ERRORS] = NDK_ARM_ERRORS,
	[NDK_CQ_NOTIFY_ANY] = NDK_ARM_ANY,
	[NDK_CQ_NOTIFY_SOLICITED] = NDK_ARM_SOLICITED,
};

/**
 * ndk_cq_arm_merge() - the arm that results from a second NdkArmCq
 * @armed: current arm (NDK_ARM_*), NDK_ARM_NONE if not armed
 * @type: NDK_CQ_NOTIFY_* of the new request
 *
 * Return: the merged NDK_ARM_* state, or -EINVAL for an unknown @type.
 */
int ndk_cq_arm_merge(int armed, ULONG type)
{
	if (type >= ARRAY_SIZE(ndk_arm_want))
		return -EINVAL;
	return max_t(int, armed, ndk_arm_want[type]);
}
EXPORT_SYMBOL_NDK_TEST(ndk_cq_arm_merge);

/*
 * Deliver one notification if the CQ is armed. A CQ that failed reports
 * its error through the next armed notification, and every one after.
 */
static void ndk_cq_fire(struct ndk_cq *cq)
{
	unsigned long flags;
	bool dead = false;

	/* Keeps @cq from being freed; see ndk_cq_free(). */
	rcu_read_lock();
	if (READ_ONCE(cq->dead) || !cq->notify_cb ||
	    atomic_xchg(&cq->arm, NDK_ARM_NONE) == NDK_ARM_NONE)
		goto out;

	spin_lock_irqsave(&cq->notify_lock, flags);
	/* Set under the lock: see ndk_cq_destroy(). */
	if (cq->dead)
		goto unlock;
	if (cq->in_notify) {
		cq->notify_again = true;
		goto unlock;
	}
	cq->in_notify = true;
	do {
		cq->notify_again = false;
		spin_unlock_irqrestore(&cq->notify_lock, flags);
		trace_ndk_callback(NDK_CB_CQ_NOTIFY, NdkObjectTypeCq,
				   cq->obj.id, READ_ONCE(cq->fatal));
		cq->notify_cb(cq->notify_ctx, READ_ONCE(cq->fatal));
		spin_lock_irqsave(&cq->notify_lock, flags);
	} while (cq->notify_again && !cq->dead);
	cq->in_notify = false;
	dead = cq->dead;
unlock:
	spin_unlock_irqrestore(&cq->notify_lock, flags);
	if (dead) {
		/* Pairs with the waiter's check; see ndk_cq_destroy(). */
		smp_mb();
		wake_up_var(&cq->in_notify);
	}
out:
	rcu_read_unlock();
}

/*
 * Results held back whose region is restored: the restoring's
 * notification may have come before the arm (ndk_cq_restored()), or
 * after the consumer took them. The arm's atomic orders its state before
 * this read; so does the restoring's kick.
 */
static bool ndk_cq_held_restored(struct ndk_cq *cq)
{
	int hold = READ_ONCE(cq->hold);

	return READ_ONCE(cq->held) &&
	       (!hold || ndk_mr_restored(cq->obj.adapter->dev, hold));
}

/*
 * Whether a restoring's kick finds results to notify. The CQ may be
 * closing; a reference keeps its adapter, whose device it reads, alive.
 * The CQ itself is freed only after a grace period, which this softirq
 * holds off (ndk_cq_free()).
 */
static bool ndk_cq_restore_due(struct ndk_cq *cq)
{
	bool due;

	if (!READ_ONCE(cq->held) || !ndk_obj_tryget(&cq->obj))
		return false;
	due = ndk_cq_held_restored(cq);
	ndk_obj_put(&cq->obj);
	return due;
}

/*
 * irq_poll serializes nothing here: the instance completes before the
 * callback so that an arm from inside it, or a completion on another
 * CPU, schedules the next notification; ndk_cq_fire() serializes.
 */
static int ndk_cq_notify_poll(struct irq_poll *iop, int budget)
{
	struct ndk_cq *cq = container_of(iop, struct ndk_cq, iop);

	irq_poll_complete(iop);
	/*
	 * A restoring's kick alone (ndk_cq_restored()) notifies only while
	 * the results it freed still wait: it may run after the consumer took
	 * them and armed again. Pairs with ndk_cq_kick(): a kick that found
	 * this run scheduled is seen here.
	 */
	if (atomic_xchg(&cq->kicked, 0) || ndk_cq_restore_due(cq))
		ndk_cq_fire(cq);
	return 1;
}

/* Runs in hard interrupt context, once the scheduling task let it. */
static void ndk_cq_kick_work(struct irq_work *work)
{
	struct ndk_cq *cq = container_of(work, struct ndk_cq, kick);

	irq_poll_sched(&cq->iop);
}

/*
 * Schedule the notification softirq, which runs after the caller has
 * returned and left its locks behind.
 *
 * From a hard or soft interrupt, or with bottom halves off, the softirq
 * runs at the end of that section: at irq exit, after the running
 * softirq handler (6.1's rxe tasklet) or at local_bh_enable(). From a
 * task it would only wake ksoftirqd, which under load is a scheduler
 * round trip away; 6.12's rxe calls the completion handler so, from its
 * work items, with its CQ lock held and interrupts off. There the
 * irq_work's self-interrupt is taken as soon as the task turns
 * interrupts back on, after it has dropped the lock, and the softirq
 * runs at that interrupt's exit. A task with interrupts on keeps the
 * ksoftirqd path: there the self-interrupt would run the callback inside
 * the caller.
 */
static void ndk_cq_sched(struct ndk_cq *cq)
{
	if (!in_interrupt() && irqs_disabled() &&
	    arch_irq_work_has_interrupt())
		irq_work_queue(&cq->kick);
	else
		irq_poll_sched(&cq->iop);
}

/* A completion, an error or a sweep: an armed CQ notifies. */
static void ndk_cq_kick(struct ndk_cq *cq)
{
	atomic_set(&cq->kicked, 1);
	/* Pairs with ndk_cq_notify_poll(); a failed test_and_set orders nothing. */
	smp_mb__before_atomic();
	ndk_cq_sched(cq);
}

static void ndk_cq_comp_handler(struct ib_cq *ibcq, void *ctx)
{
	ndk_cq_kick(ctx);
}

/*
 * Verbs report overflow and other fatal CQ errors alike; both leave the
 * CQ unusable, which STATUS_INTERNAL_ERROR tells the consumer.
 */
static void ndk_cq_event_handler(struct ib_event *event, void *ctx)
{
	struct ndk_cq *cq = ctx;

	if (event->event != IB_EVENT_CQ_ERR)
		return;
	WRITE_ONCE(cq->fatal, STATUS_INTERNAL_ERROR);
	ndk_cq_kick(cq);
}

/*
 * NdkArmCq. Verbs cannot arm for errors only; ERRORS arms for the next
 * completion of any kind, which still fires at most once per arm (see
 * Documentation/ndk/deviations.rst).
 */
static void ndk_arm_cq(NDK_CQ *pNdkCq, ULONG Type)
{
	struct ndk_cq *cq = to_ndk_cq(pNdkCq);
	enum ib_cq_notify_flags flags;
	int old, new;

	old = atomic_read(&cq->arm);
	new = ndk_cq_arm_merge(old, Type);
	if (unlikely(new < 0))
		return;
	/* An arm as large or larger stays as it is, without a store. */
	while (new != old && !atomic_try_cmpxchg(&cq->arm, &old, new))
		new = ndk_cq_arm_merge(old, Type);

	/*
	 * Completions already waiting, or a failed CQ, notify at once; never
	 * from inside this call, where the caller may hold its own locks.
	 */
	flags = new == NDK_ARM_SOLICITED ? IB_CQ_SOLICITED : IB_CQ_NEXT_COMP;
	if (ib_req_notify_cq(cq->ibcq, flags | IB_CQ_REPORT_MISSED_EVENTS) > 0 ||
	    READ_ONCE(cq->fatal) ||
	    (READ_ONCE(cq->sweep_due) && !READ_ONCE(cq->held)) ||
	    ndk_cq_held_restored(cq))
		ndk_cq_kick(cq);
}

/**
 * ndk_cq_sweep_kick() - results of a swept queue wait in @cq
 * @cq: the CQ, which ndk_sweep_add() just gave a queue
 *
 * An armed CQ notifies as it would for a completion of its device.
 */
void ndk_cq_sweep_kick(struct ndk_cq *cq)
{
	ndk_cq_kick(cq);
}

/*
 * The poller's side of the ring (ring.h): free a slot the poller is done
 * with; the poster may refill it then. Called with the CQ's polling
 * serialized, by the consumer.
 */
static __always_inline void ndk_ring_free_slot(struct ndk_wr_ring *ring, u32 slot)
{
	/* Pairs with ndk_ring_room(): the slot was read before this. */
	smp_store_release(&ring->state[slot], NDK_SLOT_FREE);
	WRITE_ONCE(ring->retired, ring->retired + 1);
}

/* Requests ndk did not post (tests' raw QPs) carry their own opcode. */
static NDK_OPERATION_TYPE ndk_wc_type(const struct ib_wc *wc)
{
	switch (wc->opcode) {
	case IB_WC_SEND:
		return NdkOperationTypeSend;
	case IB_WC_RDMA_WRITE:
		return NdkOperationTypeWrite;
	case IB_WC_RDMA_READ:
		return NdkOperationTypeRead;
	case IB_WC_REG_MR:
		return NdkOperationTypeFastRegister;
	case IB_WC_LOCAL_INV:
		return NdkOperationTypeInvalidate;
	default:
		return NdkOperationTypeReceive;
	}
}

/**
 * ndk_wr_owner() - the live QP or SRQ that posted a request
 * @wr_id: the request's wr_id, of a kind ndk posts
 * @kind: its kind, NDK_WR_SQ, _RQ or _SRQ
 *
 * Call under rcu_read_lock(), which the poll path holds already, so the
 * lookup does without xa_load()'s own; the owner stays valid until it is
 * dropped. An owner of the other type holds the id of a closed owner
 * (ring.c): the request's owner is gone as well.
 *
 * Return: the owner's object, or NULL once it is destroyed.
 */
static __always_inline struct ndk_obj *ndk_wr_owner(u64 wr_id, u64 kind)
{
	XA_STATE(xas, &ndk_wr_owners,
		 (wr_id >> NDK_WR_ID_SHIFT) & NDK_WR_ID_MASK);
	NDK_OBJECT_TYPE type = kind == NDK_WR_SRQ ? NdkObjectTypeSrq :
						     NdkObjectTypeQp;
	struct ndk_obj *entry;

	do
		entry = xas_load(&xas);
	while (xas_retry(&xas, entry));
	if (entry && entry->hdr->ObjectType != type)
		return NULL;
	return entry;
}

/**
 * ndk_cq_forget_owner() - a closed QP leaves no hint in its CQ
 * @cq: a CQ of the QP
 * @owner: the QP's object, closing
 *
 * The QP is freed after a grace period, which the poll path's read
 * section holds off for a hint it read before this; the poller makes
 * no closing QP its hint.
 */
void ndk_cq_forget_owner(struct ndk_cq *cq, struct ndk_obj *owner)
{
	/* Pairs with ndk_cq_owner_lookup(). */
	smp_mb();
	cmpxchg(&cq->owner, owner, NULL);
}

/*
 * ndk_cq_owner() without the hint: look the owner up, and make it the
 * hint if it is a QP that is not closing (an SRQ's results come from
 * several QPs). Should the QP start closing meanwhile, the poller or
 * ndk_cq_forget_owner() clears the hint: each finds the other's update.
 */
static noinline struct ndk_obj *ndk_cq_owner_lookup(struct ndk_cq *cq,
						    u64 wr_id, u64 kind)
{
	struct ndk_obj *owner = ndk_wr_owner(wr_id, kind);

	/* A closed QP stays an owner until swept, but never a hint. */
	if (!owner || kind == NDK_WR_SRQ ||
	    READ_ONCE(owner->state) == NDK_OBJ_CLOSING)
		return owner;
	WRITE_ONCE(cq->owner, owner);
	/* Pairs with the barrier in ndk_cq_forget_owner(). */
	smp_mb();
	if (ndk_wr_owner(wr_id, kind) != owner ||
	    READ_ONCE(owner->state) == NDK_OBJ_CLOSING)
		cmpxchg(&cq->owner, owner, NULL);
	return owner;
}

/*
 * The live QP or SRQ that posted the request of @wr_id, under
 * rcu_read_lock(): the hint of the CQ if it names the object, else
 * ndk_wr_owner(). Owner ids are not reused while the object is in
 * ndk_wr_owners, which the hint's is until it is forgotten; the hint is
 * a QP, so an SRQ's request never takes it.
 */
static __always_inline struct ndk_obj *ndk_cq_owner(struct ndk_cq *cq,
						    u64 wr_id, u64 kind)
{
	struct ndk_obj *owner = READ_ONCE(cq->owner);

	if (likely(owner && kind != NDK_WR_SRQ &&
		   owner->owner_id ==
		   ((wr_id >> NDK_WR_ID_SHIFT) & NDK_WR_ID_MASK)))
		return owner;
	return ndk_cq_owner_lookup(cq, wr_id, kind);
}

/*
 * The status of a failed completion of @qp's request (@qp NULL for an
 * SRQ's or a request ndk did not post). NDKPI cancels what NdkFlush or
 * NdkDisconnect finds outstanding; siw fails the request it is sending
 * when the QP leaves RTS under it as a local QP error, which is then
 * the consumer's cancellation, not a failure of the connection.
 */
static noinline NTSTATUS ndk_wc_status(const struct ib_wc *wc,
				       const struct ndk_qp *qp)
{
	if (wc->status == IB_WC_LOC_QP_OP_ERR && qp &&
	    READ_ONCE(qp->cancelling))
		return STATUS_CANCELLED;
	return ndk_status_from_wc(wc->status);
}

/*
 * Fill @r from @wc and set *@type, under rcu_read_lock(). The QP or SRQ
 * that posted the request is found from the wr_id (see ndk_cq_owner()),
 * and the request leaves its queue.
 *
 * Return: false, leaving @r alone, when that QP or SRQ is gone, when the
 * request has had its result already, or for the success of a silent
 * request: the completion is dropped.
 */
static __always_inline bool ndk_wc_to_result(struct ndk_cq *cq,
					     const struct ib_wc *wc,
					     NDK_RESULT *r,
					     NDK_OPERATION_TYPE *type)
{
	u64 kind = wc->wr_id >> NDK_WR_KIND_SHIFT;
	struct ndk_wr_ring *ring;
	struct ndk_srq *srq;
	struct ndk_qp *qp = NULL;
	struct ndk_obj *owner;
	bool quiet;
	u32 slot;
	u8 state;

	if (!kind) {
		r->RequestContext = (void *)(uintptr_t)wc->wr_id;
		r->QPContext = ndk_qp_context(wc->qp);
		*type = ndk_wc_type(wc);
	} else {
		owner = ndk_cq_owner(cq, wc->wr_id, kind);
		if (unlikely(!owner))
			return false;
		if (kind == NDK_WR_SRQ) {
			srq = container_of(owner, struct ndk_srq, obj);
			ring = &srq->ring;
			r->QPContext = ndk_srq_qp_context(srq, wc->qp);
		} else {
			qp = container_of(owner, struct ndk_qp, obj);
			ring = kind == NDK_WR_SQ ? &qp->sq : &qp->rq;
			r->QPContext = qp->context;
		}
		slot = wc->wr_id & ring->mask;
		/*
		 * The state before the rest, acquired: it pairs with the
		 * poster's release (ndk_ring_take(), ndk_qp_post()), so a
		 * slot refilled since the request left it shows the new
		 * sequence number with the new state, never the old number.
		 */
		state = smp_load_acquire(&ring->state[slot]);
		/*
		 * The request has left its slot: ndk swept it, or the driver
		 * reports it late or twice. It has had its result.
		 */
		if (unlikely(state == NDK_SLOT_FREE ||
			     ring->seq[slot] != (u32)wc->wr_id)) {
			/* Counted once already, as polled or swept. */
			ndk_stat_add_to(cq->stats, NDK_STAT_COMPLETED, -1);
			return false;
		}
		r->RequestContext = ring->ctx[slot];
		*type = ring->type[slot];
		quiet = state == NDK_SLOT_QUIET;
		if (kind == NDK_WR_SRQ)
			ndk_srq_consumed(srq, slot);
		else
			ndk_ring_free_slot(ring, slot);
		if (quiet && wc->status == IB_WC_SUCCESS)
			return false;
	}
	r->BytesTransferred = 0;
	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		r->Status = ndk_wc_status(wc, qp);
		return true;
	}
	r->Status = STATUS_SUCCESS;
	if (*type == NdkOperationTypeReceive &&
	    unlikely(wc->wc_flags & IB_WC_WITH_INVALIDATE)) {
		*type = NdkOperationTypeReceiveAndInvalidate;
		/* A peer may not take a registered region away (mr.c). */
		WRITE_ONCE(cq->hold,
			   ndk_mr_remote_invalidated(cq->obj.adapter->dev,
						     wc->ex.invalidate_rkey));
	}
	if (*type == NdkOperationTypeReceive ||
	    *type == NdkOperationTypeRead ||
	    *type == NdkOperationTypeReceiveAndInvalidate)
		r->BytesTransferred = wc->byte_len;
	return true;
}

/* Count a failed completion on this CPU: no lock, no atomic. */
static void ndk_cq_count_error(struct ndk_cq *cq, enum ib_wc_status status)
{
	ndk_stat_add_to(cq->stats, status == IB_WC_WR_FLUSH_ERR ?
			NDK_STAT_CQ_FLUSHED : NDK_STAT_CQ_ERRORS, 1);
}

/*
 * Poll the device for @ask completions into @cq->wc. Fewer than asked
 * means the CQ was empty just now, and the caller stops there rather
 * than ask the device again.
 */
static __always_inline int ndk_cq_poll(struct ndk_cq *cq, int ask)
{
	return cq->poll_cq(cq->ibcq, ask, cq->wc);
}

/*
 * Fill entry @done of @Results (NDK_RESULT_EX if @ex, else NDK_RESULT)
 * from @wc, under rcu_read_lock(); whether it gave a result.
 */
static __always_inline bool ndk_cq_take(struct ndk_cq *cq,
					const struct ib_wc *wc, void *Results,
					ULONG done, bool ex,
					NDK_OPERATION_TYPE *type)
{
	size_t size = ex ? sizeof(NDK_RESULT_EX) : sizeof(NDK_RESULT);
	NDK_RESULT_EX *rx = Results + done * size;

	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		ndk_cq_count_error(cq, wc->status);
		if (ndk_fault_lost(wc->status))
			return false;
	}
	if (!ndk_wc_to_result(cq, wc, (NDK_RESULT *)rx, type))
		return false;
	if (ex) {
		rx->Type = *type;
		rx->ProviderErrorCode = wc->vendor_err;
		rx->TypeSpecificCompletionOutput =
			*type == NdkOperationTypeReceiveAndInvalidate ?
			wc->ex.invalidate_rkey : 0;
	}
	return true;
}

/* The driver's poll while results are held: the device is not asked. */
static int ndk_cq_poll_held(struct ib_cq *ibcq, int num_entries,
			    struct ib_wc *wc)
{
	return 0;
}

/*
 * A receive invalidated a registered region (@hold set): its result @r,
 * from @wc, and the results behind it in @cq->wc, from @from to @n, wait
 * until the region is restored; the device is not polled before they
 * are given.
 */
static noinline void ndk_cq_hold(struct ndk_cq *cq, const struct ib_wc *wc,
				 const NDK_RESULT *r, int from, int n)
{
	struct ndk_device *dev = cq->obj.adapter->dev;
	unsigned long flags;

	memcpy(&cq->held_res, r, sizeof(*r));
	cq->held_res.Type = NdkOperationTypeReceiveAndInvalidate;
	cq->held_res.ProviderErrorCode = wc->vendor_err;
	cq->held_res.TypeSpecificCompletionOutput = wc->ex.invalidate_rkey;
	cq->held_has = true;
	cq->stash_at = from;
	cq->stash_end = n;
	/*
	 * The poll path tests nothing for this: until the held results are
	 * given, the device is not polled, and the empty poll's look at
	 * @sweep_due leads to ndk_cq_unstash().
	 */
	if (!cq->held) {
		cq->poll_dev = cq->poll_cq;
		cq->poll_cq = ndk_cq_poll_held;
	}
	WRITE_ONCE(cq->held, true);
	spin_lock_irqsave(&cq->sweep_lock, flags);
	WRITE_ONCE(cq->sweep_due, true);
	spin_unlock_irqrestore(&cq->sweep_lock, flags);
	spin_lock_irqsave(&dev->held_lock, flags);
	if (list_empty(&cq->held_node))
		list_add_tail(&cq->held_node, &dev->held_cqs);
	spin_unlock_irqrestore(&dev->held_lock, flags);
}

/*
 * Fill @Results from the @n completions in @cq->wc, polled for the first
 * batch of @nResults, and go on polling while the device returns all it
 * is asked for. The RCU read section keeps a closed QP's rings readable.
 * A receive that invalidated a registered region ends the call: its
 * result and those behind it wait until the region is restored.
 */
static __always_inline ULONG ndk_cq_fill(struct ndk_cq *cq, void *Results,
					 ULONG nResults, int n, bool ex)
{
	size_t size = ex ? sizeof(NDK_RESULT_EX) : sizeof(NDK_RESULT);
	int ask = min_t(ULONG, nResults, NDK_CQ_POLL_BATCH);
	NDK_OPERATION_TYPE type;
	ULONG done = 0;
	int i;

	rcu_read_lock();
	for (;;) {
		ndk_stat_add_to(cq->stats, NDK_STAT_COMPLETED, n);
		for (i = 0; i < n; i++) {
			if (!ndk_cq_take(cq, &cq->wc[i], Results, done, ex,
					 &type))
				continue;
			if (unlikely(type == NdkOperationTypeReceiveAndInvalidate) &&
			    cq->hold) {
				ndk_cq_hold(cq, &cq->wc[i],
					    Results + done * size, i + 1, n);
				goto out;
			}
			done++;
		}
		if (n < ask || done == nResults)
			break;
		ask = min_t(ULONG, nResults - done, NDK_CQ_POLL_BATCH);
		n = ndk_cq_poll(cq, ask);
		if (n <= 0)
			break;
	}
out:
	rcu_read_unlock();
	return done;
}

/*
 * The results @cq holds back (@held), once their region is restored: as
 * many as the consumer's buffer takes, in order, without asking the
 * device, which the next call does.
 */
static noinline ULONG ndk_cq_unstash(struct ndk_cq *cq, bool ex)
{
	size_t size = ex ? sizeof(NDK_RESULT_EX) : sizeof(NDK_RESULT);
	NDK_OPERATION_TYPE type;
	ULONG done = 0;
	int i;

	if (cq->hold) {
		if (!ndk_mr_restored(cq->obj.adapter->dev, cq->hold))
			return 0;
		WRITE_ONCE(cq->hold, 0);
	}
	if (cq->held_has && cq->nresults) {
		memcpy(cq->results, &cq->held_res, size);
		cq->held_has = false;
		done++;
	}
	rcu_read_lock();
	while (cq->stash_at < cq->stash_end && done < cq->nresults) {
		i = cq->stash_at++;
		if (!ndk_cq_take(cq, &cq->wc[i], cq->results, done, ex, &type))
			continue;
		if (unlikely(type == NdkOperationTypeReceiveAndInvalidate) &&
		    cq->hold) {
			ndk_cq_hold(cq, &cq->wc[i], cq->results + done * size,
				    cq->stash_at, cq->stash_end);
			break;
		}
		done++;
	}
	rcu_read_unlock();
	/* @sweep_due stays set: the next empty poll looks at the sweep. */
	if (!cq->hold && !cq->held_has && cq->stash_at == cq->stash_end) {
		cq->poll_cq = cq->poll_dev;
		WRITE_ONCE(cq->held, false);
	}
	return done;
}

/**
 * ndk_cq_restored() - regions of @dev were restored
 * @dev: the device
 *
 * The CQs that held results back for one notify, if armed, as they would
 * for a completion of their device, unless the consumer took the results
 * before the notification ran (ndk_cq_notify_poll()). Called by
 * ndk_mr_restore_work().
 */
void ndk_cq_restored(struct ndk_device *dev)
{
	struct ndk_cq *cq, *next;
	unsigned long flags;

	spin_lock_irqsave(&dev->held_lock, flags);
	list_for_each_entry_safe(cq, next, &dev->held_cqs, held_node) {
		list_del_init(&cq->held_node);
		ndk_cq_sched(cq);
	}
	spin_unlock_irqrestore(&dev->held_lock, flags);
}

/*
 * The sweep's results, or the results held back, read from the call's
 * buffer kept in the CQ, so that the empty poll keeps nothing but the CQ
 * across the driver's call.
 */
static noinline ULONG ndk_cq_swept(struct ndk_cq *cq, bool ex)
{
	if (cq->held)
		return ndk_cq_unstash(cq, ex);
	return ndk_sweep_poll(cq, cq->results, cq->nresults, ex);
}

/*
 * The device's results, and after them, if it ran out before the
 * consumer's buffer did, what the sweep holds: a driver that flushes a
 * reposted receive inside the post (siw) leaves one in the CQ at every
 * poll of a consumer that reposts each flushed receive, and the sweep
 * must not wait for a poll that finds the CQ empty.
 */
static __always_inline ULONG ndk_cq_results_swept(struct ndk_cq *cq, int n,
						  bool ex)
{
	size_t size = ex ? sizeof(NDK_RESULT_EX) : sizeof(NDK_RESULT);
	ULONG done = ndk_cq_fill(cq, cq->results, cq->nresults, n, ex);

	/*
	 * ndk_cq_fill() stops short of the buffer's end at an empty poll,
	 * or where it holds results back.
	 */
	if (unlikely(data_race(cq->sweep_due)) && done < cq->nresults &&
	    !cq->held)
		done += ndk_sweep_poll(cq, cq->results + done * size,
				       cq->nresults - done, ex);
	return done;
}

static noinline ULONG ndk_cq_results(struct ndk_cq *cq, int n)
{
	return ndk_cq_results_swept(cq, n, false);
}

static noinline ULONG ndk_cq_results_ex(struct ndk_cq *cq, int n)
{
	return ndk_cq_results_swept(cq, n, true);
}

/*
 * An empty poll is one call into the driver, and a look at the sweep
 * (sweep.c), which reports what the device lost only once it has
 * reported all it holds. The
 * consumer's buffer waits in the CQ while the driver polls, so that
 * nothing but the CQ is kept across the call. Every poll asks the
 * driver, even right after an arm that reported nothing missed: siw
 * reads its producer index for that report without ordering it against
 * its completer, so the consumer's poll after the arm is what catches a
 * completion whose notification was lost.
 */
static ULONG ndk_get_cq_results(NDK_CQ *pNdkCq, NDK_RESULT Results[],
				ULONG nResults)
{
	struct ndk_cq *cq = to_ndk_cq(pNdkCq);
	int n;

	cq->results = Results;
	cq->nresults = nResults;
	/* Asked for none, the driver returns none. */
	n = ndk_cq_poll(cq, min_t(ULONG, nResults, NDK_CQ_POLL_BATCH));
	if (n > 0)
		return ndk_cq_results(cq, n);
	/* A hint: a stale read only moves the sweep to the next poll. */
	if (unlikely(data_race(cq->sweep_due)))
		return ndk_cq_swept(cq, false);
	return 0;
}

static ULONG ndk_get_cq_results_ex(NDK_CQ *pNdkCq, NDK_RESULT_EX Results[],
				   ULONG nResults)
{
	struct ndk_cq *cq = to_ndk_cq(pNdkCq);
	int n;

	cq->results = Results;
	cq->nresults = nResults;
	/* Asked for none, the driver returns none. */
	n = ndk_cq_poll(cq, min_t(ULONG, nResults, NDK_CQ_POLL_BATCH));
	if (n > 0)
		return ndk_cq_results_ex(cq, n);
	/* A hint: a stale read only moves the sweep to the next poll. */
	if (unlikely(data_race(cq->sweep_due)))
		return ndk_cq_swept(cq, true);
	return 0;
}

static const NDK_CQ_DISPATCH ndk_cq_dispatch = {
	.NdkCloseCq = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkResizeCq = ndk_resize_cq,
	.NdkArmCq = ndk_arm_cq,
	.NdkGetCqResults = ndk_get_cq_results,
	.NdkControlCqInterruptModeration = ndk_control_cq_interrupt_moderation,
	.NdkGetCqResultsEx = ndk_get_cq_results_ex,
};

NDK_OBJ_CHECK_LAYOUT(struct ndk_cq);

static NTSTATUS ndk_cq_create(struct ndk_obj *obj)
{
	struct ndk_cq *cq = container_of(obj, struct ndk_cq, obj);
	struct ib_cq_init_attr attr = {
		.cqe = cq->depth,
		.comp_vector = cq->comp_vector,
	};
	struct ib_cq *ibcq;

	ibcq = NDK_FI_PTR(ib_create_cq(obj->adapter->ibdev,
				       ndk_cq_comp_handler,
				       ndk_cq_event_handler, cq, &attr));
	if (IS_ERR(ibcq))
		return ndk_status_from_errno(PTR_ERR(ibcq));
	cq->ibcq = ibcq;
	cq->poll_cq = ibcq->device->ops.poll_cq;
	return STATUS_SUCCESS;
}

/* A notification callback of @cq is running. */
static bool ndk_cq_in_notify(struct ndk_cq *cq)
{
	bool busy;

	spin_lock_irq(&cq->notify_lock);
	busy = cq->in_notify;
	spin_unlock_irq(&cq->notify_lock);
	return busy;
}

static void ndk_cq_destroy(struct ndk_obj *obj)
{
	struct ndk_cq *cq = container_of(obj, struct ndk_cq, obj);

	/*
	 * No notification starts after this, and the one running, if any,
	 * is waited for: ndk_cq_fire() tests @dead under the lock before it
	 * calls the consumer. A notification that had not taken the lock
	 * yet may still read the CQ, which is why it is freed after a grace
	 * period rather than waited for with one here.
	 * The irq_poll instance is off every CPU's list after this; the
	 * handlers' later scheduling attempts find it disabled. The driver
	 * may still call them until ib_destroy_cq() returns; then no
	 * irq_work is queued any more and the last one is waited for.
	 */
	spin_lock_irq(&cq->obj.adapter->dev->held_lock);
	list_del_init(&cq->held_node);
	spin_unlock_irq(&cq->obj.adapter->dev->held_lock);
	spin_lock_irq(&cq->notify_lock);
	WRITE_ONCE(cq->dead, true);
	spin_unlock_irq(&cq->notify_lock);
	wait_var_event(&cq->in_notify, !ndk_cq_in_notify(cq));
	irq_poll_disable(&cq->iop);
	if (cq->ibcq)
		ib_destroy_cq(cq->ibcq);
	irq_work_sync(&cq->kick);
	/* Closed QPs whose results nobody will poll now may go. */
	ndk_sweep_drop(cq);
}

static void ndk_cq_free_rcu(struct rcu_head *rcu)
{
	kmem_cache_free(ndk_cq_cache, container_of(rcu, struct ndk_cq, rcu));
}

/*
 * After a grace period: a notification may still read the CQ (see
 * ndk_cq_destroy()). Module exit waits for it with rcu_barrier().
 */
static void ndk_cq_free(struct ndk_obj *obj)
{
	struct ndk_cq *cq = container_of(obj, struct ndk_cq, obj);

	call_rcu(&cq->rcu, ndk_cq_free_rcu);
}

static const struct ndk_obj_ops ndk_cq_ops = {
	.create = ndk_cq_create,
	.destroy = ndk_cq_destroy,
	.free = ndk_cq_free,
};

/**
 * ndk_create_cq() - NdkCreateCq
 * @pNdkAdapter: the adapter
 * @CqDepth: entries, 1 to MaxCqDepth
 * @CqNotification: notification callback, called only when armed
 * @CqNotificationContext: its context
 * @Affinity: preferred processors for notifications, or NULL
 * @CreateCompletion: called with the new CQ, from ndk_wq, when the
 *	creation pends
 * @RequestContext: passed back to @CreateCompletion
 * @ppNdkCq: receives the CQ when the creation completes inline
 *
 * Callable from atomic context. Where the kernel can tell that the caller
 * may sleep, and @ppNdkCq is given, the CQ is created inline.
 *
 * Return: STATUS_SUCCESS (created inline), STATUS_PENDING,
 * STATUS_INVALID_PARAMETER, STATUS_INSUFFICIENT_RESOURCES, or the
 * failure of an inline creation.
 */
NTSTATUS ndk_create_cq(NDK_ADAPTER *pNdkAdapter, ULONG CqDepth,
		       NDK_FN_CQ_NOTIFICATION_CALLBACK CqNotification,
		       PVOID CqNotificationContext, GROUP_AFFINITY *Affinity,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_CQ **ppNdkCq)
{
	struct ndk_adapter *adapter;
	struct ndk_cq *cq;
	NTSTATUS status;

	if (!pNdkAdapter || !CreateCompletion)
		return STATUS_INVALID_PARAMETER;
	adapter = container_of(pNdkAdapter, struct ndk_adapter, ndk);
	if (!CqDepth || CqDepth > adapter->info.MaxCqDepth)
		return STATUS_INVALID_PARAMETER;
	if (Affinity && !Affinity->Mask)
		return STATUS_INVALID_PARAMETER;
	cq = NDK_FI_NULL(kmem_cache_alloc(ndk_cq_cache, GFP_ATOMIC));
	if (!cq)
		return STATUS_INSUFFICIENT_RESOURCES;
	memset(cq, 0, offsetof(struct ndk_cq, wc));
	cq->ndk.Dispatch = &ndk_cq_dispatch;
	cq->depth = CqDepth;
	cq->stats = adapter->dev->stats;
	cq->comp_vector = ndk_cq_pick_vector(adapter->ibdev, Affinity);
	cq->notify_cb = CqNotification;
	cq->notify_ctx = CqNotificationContext;
	cq->fatal = STATUS_SUCCESS;
	atomic_set(&cq->arm, NDK_ARM_NONE);
	spin_lock_init(&cq->notify_lock);
	spin_lock_init(&cq->sweep_lock);
	INIT_LIST_HEAD(&cq->sweeps);
	INIT_LIST_HEAD(&cq->retires);
	INIT_LIST_HEAD(&cq->held_node);
	irq_poll_init(&cq->iop, NDK_CQ_NOTIFY_WEIGHT, ndk_cq_notify_poll);
	init_irq_work(&cq->kick, ndk_cq_kick_work);
	INIT_WORK(&cq->moderation_work, ndk_cq_moderation_work);
	ndk_obj_init(&cq->obj, &cq->ndk.Header, NdkObjectTypeCq, &ndk_cq_ops,
		     &adapter->obj);
	status = ndk_obj_create(&cq->obj, CreateCompletion, RequestContext,
				!!ppNdkCq);
	if (status == STATUS_SUCCESS)
		*ppNdkCq = &cq->ndk;
	return status;
}
