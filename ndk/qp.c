// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * NDK_QP: a reliable-connected queue pair. It is a successor of its PD
 * and of both of its CQs, so none of them completes its close while the
 * QP lives. Connectors move it through its states. Send, receive and
 * flush, RDMA read and write, and the memory requests are here, with
 * the dispatch table; creation, destruction and the device's events
 * and error work are in qp_create.c.
 */
#include "ndk_priv.h"
#include "sweep.h"

/*
 * Move the head of @ring past slots that older requests still hold, to
 * the next free one; the sequence numbers passed over are never used.
 * There is one: fewer than the depth are taken, of twice as many slots.
 */
static noinline bool ndk_ring_skip(struct ndk_wr_ring *ring)
{
	u32 n;

	for (n = 0; n <= ring->mask; n++) {
		ring->head++;
		/* Pairs with ndk_ring_free_slot(): the poller is done with it. */
		if (smp_load_acquire(&ring->state[ring->head & ring->mask]) ==
		    NDK_SLOT_FREE)
			return true;
	}
	return false;
}

/*
 * Whether a QP's queue has room for one more request: fewer than its
 * depth unretired. The request's slot is then the head's (ring.h).
 * Poster only.
 */
static __always_inline bool ndk_ring_room(struct ndk_wr_ring *ring)
{
	if (ring->posted - READ_ONCE(ring->retired) >= ring->depth)
		return false;
	/* Pairs with ndk_ring_free_slot(): the poller is done with the slot. */
	if (likely(smp_load_acquire(&ring->state[ring->head & ring->mask]) ==
		   NDK_SLOT_FREE))
		return true;
	return ndk_ring_skip(ring);
}

static struct ndk_qp *to_ndk_qp(NDK_QP *qp)
{
	return container_of(qp, struct ndk_qp, ndk);
}

/*
 * Inline data is copied by the CPU from the SGE address, which must then
 * be a kernel virtual address; with the privileged token it is a device
 * address instead.
 */
static __always_inline bool ndk_qp_sges_privileged(struct ndk_qp *qp,
						   const NDK_SGE *sgl, ULONG n)
{
	ULONG i;

	for (i = 0; i < n; i++)
		if (sgl[i].MemoryRegionToken == qp->ibqp->pd->local_dma_lkey)
			return true;
	return false;
}

/* The initiator SGE array of held request @i. */
static struct ib_sge *ndk_qp_isge(struct ndk_qp *qp, u32 i)
{
	return qp->isge + i * max(qp->max_isge, 1U);
}

/* The receive queue's spare SGE array, after the initiator's arrays. */
static struct ib_sge *ndk_qp_rsge(struct ndk_qp *qp)
{
	return ndk_qp_isge(qp, qp->max_held + 1);
}

/* Bytes of the structure around @wr: what holding it has to copy. */
static size_t ndk_wr_size(const struct ib_send_wr *wr)
{
	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_READ:
	case IB_WR_RDMA_READ_WITH_INV:
		return sizeof(struct ib_rdma_wr);
	case IB_WR_REG_MR:
		return sizeof(struct ib_reg_wr);
	default:
		return sizeof(struct ib_send_wr);
	}
}

/*
 * ib_send_flags by the low three bits of a request's flags: one load
 * instead of a test for each of NDK_OP_FLAG_READ_FENCE (bit 1) and
 * _SEND_AND_SOLICIT_EVENT (bit 2). Bit 0, NDK_OP_FLAG_SILENT_SUCCESS,
 * changes nothing here: every request is signaled (see NDK_SLOT_QUIET).
 */
static const u8 ndk_ib_flags[8] = {
	IB_SEND_SIGNALED, IB_SEND_SIGNALED,
	IB_SEND_SIGNALED | IB_SEND_FENCE, IB_SEND_SIGNALED | IB_SEND_FENCE,
	IB_SEND_SIGNALED | IB_SEND_SOLICITED,
	IB_SEND_SIGNALED | IB_SEND_SOLICITED,
	IB_SEND_SIGNALED | IB_SEND_FENCE | IB_SEND_SOLICITED,
	IB_SEND_SIGNALED | IB_SEND_FENCE | IB_SEND_SOLICITED,
};

static __always_inline unsigned int ndk_send_flags(ULONG Flags)
{
	BUILD_BUG_ON((NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE |
		      NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT) != 7);
	return ndk_ib_flags[Flags & 7] |
	       (Flags & NDK_OP_FLAG_INLINE ? IB_SEND_INLINE : 0);
}

/* The slot state of a request: silent (QUIET) or not. */
static __always_inline u8 ndk_slot_state(ULONG Flags)
{
	return NDK_SLOT_BUSY +
	       (Flags & NDK_OP_FLAG_SILENT_SUCCESS) *
	       (NDK_SLOT_QUIET - NDK_SLOT_BUSY);
}

/*
 * Give a checked request of @type its ring slot and the signaling @Flags
 * ask. @type is a constant of each posting call, so that nothing decodes
 * the opcode. @wr->wr_id holds the RequestContext, which moves into the
 * queue's ring.
 * The slot is taken for good only once the request is posted or held.
 */
