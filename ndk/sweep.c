// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The sweep: every request a consumer posted gets exactly one result,
 * whatever its device does once the QP has failed or is closed.
 *
 * A device reports the requests of a QP moved to the error state as
 * flushed, but not every driver does so for all of them (siw loses the
 * requests queued behind one in progress when its connection closes).
 * So once the device has had its chance, ndk reports what is still
 * outstanding itself: ndk_qp_set_error() queues the QP's queues here
 * ndk_sweep_ms after the error move, and closing the QP queues them at
 * once, since a destroyed verbs QP reports nothing more. The poller of
 * the queue's CQ then reports each request that is still in its ring as
 * STATUS_CANCELLED, in the order it was posted, at a poll that finds
 * the device's CQ empty, after the results the device still had: what
 * the device did report comes first.
 * A result the device reports later finds the request gone from its
 * slot (ndk_wc_to_result() checks the slot's sequence number) and is
 * dropped.
 *
 * A queue on a sweep list holds a reference on its QP, which stays in
 * ndk_wr_owners, with its rings and QPContext, until the last of its
 * queues is swept, or dropped with the CQ.
 *
 * The same poll, one that finds the device's CQ empty, lets a closed QP
 * on an SRQ go once the device has completed what it took (qp_create.c).
 */
#include "ndk_priv.h"
#include "sweep.h"

/*
 * A device flushes a failed QP's requests within milliseconds, rxe and
 * siw under TCG included; what it has not reported after this long it
 * never will.
 */
unsigned int ndk_sweep_ms = 1000;
module_param_named(sweep_ms, ndk_sweep_ms, uint, 0644);
MODULE_PARM_DESC(sweep_ms, "ms a failed QP's device has to report its requests before ndk reports the rest as cancelled (default 1000)");

/**
 * ndk_sweep_set_ms() - set sweep_ms, as the module parameter would
 * @ms: the new value
 *
 * Return: the old value.
 */
unsigned int ndk_sweep_set_ms(unsigned int ms)
{
	return xchg(&ndk_sweep_ms, ms);
}
EXPORT_SYMBOL_NDK_TEST(ndk_sweep_set_ms);

/* The QP whose queue @ring is. */
static struct ndk_qp *ndk_sweep_qp(struct ndk_wr_ring *ring)
{
	if (ring->tag >> NDK_WR_KIND_SHIFT == NDK_WR_SQ)
		return container_of(ring, struct ndk_qp, sq);
	return container_of(ring, struct ndk_qp, rq);
}

/**
 * ndk_sweep_put() - drop a reference on a QP that may outlive its close
 * @qp: the QP; its own reference is dropped by its free operation
 *
 * Any context. The last reference releases the QP on ndk_wq.
 */
void ndk_sweep_put(struct ndk_qp *qp)
{
	if (atomic_dec_and_test(&qp->sweep_refs))
		queue_work(ndk_wq, &qp->release_work);
}

/*
 * The oldest request of @ring from sequence number @from on, if it is
 * older than one turn of the ring before @end, the head; else that turn.
 * Requests leave their queue in order but for reads that complete after
 * the requests behind them (siw), which can hold a slot for many turns
 * (ring.h). A scan of every slot: only for a cursor more than a turn
 * behind.
 */
static u32 ndk_sweep_oldest(const struct ndk_wr_ring *ring, u32 from,
			    u32 end)
{
	u32 oldest = end - (ring->mask + 1), i, seq;

	for (i = 0; i <= ring->mask; i++) {
		/* Pairs with the poster's release: the slot is filled. */
		if (smp_load_acquire(&ring->state[i]) == NDK_SLOT_FREE)
			continue;
		seq = ring->seq[i];
		if ((s32)(seq - oldest) < 0 && (s32)(seq - from) >= 0)
			oldest = seq;
	}
	return oldest;
}

/**
 * ndk_sweep_add() - let @cq's poller report what @ring still holds
 * @cq: the CQ of @ring's completions
 * @qp: the QP of @ring
 * @ring: its send or receive queue, whose device is done with it
 *
 * Any context. The caller schedules a notification of @cq afterwards,
 * for a consumer that waits for one.
 *
 * Return: true if @ring was added, false if it was queued already.
 */
bool ndk_sweep_add(struct ndk_cq *cq, struct ndk_qp *qp,
		   struct ndk_wr_ring *ring)
{
	unsigned long flags;
	bool added = false;
	u32 end;

	spin_lock_irqsave(&cq->sweep_lock, flags);
	if (list_empty(&ring->sweep)) {
		atomic_inc(&qp->sweep_refs);
		end = READ_ONCE(ring->head);
		ring->sweep_next = ndk_sweep_oldest(ring, end - S32_MAX, end);
		list_add_tail(&ring->sweep, &cq->sweeps);
		WRITE_ONCE(cq->sweep_due, true);
		added = true;
	}
	spin_unlock_irqrestore(&cq->sweep_lock, flags);
	return added;
}

/*
 * Report the requests @ring still holds into @results from entry @done
 * on, up to @n in all; the poller owns the ring. Return the new @done;
 * @ring is finished when its cursor reaches the head.
 */
static ULONG ndk_sweep_ring(struct ndk_wr_ring *ring, void *results,
			    ULONG done, ULONG n, bool ex)
{
	size_t size = ex ? sizeof(NDK_RESULT_EX) : sizeof(NDK_RESULT);
	struct ndk_qp *qp = ndk_sweep_qp(ring);
	u32 end = READ_ONCE(ring->head);
	NDK_RESULT_EX *rx;
	u32 seq, slot;
	void *ctx;
	u8 state, type;

	/* The head may step back past the cursor (ndk_qp_post_refused()). */
	for (; (s32)(end - ring->sweep_next) > 0 && done < n;
	     ring->sweep_next++) {
		/* More than a turn behind: only a request left there. */
		if (unlikely(end - ring->sweep_next > ring->mask + 1))
			ring->sweep_next = ndk_sweep_oldest(ring,
							    ring->sweep_next,
							    end);
		seq = ring->sweep_next;
		slot = seq & ring->mask;
		/* Pairs with the poster's store: the slot is filled. */
		state = smp_load_acquire(&ring->state[slot]);
		if (state == NDK_SLOT_FREE || ring->seq[slot] != seq)
			continue;
		ctx = ring->ctx[slot];
		type = ring->type[slot];
		/*
		 * Fully ordered, and so a release that pairs with the
		 * poster's check that the slot is free; and a request the
		 * device refuses is the poster's to take back until then.
		 */
		if (cmpxchg(&ring->state[slot], state, NDK_SLOT_FREE) != state)
			continue;
		rx = results + done * size;
		rx->Status = STATUS_CANCELLED;
		rx->BytesTransferred = 0;
		rx->QPContext = qp->context;
		rx->RequestContext = ctx;
		if (ex) {
			rx->Type = type;
			rx->ProviderErrorCode = 0;
			rx->TypeSpecificCompletionOutput = 0;
		}
		WRITE_ONCE(ring->retired, ring->retired + 1);
		done++;
	}
	return done;
}

/**
 * ndk_sweep_poll() - the results of @cq's swept queues
 * @cq: the CQ, whose device reported nothing just now
 * @results: the consumer's NDK_RESULT_EX array if @ex, else NDK_RESULT
 * @n: its length
 * @ex: which of the two
 *
 * Called by the poller, which the consumer serializes.
 *
 * Return: how many results were filled.
 */
ULONG ndk_sweep_poll(struct ndk_cq *cq, void *results, ULONG n, bool ex)
{
	struct ndk_wr_ring *ring, *next;
	struct ndk_qp *qp, *nqp;
	unsigned long flags;
	ULONG done = 0;

	spin_lock_irqsave(&cq->sweep_lock, flags);
	/* Asked for results, the device had none: retiring QPs may go. */
	if (n) {
		list_for_each_entry_safe(qp, nqp, &cq->retires,
					 retire_cq_node) {
			list_del_init(&qp->retire_cq_node);
			WRITE_ONCE(qp->retire_polled, true);
			ndk_qp_retire_kick(qp);
		}
	}
	list_for_each_entry_safe(ring, next, &cq->sweeps, sweep) {
		done = ndk_sweep_ring(ring, results, done, n, ex);
		if ((s32)(READ_ONCE(ring->head) - ring->sweep_next) > 0)
			break;
		list_del_init(&ring->sweep);
		qp = ndk_sweep_qp(ring);
		/* A closed QP waits for its queues to be done. */
		ndk_qp_retire_kick(qp);
		/* Not touched again: the release may free it from now on. */
		ndk_sweep_put(qp);
	}
	if (list_empty(&cq->sweeps) && list_empty(&cq->retires))
		WRITE_ONCE(cq->sweep_due, false);
	spin_unlock_irqrestore(&cq->sweep_lock, flags);
	ndk_stat_add_to(cq->stats, NDK_STAT_CQ_SWEPT, done);
	ndk_stat_add_to(cq->stats, NDK_STAT_COMPLETED, done);
	return done;
}

/**
 * ndk_sweep_drop() - @cq is being destroyed: nobody polls its queues
 * @cq: the CQ
 *
 * Process context.
 */
void ndk_sweep_drop(struct ndk_cq *cq)
{
	struct ndk_wr_ring *ring;

	spin_lock_irq(&cq->sweep_lock);
	while ((ring = list_first_entry_or_null(&cq->sweeps,
						struct ndk_wr_ring, sweep))) {
		list_del_init(&ring->sweep);
		spin_unlock_irq(&cq->sweep_lock);
		ndk_sweep_put(ndk_sweep_qp(ring));
		spin_lock_irq(&cq->sweep_lock);
	}
	WRITE_ONCE(cq->sweep_due, false);
	spin_unlock_irq(&cq->sweep_lock);
}
