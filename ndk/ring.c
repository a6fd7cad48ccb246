// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The work-request ring of a QP's or SRQ's queue, and the table through
 * which a polled completion finds the ring's owner. The poster (qp.c,
 * srq.c) and the poller (cq.c) use it; its fast-path helpers are inline
 * in ring.h. Calls nothing of ndk but the failure injection.
 */
#include "ndk_priv.h"

/*
 * The QPs and SRQs whose requests may still sit in a CQ, by owner id.
 * Polling looks up the owner a wr_id names here (under rcu_read_lock()),
 * never through wc->qp: once the consumer has closed a QP it is
 * destroyed, and completions of it still in a CQ then find nothing and
 * are dropped, much as mlx5 cleans a destroyed kernel QP's completions
 * out of its CQ. Owners are freed only after a grace period.
 *
 * An owner's index is its owner_id, handed out in turn over all that a
 * wr_id has room for: a live owner's id is never handed out again, and a
 * closed one's only after all the others. A result left in a CQ after
 * its owner closed meets a new owner under its id only if 2^30 QPs and
 * SRQs were created meanwhile; the poller then drops it if that owner
 * is of the other type (cq.c), and only a QP's result meeting a new QP
 * (or an SRQ's an SRQ) may pass for a request of the new owner's.
 */
DEFINE_XARRAY_ALLOC1(ndk_wr_owners);

/* Where xa_alloc_cyclic() looks for the next owner id; under the xa_lock. */
static u32 ndk_wr_owner_next;

/**
 * ndk_wr_owner_add() - let completions of @obj's queues find it
 * @obj: a QP or an SRQ, being created; sets its owner_id, which its
 *	rings' tags then name (ndk_wr_tag())
 *
 * Process context.
 *
 * Return: 0 or a negative errno (-EBUSY with 2^30 - 1 owners alive).
 */
int ndk_wr_owner_add(struct ndk_obj *obj)
{
	int err;

	err = NDK_FI_ERR(xa_alloc_cyclic(&ndk_wr_owners, &obj->owner_id, obj,
					 XA_LIMIT(1, NDK_WR_ID_MASK),
					 &ndk_wr_owner_next, GFP_KERNEL));
	/* 1: the ids came round, which is no failure. */
	return err < 0 ? err : 0;
}

/**
 * ndk_wr_owner_del() - completions of @obj's queues are dropped from now
 * @obj: a QP or an SRQ, before its verbs object is destroyed
 */
void ndk_wr_owner_del(struct ndk_obj *obj)
{
	xa_cmpxchg(&ndk_wr_owners, obj->owner_id, obj, NULL, 0);
}

/**
 * ndk_wr_owner_set_next() - make the ids come round to @id
 * @id: an owner id, 1 up to NDK_WR_ID_MASK
 *
 * For the ndk_srq suite, as if that many QPs and SRQs had come and gone:
 * the next one created takes @id, or the next id after it that no live
 * owner holds.
 */
void ndk_wr_owner_set_next(u32 id)
{
	xa_lock(&ndk_wr_owners);
	ndk_wr_owner_next = id;
	xa_unlock(&ndk_wr_owners);
}
EXPORT_SYMBOL_NDK_TEST(ndk_wr_owner_set_next);

/**
 * ndk_ring_init() - allocate the slots of a work queue
 * @ring: the ring
 * @depth: how many requests the queue holds
 *
 * Twice as many slots as requests, so that the slot of the next sequence
 * number is almost always free: only a request that stays while those
 * behind it come and go (a read that siw completes late) keeps it, and
 * the poster then takes the next free one, which is near.
 *
 * One allocation per ring, NDK_RING_SLOT_BYTES per slot: the contexts,
 * the sequence numbers, the types and the states, in that order, so that
 * each array is aligned for its entries. The slot count is a power of
 * two, so kmalloc's size class holds 16 bytes per slot: 2 of slack.
 *
 * Return: 0 or -ENOMEM.
 */
int ndk_ring_init(struct ndk_wr_ring *ring, u32 depth)
{
	u32 n = roundup_pow_of_two(2 * max(depth, 1U));

	ring->ctx = NDK_FI_NULL(kvmalloc_array(n, NDK_RING_SLOT_BYTES,
					       GFP_KERNEL));
	if (!ring->ctx)
		return -ENOMEM;
	ring->seq = (u32 *)(ring->ctx + n);
	ring->type = (u8 *)(ring->seq + n);
	ring->state = ring->type + n;
	/* A slot's context is read only while the slot is taken. */
	memset(ring->seq, 0, n * (NDK_RING_SLOT_BYTES - sizeof(void *)));
	ring->mask = n - 1;
	ring->depth = depth;
	return 0;
}

/**
 * ndk_ring_free() - free the slots ndk_ring_init() allocated
 * @ring: the ring, allocated or not
 */
void ndk_ring_free(struct ndk_wr_ring *ring)
{
	kvfree(ring->ctx);
}