static __always_inline void ndk_qp_prepare(struct ndk_qp *qp,
					   struct ib_send_wr *wr, ULONG Flags,
					   NDK_OPERATION_TYPE type)
{
	wr->send_flags |= ndk_send_flags(Flags);
	wr->wr_id = ndk_ring_take(&qp->sq, qp->sq.head,
				  (void *)(uintptr_t)wr->wr_id, type,
				  ndk_slot_state(Flags));
}

/* The driver of @qp's device is being unloaded: see ndk_driver_going(). */
static __always_inline bool ndk_qp_driver_going(const struct ndk_qp *qp)
{
	return READ_ONCE(*qp->driver) == MODULE_STATE_GOING;
}

/* Post one checked request on the initiator queue. */
static __always_inline NTSTATUS ndk_qp_post_wr(struct ndk_qp *qp,
					       struct ib_send_wr *wr,
					       ULONG Flags,
					       NDK_OPERATION_TYPE type)
{
	int err;

	if (unlikely(!ndk_ring_room(&qp->sq)))
		return STATUS_INSUFFICIENT_RESOURCES;
	if (unlikely(ndk_qp_driver_going(qp)))
		return STATUS_DEVICE_REMOVED;
	ndk_qp_prepare(qp, wr, Flags, type);
	err = ib_post_send(qp->ibqp, wr, NULL);
	if (unlikely(err)) {
		ndk_ring_untake(&qp->sq, qp->sq.head);
		return ndk_status_from_errno(err);
	}
	qp->sq.head++;
	qp->sq.posted++;
	ndk_stat_add_to(qp->stats, NDK_STAT_POSTED, 1);
	return STATUS_SUCCESS;
}

/*
 * Hand the held requests to the device as one chain, followed by @last
 * unless it is NULL. The held requests were accepted already, so any the
 * device refuses (its queue is full) stay held, in order, for the next
 * attempt; the ones before the refused one were posted and complete.
 * While the driver is being unloaded only a QP in the error state gets
 * them (see ndk_driver_going()): ndk_qp_set_error() hands them over once
 * it is. The caller owns @qp->held.
 *
 * Return: 0, or the errno for which @last was not posted.
 */
static int ndk_qp_post_held(struct ndk_qp *qp, struct ib_send_wr *last)
{
	union ndk_held_wr *held = qp->held;
	u32 n = qp->nheld, done = 0, i;
	const struct ib_send_wr *bad, *w;
	struct ib_send_wr *first;
	int err;

	first = n ? &held[0].wr : last;
	if (!first)
		return 0;
	/* Ordered by the claims: see ndk_qp_set_error(). */
	if (unlikely(!READ_ONCE(qp->in_error) && ndk_qp_driver_going(qp)))
		return -ENODEV;
	if (n)
		held[n - 1].wr.next = last;
	/* A driver that fails without naming the request posted none. */
	bad = first;
	err = ib_post_send(qp->ibqp, first, &bad);
	if (err)
		for (w = first; w && w != bad; w = w->next)
			done++;
	else
		done = n + !!last;
	ndk_stat_add_to(qp->stats, NDK_STAT_POSTED, done);
	if (done >= n) {
		/* Pairs with the poster's check: the arrays are free again. */
		smp_store_release(&qp->nheld, 0);
		return err;
	}
	if (done) {
		for (i = done; i < n; i++) {
			held[i - done] = held[i];
			if (!held[i].wr.num_sge)
				continue;
			memcpy(ndk_qp_isge(qp, i - done), ndk_qp_isge(qp, i),
			       held[i].wr.num_sge * sizeof(struct ib_sge));
			held[i - done].wr.sg_list = ndk_qp_isge(qp, i - done);
		}
		for (i = 0; i + 1 < n - done; i++)
			held[i].wr.next = &held[i + 1].wr;
	}
	held[n - done - 1].wr.next = NULL;
	WRITE_ONCE(qp->nheld, n - done);
	return err;
}

/* The common case: nothing is held, no array is in use. */
static bool ndk_qp_none_held(struct ndk_qp *qp)
{
	/* Pairs with ndk_qp_post_held(): the arrays are free after it. */
	return !smp_load_acquire(&qp->nheld);
}

/*
 * The poster owns the held requests, except while ndk_qp_set_error()
 * hands them to the device from another CPU. Not a lock: the failure
 * that finds the poster inside leaves them to the poster's release
 * (ndk_qp_release()), and the poster that finds the failure inside
 * refuses its request (ndk_qp_post_held_too()).
 */
static bool ndk_qp_claim(struct ndk_qp *qp)
{
	return !atomic_xchg(&qp->held_owner, 1);
}

static void ndk_qp_drain(struct ndk_qp *qp)
{
	if (!ndk_qp_claim(qp))
		return;
	ndk_qp_post_held(qp, NULL);
	atomic_set_release(&qp->held_owner, 0);
}

static void ndk_qp_release(struct ndk_qp *qp)
{
	/*
	 * Fully ordered, like the claim in ndk_qp_set_error() after it
	 * cleared connected: if it found the requests busy, this sees
	 * connected cleared and posts what is left.
	 */
	atomic_xchg(&qp->held_owner, 0);
	if (unlikely(!READ_ONCE(qp->connected) && READ_ONCE(qp->nheld)))
		ndk_qp_drain(qp);
}

/*
 * Finish a request that found requests held, or that asks to be held,
 * with the held requests owned. @status is the outcome of its checks.
 * A failing request first sends everything held to the device, as the
 * deferral rules demand. Inline data must be copied before the call
 * returns, so an inline request is never held.
 */
static NTSTATUS ndk_qp_submit(struct ndk_qp *qp, struct ib_send_wr *wr,
			      ULONG Flags, NDK_OPERATION_TYPE type,
			      NTSTATUS status)
{
	struct ib_sge *sge;
	u32 n;
	int err;

	if (!status && !ndk_ring_room(&qp->sq))
		status = STATUS_INSUFFICIENT_RESOURCES;
	if (status) {
		ndk_qp_post_held(qp, NULL);
		return status;
	}
	if (qp->nheld == qp->max_held) {
		ndk_qp_post_held(qp, NULL);
		if (qp->nheld == qp->max_held)
			return STATUS_INSUFFICIENT_RESOURCES;
	}
	ndk_qp_prepare(qp, wr, Flags, type);
	if ((Flags & (NDK_OP_FLAG_DEFER | NDK_OP_FLAG_INLINE)) !=
	    NDK_OP_FLAG_DEFER) {
		err = ndk_qp_post_held(qp, wr);
		if (err) {
			ndk_ring_untake(&qp->sq, qp->sq.head);
		} else {
			qp->sq.head++;
			qp->sq.posted++;
		}
		return ndk_status_from_errno(err);
	}
	n = qp->nheld;
	memcpy(&qp->held[n], wr, ndk_wr_size(wr));
	qp->held[n].wr.next = NULL;
	/* The consumer's SGE array is its own again once the call returns. */
	if (wr->num_sge) {
		sge = ndk_qp_isge(qp, n);
		memcpy(sge, wr->sg_list, wr->num_sge * sizeof(*sge));
		qp->held[n].wr.sg_list = sge;
	}
	if (n)
		qp->held[n - 1].wr.next = &qp->held[n].wr;
	qp->sq.head++;
	qp->sq.posted++;
	WRITE_ONCE(qp->nheld, n + 1);
	if (n + 1 == qp->max_held)
		ndk_qp_post_held(qp, NULL);
	return STATUS_SUCCESS;
}

/*
 * ndk_qp_post_checked() for a request that defers or finds requests
 * held. While ndk_qp_set_error() hands the held ones to the device (the
 * poster, which the consumer serializes, never finds them claimed
 * otherwise), the connection is going: the request is refused, as it
 * would be a moment later, rather than pass the held ones.
 */
static noinline NTSTATUS ndk_qp_post_held_too(struct ndk_qp *qp,
					      struct ib_send_wr *wr,
					      ULONG Flags,
					      NDK_OPERATION_TYPE type,
					      NTSTATUS status)
{
	if (!ndk_qp_claim(qp))
		return status ?: STATUS_CONNECTION_INVALID;
	status = ndk_qp_submit(qp, wr, Flags, type, status);
	ndk_qp_release(qp);
	return status;
}

/*
 * Post a checked initiator request, or fail it with @status. Unless the
 * request is deferred or requests are held, this is one test more than
 * posting it alone.
 */
static __always_inline NTSTATUS ndk_qp_post_checked(struct ndk_qp *qp,
						    struct ib_send_wr *wr,
						    ULONG Flags,
						    NDK_OPERATION_TYPE type,
						    NTSTATUS status)
{
	if (likely(!(Flags & NDK_OP_FLAG_DEFER) && ndk_qp_none_held(qp)))
		return status ?: ndk_qp_post_wr(qp, wr, Flags, type);
	return ndk_qp_post_held_too(qp, wr, Flags, type, status);
}

/*
 * ndk_sges_packed() for an initiator request, in the QP's spare array.
 * A read of no bytes keeps one empty SGE: siw takes a read with exactly
 * one, and a read of nothing behind a write is how an iWARP consumer
 * learns that the peer placed the write.
 */
static noinline void ndk_qp_pack_sges(struct ndk_qp *qp, struct ib_send_wr *wr,
				      const NDK_SGE *pSgl, ULONG nSge)
{
	struct ib_sge *spare = ndk_qp_isge(qp, qp->max_held);

	wr->sg_list = ndk_sges_packed(pSgl, &nSge, spare);
	if (!nSge && wr->opcode == IB_WR_RDMA_READ) {
		spare[0] = (struct ib_sge){
			.lkey = qp->ibqp->pd->local_dma_lkey,
		};
		wr->sg_list = spare;
		nSge = 1;
	}
	wr->num_sge = nSge;
}

/*
 * Check an initiator request with local buffers, which go to the device
 * as the consumer's own SGE array, or without its zero-length SGEs
 * before data, or for a read of none with one (ndk_qp_pack_sges()).
 * Inline data of no bytes is no inline data: siw refuses an inline send
 * of none, and *@Flags loses the flag. Inlined into each posting call,
 * which is what makes it cheap.
 */
static __always_inline NTSTATUS
ndk_qp_check(struct ndk_qp *qp, struct ib_send_wr *wr, const NDK_SGE *pSgl,
	     ULONG nSge, ULONG *Flags, ULONG allowed, ULONG max_sge)
{
	NTSTATUS status;
	u64 total;
	ULONG i;

	if (unlikely(!READ_ONCE(qp->connected)))
		return STATUS_CONNECTION_INVALID;
	if (unlikely(*Flags & ~allowed))
		return STATUS_INVALID_PARAMETER;
	status = ndk_sges(pSgl, nSge, max_sge, &total);
	if (unlikely(status))
		return status;
	if (unlikely(total > qp->max_xfer))
		return STATUS_INVALID_BUFFER_SIZE;
	if (unlikely(*Flags & NDK_OP_FLAG_INLINE) &&
	    (total > qp->inline_size || ndk_qp_sges_privileged(qp, pSgl, nSge)))
		return STATUS_INVALID_PARAMETER;
	if (!total)
		*Flags &= ~NDK_OP_FLAG_INLINE;
	wr->sg_list = ndk_ib_sges(pSgl);
	wr->num_sge = nSge;
	if (!nSge && wr->opcode == IB_WR_RDMA_READ) {
		ndk_qp_pack_sges(qp, wr, pSgl, nSge);
		return STATUS_SUCCESS;
	}
	for (i = 0; i + 1 < nSge; i++) {
		if (!pSgl[i].Length) {
			ndk_qp_pack_sges(qp, wr, pSgl, nSge);
			break;
		}
	}
	return STATUS_SUCCESS;
}

/*
 * Check an initiator request and post it, or fail it with the status of
 * the first check that fails, in order; or hold it. Out of line: the
 * requests that come here are refused, deferred, or find requests held.
 */
static noinline NTSTATUS ndk_qp_post_slow(struct ndk_qp *qp,
					  struct ib_send_wr *wr,
					  NDK_OPERATION_TYPE type,
					  const NDK_SGE *pSgl, ULONG nSge,
					  ULONG Flags, ULONG allowed,
					  ULONG max_sge)
{
	NTSTATUS status = ndk_qp_check(qp, wr, pSgl, nSge, &Flags, allowed,
				       max_sge);

	return ndk_qp_post_checked(qp, wr, Flags, type, status);
}

/*
 * The device refused the last request, which ndk_qp_post() counted and
 * gave a slot: take both back. The QP may have failed meanwhile, and its
 * sweep, which sees every slot up to the head, reported the request as
 * cancelled already; that result is then its only one, and the request
 * stays taken. The slot decides: whichever of the two frees it first
 * (the sweep's cmpxchg, or this one) gives the request its outcome.
 */
static noinline NTSTATUS ndk_qp_post_refused(struct ndk_qp *qp, int err)
{
	u32 head = qp->sq.head - 1;
	u8 *state = &qp->sq.state[head & qp->sq.mask];
	u8 taken = READ_ONCE(*state);

	if (taken == NDK_SLOT_FREE ||
	    cmpxchg(state, taken, NDK_SLOT_FREE) != taken)
		return STATUS_SUCCESS;
	qp->sq.head = head;
	qp->sq.posted--;
	ndk_stat_add_to(qp->stats, NDK_STAT_POSTED, -1);
	return ndk_status_from_errno(err);
}

/*
 * Check and post an initiator request with local buffers. The consumer
 * serializes the initiator queue, so nothing here takes a lock, and
 * nothing is allocated.
 *
 * A request that passes every check, neither defers nor finds requests
 * held, and has at least one SGE goes to the device from here, after
 * one pass over what NDKPI requires and ndk's ring slot; every other
 * takes ndk_qp_post_slow(), which tells the checks apart. Both make
 * the same checks, so a request posts, or fails with the same status,
 * whichever way it goes. The request is counted and its slot taken
 * before the device sees it, so that nothing but @qp is needed once
 * the driver returns, and that only if it refused the request.
 */
static __always_inline NTSTATUS ndk_qp_post(struct ndk_qp *qp,
					    struct ib_send_wr *wr,
					    NDK_OPERATION_TYPE type,
					    const NDK_SGE *pSgl, ULONG nSge,
					    ULONG Flags, ULONG allowed,
					    ULONG max_sge)
{
	struct ndk_wr_ring *sq = &qp->sq;
	unsigned int send_flags = 0;
	u32 head, slot;
	void **ctx;
	u8 *types, *state;
	u64 total;
	ULONG i;
	int err;

	/* First: it orders what follows (see ndk_qp_post_held()). */
	if (unlikely(!ndk_qp_none_held(qp) || !READ_ONCE(qp->connected) ||
		     Flags & ~(allowed & ~NDK_OP_FLAG_DEFER) ||
		     nSge - 1 >= max_sge || !pSgl))
		goto slow;
	total = pSgl[0].Length;
	for (i = 1; i < nSge; i++) {
		/* A zero-length SGE before data: ndk_qp_pack_sges(). */
		if (unlikely(!pSgl[i - 1].Length))
			goto slow;
		total += pSgl[i].Length;
	}
	if (unlikely(total > qp->max_xfer))
		goto slow;
	if (unlikely(Flags & NDK_OP_FLAG_INLINE)) {
		if (!total || total > qp->inline_size ||
		    ndk_qp_sges_privileged(qp, pSgl, nSge))
			goto slow;
		send_flags = IB_SEND_INLINE;
	}
	/*
	 * ndk_ring_room() on the slot at hand, whose arrays are loaded once:
	 * the compiler cannot tell the stores below from the ring's fields.
	 */
	head = sq->head;
	slot = head & sq->mask;
	ctx = sq->ctx;
	types = sq->type;
	state = sq->state + slot;
	if (unlikely(sq->posted - READ_ONCE(sq->retired) >= sq->depth))
		goto slow;
	/* Pairs with ndk_ring_free_slot(): the poller is done with the slot. */
	if (unlikely(smp_load_acquire(state) != NDK_SLOT_FREE ||
		     ndk_qp_driver_going(qp)))
		goto slow;
	ctx[slot] = (void *)(uintptr_t)wr->wr_id;
	sq->seq[slot] = head;
	types[slot] = type;
	/* As in ndk_ring_take(): pairs with the poller's and sweep's acquire. */
	smp_store_release(state, ndk_slot_state(Flags));
	wr->wr_id = sq->tag | head;
	wr->sg_list = ndk_ib_sges(pSgl);
	wr->num_sge = nSge;
	wr->send_flags = send_flags | ndk_ib_flags[Flags & 7];
	sq->head = head + 1;
	sq->posted++;
	ndk_stat_add_to(qp->stats, NDK_STAT_POSTED, 1);
	err = ib_post_send(qp->ibqp, wr, NULL);
	if (unlikely(err))
		return ndk_qp_post_refused(qp, err);
	return STATUS_SUCCESS;
slow:
	return ndk_qp_post_slow(qp, wr, type, pSgl, nSge, Flags, allowed,
				max_sge);
}

/**
 * ndk_qp_sweep_later() - sweep @qp once its device has had ndk_sweep_ms
 * @qp: the QP
 *
 * Any context. A sweep due already stays due: putting it off for each
 * receive posted after the failure would let a consumer that reposts
 * every flushed receive keep the initiator queue's lost requests from it
 * for good. A receive the sweep finds still posted comes back cancelled,
 * as its flush would, and a flush the device reports after that is
 * dropped.
 */
void ndk_qp_sweep_later(struct ndk_qp *qp)
{
	queue_delayed_work(ndk_wq, &qp->sweep_work,
			   msecs_to_jiffies(READ_ONCE(ndk_sweep_ms)));
}

/**
 * ndk_qp_set_error() - stop sends and flush what is outstanding
 * @qp: the QP
 *
 * Requests still held for NDK_OP_FLAG_DEFER go to the device first, so
 * that they complete as well. Outstanding requests complete with the
 * flush status; what the device has not reported ndk_sweep_ms later,
 * the sweep reports (sweep.c); a receive posted later is swept
 * ndk_sweep_ms after it at the latest (see ndk_receive()). May sleep:
 * some drivers modify QPs by firmware command.
 */
void ndk_qp_set_error(struct ndk_qp *qp)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

	WRITE_ONCE(qp->ending, true);
	/* Ordered before the claim; see ndk_qp_release(). */
	WRITE_ONCE(qp->connected, false);
	ndk_qp_drain(qp);
	WRITE_ONCE(qp->error_at, jiffies);
	ib_modify_qp(qp->ibqp, &attr, IB_QP_STATE);
	/*
	 * Before the claim: a poster that kept the held requests from the
	 * claim below posts them on its release, and sees this.
	 */
	WRITE_ONCE(qp->in_error, true);
	/*
	 * The device may have refused some while its queue was full, or
	 * ndk kept them back while the driver is being unloaded.
	 */
	ndk_qp_drain(qp);
	ndk_qp_sweep_later(qp);
}

/*
 * NdkFlush: outstanding requests complete as cancelled. Moving the QP to
 * the error state may sleep in the driver, so it happens on ndk_wq.
 */
static void ndk_flush(NDK_QP *pNdkQp)
{
	struct ndk_qp *qp = to_ndk_qp(pNdkQp);

	WRITE_ONCE(qp->ending, true);
	WRITE_ONCE(qp->cancelling, true);
	ndk_obj_get(&qp->obj);
	if (!queue_work(ndk_wq, &qp->flush_work))
		ndk_obj_put(&qp->obj);
}

#define NDK_SEND_FLAGS	(NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE | \
			 NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT |		  \
			 NDK_OP_FLAG_INLINE | NDK_OP_FLAG_DEFER)

/*
 * The posting calls name every field of their request: the compiler then
 * stores each once instead of clearing the whole structure first.
 */
static NTSTATUS ndk_send(NDK_QP *pNdkQp, PVOID RequestContext,
			 const NDK_SGE *pSgl, ULONG nSge, ULONG Flags)
{
	struct ndk_qp *qp = to_ndk_qp(pNdkQp);
	struct ib_send_wr wr = {
		.next = NULL,
		.wr_id = (uintptr_t)RequestContext,
		.sg_list = NULL,
		.num_sge = 0,
		.opcode = IB_WR_SEND,
		.send_flags = 0,
		.ex.imm_data = 0,
	};

	return ndk_qp_post(qp, &wr, NdkOperationTypeSend, pSgl, nSge, Flags,
			   NDK_SEND_FLAGS, qp->max_isge);
}

/* The peer's region under @RemoteToken is invalidated on arrival. */
static NTSTATUS ndk_send_and_invalidate(NDK_QP *pNdkQp, PVOID RequestContext,
					const NDK_SGE *pSgl, ULONG nSge,
					ULONG Flags, UINT32 RemoteToken)
{
	struct ndk_qp *qp = to_ndk_qp(pNdkQp);
	struct ib_send_wr wr = {
		.next = NULL,
		.wr_id = (uintptr_t)RequestContext,
		.sg_list = NULL,
		.num_sge = 0,
		.opcode = IB_WR_SEND_WITH_INV,
		.send_flags = 0,
		.ex.invalidate_rkey = RemoteToken,
	};

	/* siw refuses it, at once or when it comes to send it. */
	if (unlikely(Flags & NDK_OP_FLAG_INLINE) && !qp->inline_inv)
		return STATUS_NOT_SUPPORTED;
	return ndk_qp_post(qp, &wr, NdkOperationTypeSend, pSgl, nSge, Flags,
			   NDK_SEND_FLAGS, qp->max_isge);
}

/*
 * NdkReceive's checks one by one, in order: the status of the first that
 * fails, for a receive ndk_receive_ok() did not pass.
 */
static noinline NTSTATUS ndk_receive_check(struct ndk_qp *qp,
					   const NDK_SGE *pSgl, ULONG nSge)
{
	NTSTATUS status;
	u64 total;

	if (qp->srq)
		return STATUS_INVALID_PARAMETER;
	status = ndk_sges(pSgl, nSge, qp->max_rsge, &total);
	if (status)
		return status;
	if (total > qp->max_xfer)
		return STATUS_INVALID_BUFFER_SIZE;
	if (!ndk_ring_room(&qp->rq))
		return STATUS_INSUFFICIENT_RESOURCES;
	return STATUS_SUCCESS;
}

/* Every check of a receive with at least one SGE, in one pass. */
static __always_inline bool ndk_receive_ok(struct ndk_qp *qp,
					   const NDK_SGE *pSgl, ULONG nSge)
{
	u64 total;
	ULONG i;

	if (qp->srq || READ_ONCE(qp->in_error) || nSge - 1 >= qp->max_rsge ||
	    !pSgl)
		return false;
	total = pSgl[0].Length;
	for (i = 1; i < nSge; i++) {
		/* A zero-length SGE before data: ndk_sges_packed(). */
		if (!pSgl[i - 1].Length)
			return false;
		total += pSgl[i].Length;
	}
	return total <= qp->max_xfer && ndk_ring_room(&qp->rq);
}

/*
 * NdkReceive: allowed before the QP is connected, and after it failed,
 * as on Windows: the device flushes such a receive at once, and the
 * sweep, due at most ndk_sweep_ms later, reports it if the device does
 * not. The checks
 * take one pass unless one fails, as in ndk_qp_post().
 */
static NTSTATUS ndk_receive(NDK_QP *pNdkQp, PVOID RequestContext,
			    const NDK_SGE *pSgl, ULONG nSge)
{
	struct ndk_qp *qp = to_ndk_qp(pNdkQp);
	struct ndk_wr_ring *rq = &qp->rq;
	struct ib_sge *sgl = ndk_ib_sges(pSgl);
	struct ib_recv_wr wr;
	bool failed = false;
	NTSTATUS status;
	u32 head;
	int err;

	if (unlikely(!ndk_receive_ok(qp, pSgl, nSge))) {
		status = ndk_receive_check(qp, pSgl, nSge);
		if (status)
			return status;
		failed = READ_ONCE(qp->in_error);
		sgl = ndk_sges_packed(pSgl, &nSge, ndk_qp_rsge(qp));
	}
	/* Read after the room check, which may move it. */
	head = rq->head;
	wr.next = NULL;
	wr.sg_list = sgl;
	wr.num_sge = nSge;
	wr.wr_id = ndk_ring_take(rq, head, RequestContext,
				 NdkOperationTypeReceive, NDK_SLOT_BUSY);
	err = ib_post_recv(qp->ibqp, &wr, NULL);
	if (unlikely(err) && !ndk_qp_refusal_ends(qp, err)) {
		ndk_ring_untake(rq, head);
		return ndk_status_from_errno(err);
	}
	rq->head = head + 1;
	rq->posted++;
	ndk_stat_add_to(qp->stats, NDK_STAT_POSTED, 1);
	if (unlikely(failed))
		ndk_qp_sweep_later(qp);
	return STATUS_SUCCESS;
}

/* NdkBind: see mw.c. */
static NTSTATUS ndk_bind(NDK_QP *pNdkQp, PVOID RequestContext, NDK_MR *pMr,
			 NDK_MW *pMw, PVOID VirtualAddress, SIZE_T Length,
			 ULONG Flags)
{
	struct ndk_qp *qp = to_ndk_qp(pNdkQp);
	struct ib_reg_wr wr = {
		.wr = { .wr_id = (uintptr_t)RequestContext,
			.opcode = IB_WR_REG_MR },
	};
	NTSTATUS status;

	status = ndk_mw_bind_wr(qp, &wr, pMr, pMw, (uintptr_t)VirtualAddress,
				Length, Flags);
	/* Posted as a fast registration; its result reports a bind. */
	status = ndk_qp_post_checked(qp, &wr.wr, Flags, NdkOperationTypeBind,
				     status);
	/* Not taken: the window keeps its token, undo ndk_mw_bind_wr()'s key. */
	if (status && wr.mr)
		ib_update_fast_reg_key(wr.mr, wr.mr->rkey - 1);
	return status;
}

/* A fast-register MR of the QP's PD, initialized, or NULL. */
static struct ndk_mr *ndk_qp_fast_mr(struct ndk_qp *qp,
				     const NDK_OBJECT_HEADER *hdr)
{
	struct ndk_mr *mr;

	if (!hdr || hdr->ObjectType != NdkObjectTypeMr)
		return NULL;
	mr = container_of(hdr, struct ndk_mr, ndk.Header);
	if (!mr->fast || !READ_ONCE(mr->ibmr) ||
	    &mr->pd->obj != qp->obj.parent)
		return NULL;
	return mr;
}

#define NDK_FR_FLAGS	(NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE | \
			 NDK_OP_FLAG_ALLOW_REMOTE_READ |		  \
			 NDK_OP_FLAG_ALLOW_REMOTE_WRITE |		  \
			 NDK_OP_FLAG_RDMA_READ_SINK | NDK_OP_FLAG_DEFER)
/* The bit of NDK_OP_FLAG_ALLOW_REMOTE_WRITE beyond local write. */
#define NDK_FR_REMOTE_WRITE	(NDK_OP_FLAG_ALLOW_REMOTE_WRITE & \
				 ~NDK_OP_FLAG_ALLOW_LOCAL_WRITE)

/*
 * Check an NdkFastRegister and build its IB_WR_REG_MR over the consumer's
 * pages. The page list goes through the MR's own scatterlist, sized at
 * initialization, so nothing is allocated here.
 */
static NTSTATUS ndk_fast_register_wr(struct ndk_qp *qp, struct ib_reg_wr *wr,
				     NDK_MR *pMr, ULONG AdapterPageCount,
				     const NDK_LOGICAL_ADDRESS *AdapterPageArray,
				     ULONG FBO, SIZE_T Length, u64 va,
				     ULONG Flags)
{
	struct ndk_mr *mr = ndk_qp_fast_mr(qp, pMr ? &pMr->Header : NULL);
	struct scatterlist *sg;
	ULONG i, n;

	if (!READ_ONCE(qp->connected))
		return STATUS_CONNECTION_INVALID;
	if (!mr || (Flags & ~NDK_FR_FLAGS) || !AdapterPageArray ||
	    !AdapterPageCount || AdapterPageCount > mr->max_pages ||
	    (FBO & PAGE_MASK) || !Length ||
	    Length > (u64)AdapterPageCount * PAGE_SIZE - FBO ||
	    (va & ~PAGE_MASK) != FBO)
		return STATUS_INVALID_PARAMETER;
	if ((Flags & (NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_FR_REMOTE_WRITE)) &&
	    !mr->remote)
		return STATUS_ACCESS_VIOLATION;

	if (Flags & NDK_OP_FLAG_ALLOW_LOCAL_WRITE)
		wr->access |= IB_ACCESS_LOCAL_WRITE;
	if (Flags & NDK_OP_FLAG_ALLOW_REMOTE_READ)
		wr->access |= IB_ACCESS_REMOTE_READ;
	if (Flags & NDK_FR_REMOTE_WRITE)
		wr->access |= IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE;
	if (Flags & NDK_OP_FLAG_RDMA_READ_SINK)
		wr->access |= IB_ACCESS_LOCAL_WRITE |
			     (qp->obj.adapter->info.RdmaTechnology == NdkiWarp ?
			      IB_ACCESS_REMOTE_WRITE : 0);

	/*
	 * The first entry starts at the first byte rather than through an
	 * sg_offset: siw builds its page list from the entries alone.
	 */
	n = DIV_ROUND_UP(FBO + Length, PAGE_SIZE);
	for (i = 0; i < n; i++) {
		sg = &mr->frsg[i];
		sg_unmark_end(sg);
		sg_dma_address(sg) = AdapterPageArray[i];
		sg_dma_len(sg) = PAGE_SIZE;
	}
	sg_dma_len(sg) = FBO + Length - (n - 1) * PAGE_SIZE;
	sg_dma_address(mr->frsg) += FBO;
	sg_dma_len(mr->frsg) -= FBO;
	sg_mark_end(sg);
	if (ib_map_mr_sg(mr->ibmr, mr->frsg, n, NULL, PAGE_SIZE) != n)
		return STATUS_INVALID_PARAMETER;
	mr->ibmr->iova = va;
	/*
	 * The key stays the one NdkInitializeFastRegisterMr gave: Windows
	 * consumers (Microsoft's RdmaSample among them) take the remote
	 * token once after initialization and use it for every later
	 * registration of the MR. Invalidation still closes it in between.
	 */
	wr->mr = mr->ibmr;
	wr->key = mr->ibmr->rkey;
	return STATUS_SUCCESS;
}

static NTSTATUS ndk_fast_register(NDK_QP *pNdkQp, PVOID RequestContext,
				  NDK_MR *pMr, ULONG AdapterPageCount,
				  const NDK_LOGICAL_ADDRESS *AdapterPageArray,
				  ULONG FBO, SIZE_T Length,
				  PVOID BaseVirtualAddress, ULONG Flags)
{
	struct ndk_qp *qp = to_ndk_qp(pNdkQp);
	struct ib_reg_wr wr = {
		.wr = { .wr_id = (uintptr_t)RequestContext,
			.opcode = IB_WR_REG_MR },
	};
	NTSTATUS status;

	status = ndk_fast_register_wr(qp, &wr, pMr, AdapterPageCount,
				      AdapterPageArray, FBO, Length,
				      (uintptr_t)BaseVirtualAddress, Flags);
	return ndk_qp_post_checked(qp, &wr.wr, Flags,
				   NdkOperationTypeFastRegister, status);
}

static NTSTATUS ndk_invalidate(NDK_QP *pNdkQp, PVOID RequestContext,
			       NDK_OBJECT_HEADER *pNdkMrOrMw, ULONG Flags)
{
	struct ndk_qp *qp = to_ndk_qp(pNdkQp);
	struct ndk_mr *mr = ndk_qp_fast_mr(qp, pNdkMrOrMw);
	struct ndk_mw *mw = ndk_mw_of(pNdkMrOrMw, container_of(qp->obj.parent,
							       struct ndk_pd,
							       obj));
	struct ib_send_wr wr = {
		.wr_id = (uintptr_t)RequestContext,
		.opcode = IB_WR_LOCAL_INV,
	};
	NTSTATUS status = STATUS_SUCCESS;

	if (!READ_ONCE(qp->connected))
		status = STATUS_CONNECTION_INVALID;
	else if ((!mr && !mw) || (Flags & ~(NDK_OP_FLAG_SILENT_SUCCESS |
					    NDK_OP_FLAG_READ_FENCE |
					    NDK_OP_FLAG_DEFER)))
		status = STATUS_INVALID_PARAMETER;
	else
		wr.ex.invalidate_rkey = mr ? mr->ibmr->rkey : mw->ibmr->rkey;
	return ndk_qp_post_checked(qp, &wr, Flags, NdkOperationTypeInvalidate,
				   status);
}

#define NDK_RDMA_FLAGS	(NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE | \
			 NDK_OP_FLAG_DEFER)

static NTSTATUS ndk_read(NDK_QP *pNdkQp, PVOID RequestContext,
			 const NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress,
			 UINT32 RemoteToken, ULONG Flags)
{
	struct ndk_qp *qp = to_ndk_qp(pNdkQp);
	const NDK_ADAPTER_INFO *info = &qp->obj.adapter->info;
	struct ib_rdma_wr wr = {
		.wr = { .next = NULL, .wr_id = (uintptr_t)RequestContext,
			.sg_list = NULL, .num_sge = 0,
			.opcode = IB_WR_RDMA_READ, .send_flags = 0,
			.ex.invalidate_rkey = 0 },
		.remote_addr = RemoteAddress,
		.rkey = RemoteToken,
	};
	ULONG allowed = NDK_RDMA_FLAGS;

	if (info->AdapterFlags &
	    NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED)
		allowed |= NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE;
	/*
	 * The sink to invalidate is the region of the first SGE; without
	 * one the flag is refused like any other it cannot take.
	 */
	if (!nSge || !pSgl)
		allowed &= ~NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE;
	if (Flags & allowed & NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE) {
		wr.wr.opcode = IB_WR_RDMA_READ_WITH_INV;
		wr.wr.ex.invalidate_rkey = pSgl[0].MemoryRegionToken;
	}
	/*
	 * Reads are answered in order, and placed in order: a fence before
	 * a read orders nothing, and siw refuses a fenced read (at once, or
	 * when it comes to send it, dropping the connection).
	 */
	return ndk_qp_post(qp, &wr.wr, NdkOperationTypeRead, pSgl, nSge,
			   Flags & ~NDK_OP_FLAG_READ_FENCE, allowed,
			   min(qp->max_isge, info->MaxReadRequestSge));
}

static NTSTATUS ndk_write(NDK_QP *pNdkQp, PVOID RequestContext,
			  const NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress,
			  UINT32 RemoteToken, ULONG Flags)
{
	struct ndk_qp *qp = to_ndk_qp(pNdkQp);
	struct ib_rdma_wr wr = {
		.wr = { .next = NULL, .wr_id = (uintptr_t)RequestContext,
			.sg_list = NULL, .num_sge = 0,
			.opcode = IB_WR_RDMA_WRITE, .send_flags = 0,
			.ex.imm_data = 0 },
		.remote_addr = RemoteAddress,
		.rkey = RemoteToken,
	};

	return ndk_qp_post(qp, &wr.wr, NdkOperationTypeWrite, pSgl, nSge, Flags,
			   NDK_RDMA_FLAGS | NDK_OP_FLAG_INLINE, qp->max_isge);
}

const NDK_QP_DISPATCH ndk_qp_dispatch = {
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
